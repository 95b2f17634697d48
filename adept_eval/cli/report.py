"""``adept-eval report``: one lm-eval run's results as adept-eval tables."""

from __future__ import annotations

from rich import box
from rich.table import Table

from adept_eval.cli.common import SYNTHETIC_NOTE, console, print_table
from adept_eval.results.formatting import interval, lit, number
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
        note = SYNTHETIC_NOTE.replace("ADEPT", SUITES[name].title)  # the suite it stands in for
        synthetic = f" [red]{note}[/red]" if s.synthetic else ""
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
    """The run's VStyle tasks: judge score, its interval, n judged and failed; then each
    language's overall score (VStyle's weighting) from the logged samples, or from lm-eval's
    group row without an interval when the run logged none.

    Args:
        run: the run.
        tasks: its VStyle tasks with a score.

    Returns:
        The table.
    """
    from adept_eval.corpora.vstyle import CATEGORIES

    key = VSTYLE.key
    table = Table(title=lit(f"{run.system}: VStyle, judge {run.judge()}"), box=box.SIMPLE_HEAD)
    for col in ("task", "score", "95% CI", "n", "failed"):
        table.add_column(col, justify="left" if col == "task" else "right")
    results = run.results["results"]
    for task in tasks:
        result = results[task]
        table.add_row(task, number(result.get(key("score")), "{:.2f}"),
                      interval(result.get(key("score_ci_low")), result.get(key("score_ci_high"))),
                      number(result.get(key("n")), "{:.0f}"),
                      number(result.get(key("n_failed")), "{:.0f}"))
    for language, overall in _overall(run, tasks).items():
        notes = [] if overall["categories"] == len(CATEGORIES) else \
            [f"{overall['categories']} of {len(CATEGORIES)} categories"]
        if overall.get("unjudged"):
            notes.append("none judged in " + ", ".join(overall["unjudged"]))
        label = "; ".join([f"overall ({language}", *notes]) + ")"
        table.add_row(label, number(overall["score"], "{:.2f}"),
                      interval(overall["ci_low"], overall["ci_high"]),
                      number(overall["n"], "{:.0f}"), number(overall["failed"], "{:.0f}"),
                      end_section=False)
    return table


def _overall(run, tasks: list[str]) -> dict[str, dict]:
    """Each language's overall score: from the logged samples with its interval
    (``report.vstyle_overall``), else lm-eval's ``vstyle_<language>`` group row."""
    from adept_eval.results.compare import judged_items
    from adept_eval.results.report import vstyle_overall

    if run.samples and all(t in run.samples for t in tasks):
        return vstyle_overall(judged_items(run).values())
    key, out = VSTYLE.key, {}
    for language in sorted({t.removeprefix("vstyle_").split("_", 1)[0] for t in tasks}):
        ours = [t for t in tasks if t.startswith(f"vstyle_{language}_")]
        group = run.results["results"].get(f"vstyle_{language}", {})
        out[language] = {"score": group.get(key("score")), "ci_low": None, "ci_high": None,
                         "unjudged": [t.removeprefix(f"vstyle_{language}_") for t in ours
                                      if not run.results["results"][t].get(key("n"))],
                         "n": sum(run.results["results"][t].get(key("n")) or 0 for t in ours),
                         "failed": sum(run.results["results"][t].get(key("n_failed")) or 0
                                       for t in ours),
                         "categories": len(ours)}
    return out


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
