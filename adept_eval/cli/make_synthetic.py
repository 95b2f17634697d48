"""``adept-eval make-synthetic``: a synthetic ADEPT for trying the pipeline offline."""

from __future__ import annotations

from pathlib import Path

from adept_eval.cli.common import console
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("make-synthetic", help="write a synthetic ADEPT (folder or .zip), or "
                       "with --vstyle a synthetic VStyle, for trying the pipeline offline; not "
                       "the real corpus")
    p.add_argument("output")
    p.add_argument("--vstyle", action="store_true",
                   help="write a synthetic VStyle folder (en/metadata.jsonl, en/wav/, and a "
                   "stand-in system's answers/) instead of ADEPT")
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
    if args.vstyle:
        return _vstyle(out)
    check_replaceable(out)
    if out.suffix == ".zip":
        build_zip(out)
    else:
        build_corpus(out, wrap=False)
    console.print(f"synthetic ADEPT written to {lit(out)} (for testing the pipeline only; it is "
                  "not the real corpus)")
    return 0


def _vstyle(out: Path) -> int:
    """Write a synthetic VStyle and say how to evaluate its stand-in answers.

    Raises:
        UserError: ``out`` exists and is not an earlier synthetic VStyle.
    """
    from adept_eval.corpora.synthetic_vstyle import ANSWERS, build_vstyle, records

    build_vstyle(out)
    console.print(f"synthetic VStyle written to {lit(out)}: {len(records())} spoken "
                  f"instructions in {lit(out / 'en')} (metadata.jsonl, wav/) and a stand-in "
                  f"system's answers in {lit(out / ANSWERS)} (for testing the pipeline only; "
                  "it is not VStyle)")
    console.print(f"evaluate them: lm_eval --model audio-dir --model_args path={lit(out / ANSWERS)}"
                  f" --tasks vstyle_en --metadata vstyle_dir={lit(out)} "
                  "judge_base_url=<your judge server> judge_model=<its audio model>",
                  highlight=False)
    return 0
