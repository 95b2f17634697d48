"""The results layer: reading finished runs (``runs``), reports (``report``), paired
comparisons (``compare``), leaderboards (``leaderboard``, with a board per suite in ``board``
and ``suite_boards``), judge-agreement score files (``scores``), publishing to the Hugging Face
Hub (``publish``) and the tables' formatting helpers (``formatting``). Reading a run never
imports publishing, option routing, the judge or the LLM client."""
