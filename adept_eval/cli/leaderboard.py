"""``adept-eval leaderboard``: rank many runs among equals and print the tables."""

from __future__ import annotations

from rich import box
from rich.table import Table

from adept_eval.cli.common import PLOT_EXTRA, console
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("leaderboard", help="build a leaderboard from many runs (folders or a "
                       "Hub results dataset): Markdown, CSV, parquet, PNG; optionally push it")
    p.add_argument("sources", nargs="*", help="folders or results files")
    p.add_argument("--from-hub", help="a results dataset made by `adept-eval publish`")
    p.add_argument("-o", "--output", default="leaderboard", metavar="FOLDER",
                   help="folder to write leaderboard.md, .csv, .parquet and .png into "
                   "(default: leaderboard); nothing leaves the machine without --push")
    p.add_argument("--push", help="dataset repo to push the leaderboard to")
    p.add_argument("--sort", choices=["accuracy", "prosody_distance"], default="accuracy",
                   help="rank ADEPT rows by recognition accuracy (higher first, the default) "
                   "or by the graded prosody distance (lower first)")
    p.set_defaults(func=run)


def _print_tie_method(method: str | None, systems: int) -> None:
    """What a section's rank ranges mean and how its pairwise tests were made."""
    if method and systems > 1:
        console.print(f"rank range: the ranks a system could hold given the paired tests "
                      f"between these {systems} systems ({lit(method)}): a system's range spans "
                      "every system it is not significantly different from", highlight=False)


def run(args) -> int:
    """Build the leaderboard, write its files and print one table per section.

    Args:
        args: the parsed command line (``sources``, ``from_hub``, ``output``, ``push``,
            ``sort``).

    Returns:
        0.

    Raises:
        PublishError: no runs, a source without one, a damaged results file, or a Hub refusal.
    """
    from adept_eval.results.leaderboard import heading, leaderboard, sections

    rows, paths = leaderboard(args.sources, args.output, hub_repo=args.from_hub,
                              push_repo=args.push, sort=args.sort)
    f = lambda x, s="{:.3f}": "-" if x is None else s.format(x)  # noqa: E731
    # every column folds (wraps inside a word) rather than cut a name or figure with "..."
    # one table per corpus and scorer: rows are ranked only among equals
    ranked, apart = sections(rows, "adept")
    for members in ranked:
        table = Table(title=lit(heading(members, "adept")), box=box.SIMPLE_HEAD, padding=(0, 1),
                      pad_edge=False)
        # at least the header's width: "system" was folded into "syste" / "m" for short names
        name_width = max(len("system"), min(24, max(len(r.system) for r in members)))
        for col, width in (("rank", 4), ("rank range", 5), ("system", name_width), ("acc", 5),
                           ("95% CI", 9),
                           ("chance", 6), ("n", 3), ("failed", 6), ("distance", 8),
                           ("95% CI ", 9), ("graded n", 8)):
            table.add_column(col, justify="left" if col == "system" else "right",
                             overflow="fold", min_width=width)
        for r in members:
            table.add_row(str(r.adept_rank), str(r.adept_rank_range or "-"), lit(r.system),
                          f(r.adept_acc),
                          f"{f(r.adept_ci_low, '{:.2f}')}-{f(r.adept_ci_high, '{:.2f}')}",
                          f(r.adept_chance, "{:.2f}"), str(r.adept_n), str(r.adept_failed),
                          f(r.adept_prosody_distance),
                          f"{f(r.adept_prosody_distance_ci_low, '{:.2f}')}-"
                          f"{f(r.adept_prosody_distance_ci_high, '{:.2f}')}",
                          f(r.adept_graded_n, "{}"))
        console.print(table)
        _print_tie_method(members[0].adept_tie_method, len(members))
    if apart:
        table = Table(title="ADEPT runs not ranked", box=box.SIMPLE_HEAD)
        for col in ("system", "listener", "accuracy", "n", "why not ranked"):
            table.add_column(col, justify="right" if col in ("accuracy", "n") else "left",
                             overflow="fold")
        for r in apart:
            table.add_row(lit(r.system), lit(r.listener), f(r.adept_acc), str(r.adept_n),
                          lit(r.adept_unranked))
        console.print(table)
    ranked, apart = sections(rows, "vstyle")
    for members in ranked:
        table = Table(title=lit(heading(members, "vstyle")), box=box.SIMPLE_HEAD)
        for col in ("rank", "rank range", "system", "overall", "n", "failure rate"):
            table.add_column(col, justify="left" if col == "system" else "right", overflow="fold",
                             min_width=5 if col == "rank range" else None)
        for r in members:
            table.add_row(str(r.vstyle_rank), str(r.vstyle_rank_range or "-"), lit(r.system),
                          f(r.vstyle_score, "{:.2f}"), str(r.vstyle_n),
                          f(r.vstyle_failure_rate, "{:.1%}"))
        console.print(table)
        _print_tie_method(members[0].vstyle_tie_method, len(members))
    if apart:
        table = Table(title="VStyle runs not ranked", box=box.SIMPLE_HEAD)
        for col in ("system", "judge", "overall", "n", "why not ranked"):
            table.add_column(col, overflow="fold")
        for r in apart:
            table.add_row(lit(r.system), lit(r.judge), f(r.vstyle_score, "{:.2f}"),
                          str(r.vstyle_n), lit(r.vstyle_unranked))
        console.print(table)
    console.print("written: " + ", ".join(lit(p) for p in paths))
    if not any(p.suffix == ".png" for p in paths):
        console.print(f"[yellow]no chart: {lit(PLOT_EXTRA)} for matplotlib[/yellow]")
    if args.push:
        console.print(f"pushed to {lit(args.push)}")
    return 0
