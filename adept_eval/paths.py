"""Where adept-eval keeps its files: the cache folder every layer writes under.

Standard library and ``huggingface_hub``'s constants only, so the lowest layers (features,
systems' samples, the LLM client's cache) can find it without importing the corpus code.
"""

from __future__ import annotations

import os
from pathlib import Path

from adept_eval.errors import CorpusError


def cache_home() -> Path:
    """adept-eval's cache folder: ``ADEPT_EVAL_HOME``, else ``$HF_HOME/adept_eval``.

    A variable naming a regular file (or a path through one) is one ``CorpusError`` naming the
    variable: otherwise the first folder made under it is a NotADirectoryError traceback from
    wherever the cache is first written (the corpus's verified stamp, a system's samples)."""
    env = os.environ.get("ADEPT_EVAL_HOME")
    if env:
        return _usable_home(Path(env).expanduser(), "ADEPT_EVAL_HOME", env)
    from huggingface_hub import constants

    home = Path(constants.HF_HOME).expanduser()
    return _usable_home(home, "HF_HOME", str(home)) / "adept_eval"


def _usable_home(path: Path, variable: str, value: str) -> Path:
    """``path`` itself, if it and its nearest existing ancestor can hold folders."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                where = "" if p == path else f" ({p} is a file)"
                raise CorpusError(f"{variable}={value}: not a folder{where}; adept-eval keeps "
                                  f"its cache under it: point {variable} at a folder"
                                  + ("" if variable == "ADEPT_EVAL_HOME"
                                     else " (or set ADEPT_EVAL_HOME to one)"))
            break
    return path
