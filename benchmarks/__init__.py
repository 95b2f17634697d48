"""The maintainers' benchmarks: scripts run from a clone (``python benchmarks/NAME.py``) and the
cross-engine validation bench (``benchmarks.validation``). Not part of the installed package."""
