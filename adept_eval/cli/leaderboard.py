"""``adept-eval leaderboard``: rank many runs among equals and print the tables."""

from __future__ import annotations

from adept_eval.cli.common import PLOT_EXTRA, console, print_table
from adept_eval.results.formatting import lit
from adept_eval.suites import sort_choices


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
    p.add_argument("--sort", choices=sort_choices(), default=sort_choices()[0],
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
    from adept_eval.results.leaderboard import boards, leaderboard, sections

    rows, paths = leaderboard(args.sources, args.output, hub_repo=args.from_hub,
                              push_repo=args.push, sort=args.sort)
    # one table per corpus and scorer: rows are ranked only among equals
    for board in boards():
        ranked, apart = sections(rows, board.name)
        for members in ranked:
            print_table(board.ranked_table(members))
            _print_tie_method(members[0].figure(board.name, "tie_method"), len(members))
        if apart:
            print_table(board.apart_table(apart))
    console.print("written: " + ", ".join(lit(p) for p in paths))
    if not any(p.suffix == ".png" for p in paths):
        console.print(f"[yellow]no chart: {lit(PLOT_EXTRA)} for matplotlib[/yellow]")
    if args.push:
        console.print(f"pushed to {lit(args.push)}")
    return 0
