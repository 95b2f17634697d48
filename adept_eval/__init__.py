"""adept-eval: prosody-transfer (ADEPT) and spoken-dialogue (speech judge) evaluation for
EleutherAI's lm-evaluation-harness."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("adept-eval")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
