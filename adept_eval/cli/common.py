"""What the ``adept-eval`` commands share: where they print, how they load the corpus, and
how they read lm-eval-style option lists (``--tasks a,b``, ``--metadata k=v,k2=v2``)."""

from __future__ import annotations

import ast
import json

from rich.console import Console
from rich.table import Table

from adept_eval.results.formatting import print_whole

console = Console(soft_wrap=True)  # messages stay greppable; tables still fit the width
err_console = Console(stderr=True, soft_wrap=True)

SYNTHETIC_NOTE = "SYNTHETIC stand-in corpus: not ADEPT results"
PLOT_EXTRA = "pip install 'adept-eval[plot]'"


def load_corpus_of(args):
    """The corpus a command's ``--corpus``, ``--no-download`` and ``-q`` options name.

    Args:
        args: the parsed command line (with the shared corpus options).

    Returns:
        The loaded ``Corpus``.

    Raises:
        CorpusError: the corpus is missing, incomplete or malformed.
    """
    from adept_eval.corpora.corpus import load_corpus

    return load_corpus(args.corpus, download=not args.no_download, progress=not args.quiet)


def print_table(table: Table) -> None:
    """Print a table whole on the commands' console (``formatting.print_whole``)."""
    print_whole(console, table)


def comma_list(values) -> list[str]:
    """Names given as ``a b``, ``a,b`` or ``a, b`` alike (lm-eval's --tasks takes commas).

    Args:
        values: the option's values (None when it was not given).

    Returns:
        Every non-empty name, in order.
    """
    return [part.strip() for v in values or [] for part in str(v).split(",") if part.strip()]


def key_values(items) -> dict:
    """Options given as ``k=v k2=v2`` (--option) or ``k=v,k2=v2`` or a JSON object (lm-eval's
    --metadata).

    Commas split only outside brackets and quotes, so ``orders=[0,1]`` stays one value; values
    are Python literals where they parse (``3``, ``True``, ``[0, 1]``) and strings otherwise.

    Args:
        items: the option's values (None when it was not given).

    Returns:
        Key -> value, later items overriding earlier ones.

    Raises:
        ValueError: a JSON value that is not an object, or an item without ``=``.
    """
    out: dict = {}
    for item in items or []:
        text = str(item).strip()
        if text.startswith("{"):
            out.update(_json_object(text))
            continue
        for part in split_top_level(text):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"expected key=value, got {part!r}")
            try:
                out[key.strip()] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                out[key.strip()] = value
    return out


def _json_object(text: str) -> dict:
    """A --metadata value given as JSON.

    Raises:
        ValueError: not JSON, or JSON but not an object.
    """
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--metadata: not a valid JSON object ({exc})") from None
    if not isinstance(parsed, dict):
        raise ValueError("--metadata: a JSON value must be an object")
    return parsed


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes, parts stripped, empty ones
    dropped.

    Args:
        text: e.g. ``a=1,b=[0,1],c="x,y"``.

    Returns:
        The parts, e.g. ``["a=1", "b=[0,1]", 'c="x,y"']``.
    """
    parts, buf, depth, quote = [], [], 0, None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[({":
            depth += 1
        elif ch in "])}":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]
