"""``adept-eval judge-agreement``: speech-judge scores against people's."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.table import Table

from adept_eval.cli.common import console, err_console, print_table
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("judge-agreement", help="agreement of speech-judge scores with human "
                       "scores (Spearman, Kendall, quadratic-weighted kappa, exact, within 1)")
    p.add_argument("judge", help="speech_judge result .json, or .csv/.jsonl with id,score")
    p.add_argument("human", help=".csv/.jsonl with id,score[,instruction_type]; raters averaged")
    p.add_argument("-o", "--output", help="also write the figures as JSON")
    p.set_defaults(func=run)


def _agreement_table(result: dict, items: int) -> Table:
    """The agreement figures as a table: overall, then per instruction type.

    Args:
        result: ``judge.agreement.agreement``'s figures.
        items: how many item ids the two files share.

    Returns:
        The table, ready to print.
    """
    table = Table(title=f"Judge vs human scores ({items} items in both files; "
                  f"{result['dropped']} left out for a missing score)", box=box.SIMPLE_HEAD)
    table.add_column("instruction type", overflow="fold")  # never cut a name short
    for col in ("n", "Spearman", "Kendall", "QWK", "exact", "within 1"):
        table.add_column(col, justify="right")
    rows = [("all", result["overall"])] + list(result.get("by_type", {}).items())
    for name, st in rows:
        table.add_row(lit(name or "-"), str(st["n"]), *(f"{st[k]:.3f}" for k in
                      ("spearman", "kendall", "qwk", "exact", "within_1")))
    return table


def run(args) -> int:
    """Print the agreement of a judge's scores with people's, item by item, overall and per
    instruction type; write it as JSON with ``-o``.

    Args:
        args: the parsed command line (``judge``, ``human``, ``output``).

    Returns:
        0, or 2 when the two files share no item id.

    Raises:
        ValueError: a score file is not one (``scores.read_scores`` names file and row).
    """
    from adept_eval.judge.agreement import agreement
    from adept_eval.results.scores import read_scores

    judge_scores = read_scores(Path(args.judge))
    human_scores = read_scores(Path(args.human))
    common = sorted(set(judge_scores) & set(human_scores))
    if not common:
        err_console.print("[red]no item ids in common between the two files[/red]")
        return 2
    result = agreement([judge_scores[k].score for k in common],
                       [human_scores[k].score for k in common],
                       [judge_scores[k].instruction_type or human_scores[k].instruction_type
                        for k in common])
    print_table(_agreement_table(result, len(common)))
    only = len(set(judge_scores) ^ set(human_scores))
    if only:
        console.print(f"{only} ids appear in only one of the files and were not compared")
    if args.output:
        import json

        Path(args.output).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0
