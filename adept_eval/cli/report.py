"""``adept-eval report``: one lm-eval run's results as adept-eval tables."""

from __future__ import annotations

from rich import box
from rich.table import Table

from adept_eval.cli.common import SYNTHETIC_NOTE, console, print_table
from adept_eval.results.formatting import lit
from adept_eval.suites import VSTYLE


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("report", help="print an lm-eval run's results with n, intervals, tests "
                       "against chance and pooled groups")
    p.add_argument("results", help="lm-eval results_*.json, or the --output_path folder "
                   "(the newest run in it by its timestamp)")
    p.add_argument("--run", help="choose a run in the folder: part of its file name or "
                   "timestamp, e.g. flat-tts or 2026-11-22T07")
    p.set_defaults(func=run)


def _identity_lines(run) -> list[str]:
    """What a run was: its scorer, corpus (synthetic or not) and task set, as recorded."""
    from adept_eval.suites import SUITES

    ident = run.identity
    if ident is None:
        return ["[yellow]this run records no adept-eval identity (made before it was "
                "recorded): its corpus and scorer are unknown[/yellow]"]
    lines = []
    for name, s in ident.suites.items():
        corpus = s.corpus.get("sha256", "?")[:16]
        synthetic = f" [red]{SYNTHETIC_NOTE}[/red]" if s.synthetic else ""
        from adept_eval.identity import label

        lines.append(f"{SUITES[name].title}: scorer {lit(label(s.scorer))}; corpus "
                     f"{lit(corpus)}{synthetic}; "
                     f"{len(s.tasks)} tasks ({_completeness(s)}); "
                     f"adept-eval {ident.version}")
    return lines


def _completeness(s) -> str:
    """'complete', or why a run is partial (a task set short of a complete one, or --limit)."""
    from adept_eval.identity import answered

    if s.limited:
        return f"partial: run with --limit, {answered(s.limited)}"
    return "complete" if s.complete else "partial"


def _judged_table(run, tasks: list[str]) -> Table:
    """The run's VStyle tasks: judge score, its interval, n judged and failed.

    Args:
        run: the run.
        tasks: its VStyle tasks with a score.

    Returns:
        The table.
    """
    key = VSTYLE.key
    table = Table(title=lit(f"{run.system}: VStyle, judge {run.judge()}"), box=box.SIMPLE_HEAD)
    for col in ("task", "score", "95% CI", "n", "failed"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task in tasks:
        result = run.results["results"][task]
        ci = (f"{result[key('score_ci_low')]:.2f}-{result[key('score_ci_high')]:.2f}"
              if key("score_ci_low") in result else "-")
        table.add_row(task, f"{result[key('score')]:.2f}", ci, str(result.get(key("n"), "-")),
                      str(result.get(key("n_failed"), "-")))
    return table


def _print_adept(run, res: dict) -> None:
    """The run's ADEPT tables: per task, pooled groups, subcategories and graded figures."""
    from adept_eval.results.report import adept_table, graded_table, group_table, \
        subcategory_table

    print_table(adept_table(res, title=lit(f"{run.system}: ADEPT, {run.listener()} "
                                              "listener")))
    groups = group_table(res, run.samples, people=run.people)
    if groups is not None:
        print_table(groups)
    subcategories = subcategory_table(run.samples or {})
    if subcategories is not None:
        print_table(subcategories)
    graded = graded_table(res, run.samples)
    if graded is not None:
        print_table(graded)
        if not run.samples:
            console.print("[yellow]the figures pooled over tasks need the run's logged "
                          "samples (lm_eval --log_samples)[/yellow]")


def run(args) -> int:
    """lm-eval results as adept-eval tables: n, intervals, tests against chance, pooled groups.

    Args:
        args: the parsed command line (``results``, ``run``).

    Returns:
        0.

    Raises:
        PublishError: the results cannot be loaded (``load_run``).
    """
    from adept_eval.results.runs import load_run, samples_mismatch

    run = load_run(args.results, args.run)
    if run.chosen:
        console.print(f"run: {lit(run.chosen)}")
    res = run.results["results"]
    why = samples_mismatch(run, run.task_names())
    if why:  # samples cut short: groups, subcategories and graded figures over a subset, unsaid
        console.print(f"[yellow]warning: {lit(run.results_path)}: {lit(why)}; its figures are "
                      "read from the results alone[/yellow]")
        run.samples = {}
    if run.listener() is not None:
        _print_adept(run, res)
    judged = [t for t in res if t in VSTYLE.tasks and VSTYLE.key("score") in res[t]]
    if judged:
        print_table(_judged_table(run, judged))
    for line in _identity_lines(run):
        console.print(line)
    console.print(f"from {lit(run.results_path)}")
    return 0
