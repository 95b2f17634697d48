"""``adept-eval compare``: paired comparisons of runs, every pair Holm-adjusted."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from adept_eval.cli.common import console, print_table
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("compare", help="is system A better than system B? paired differences "
                       "of ADEPT runs (accuracy and prosody distance) or VStyle runs (judge "
                       "score) with intervals and p-values")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="two or more lm-eval results_*.json or --output_path folders (the newest "
                   "run in each), made with --log_samples")
    p.add_argument("--run", help="choose a run in each folder: part of its file name or timestamp")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    """Paired comparison of runs: every pair, Holm-adjusted, with the direction in words."""
    import json

    from adept_eval.results.compare import compare, render, to_json

    result = compare(args.runs, args.run)
    for named, r in zip(args.runs, result["runs"]):  # a folder of several runs: say which one
        if r["chosen"]:  # (`out/` may hold every system's runs: its newest is another system)
            console.print(f"run for {lit(named)}: {lit(r['chosen'])}")
    for part in render(result):  # per pair: a table per suite, then what it rests on
        print_table(part) if isinstance(part, Table) else console.print(lit(part) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(result), indent=2), encoding="utf-8")
        console.print(f"wrote {lit(args.json)}")
    return 0
