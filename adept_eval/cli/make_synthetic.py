"""``adept-eval make-synthetic``: a synthetic ADEPT for trying the pipeline offline."""

from __future__ import annotations

from pathlib import Path

from adept_eval.cli.common import console
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("make-synthetic", help="write a synthetic ADEPT (folder or .zip) for "
                       "trying the pipeline offline; not the real corpus")
    p.add_argument("output")
    p.set_defaults(func=run)


def run(args) -> int:
    """Write a synthetic stand-in ADEPT (a folder, or a .zip) for trying the pipeline.

    Args:
        args: the parsed command line (``output``).

    Returns:
        0.

    Raises:
        UserError: ``output`` exists and is not an earlier synthetic corpus.
    """
    from adept_eval.corpora.synthetic import build_corpus, build_zip, check_replaceable

    out = Path(args.output)
    check_replaceable(out)
    if out.suffix == ".zip":
        build_zip(out)
    else:
        build_corpus(out, wrap=False)
    console.print(f"synthetic ADEPT written to {lit(out)} (for testing the pipeline only; it is "
                  "not the real corpus)")
    return 0
