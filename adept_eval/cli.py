"""``adept-eval``: prepare the corpus, list what to synthesise, check a system's samples."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from . import __version__, spec
from .corpus import CorpusError, load_corpus
from .zenodo import DownloadError

console = Console(soft_wrap=True)  # messages stay greppable; tables still fit the width
err_console = Console(stderr=True, soft_wrap=True)


def _corpus(args):
    return load_corpus(args.corpus, download=not args.no_download, progress=not args.quiet)


def cmd_prepare(args) -> int:
    corpus = _corpus(args)
    table = Table(title=f"ADEPT: {len(corpus)} recordings, 12 listening tests", box=box.SIMPLE_HEAD)
    table.add_column("task", no_wrap=True, min_width=35)
    for col in ("stimuli", "questions", "choices", "chance"):
        table.add_column(col, justify="right")
    from .questions import build_questions

    tot_rec = tot_q = 0
    for name, t in spec.TASKS.items():
        qs = build_questions(corpus, name)
        n_rec = sum(1 for r in corpus.recordings if r.cls == t.cls.name and r.speaker == t.speaker)
        tot_rec, tot_q = tot_rec + n_rec, tot_q + len(qs)
        table.add_row(name, str(n_rec), str(len(qs)), str(qs[0].n_choices),
                      f"{1 / qs[0].n_choices:.3f}")
    table.add_row("total", str(tot_rec), str(tot_q), "", "", end_section=True)
    console.print(table)
    console.print(f"corpus: {corpus.root}\nsource: {corpus.source}\nsha256: {corpus.fingerprint}")
    return 0


def cmd_manifest(args) -> int:
    from .manifest import build_manifest, write_manifest

    corpus = _corpus(args)
    entries = build_manifest(corpus)
    paths = write_manifest(entries, Path(args.output))
    console.print(f"{len(entries)} stimuli to synthesise; written to "
                  + " and ".join(str(p) for p in paths))
    console.print("Put each sample at <your folder>/<output_path> (wav, flac, mp3 or ogg), then "
                  "run `adept-eval check <your folder>`.")
    return 0


def cmd_check(args) -> int:
    from .manifest import check_folder

    folder = Path(args.folder)
    if not folder.is_dir():
        err_console.print(f"[red]{folder}: no such folder[/red]")
        return 2
    corpus = _corpus(args)
    result = check_folder(corpus, folder, progress=not args.quiet)
    problems = result.problems
    if problems:
        table = Table(title=f"Problems in {folder}")
        table.add_column("severity")
        table.add_column("kind")
        table.add_column("file / problem", overflow="fold")
        shown = problems if args.all or len(problems) <= 40 else problems[:40]
        for p in shown:
            colour = "red" if p.severity == "error" else "yellow"
            table.add_row(f"[{colour}]{p.severity}[/{colour}]", p.kind, p.message)
        console.print(table)
        if len(shown) < len(problems):
            console.print(f"... {len(problems) - len(shown)} more (use --all)")
    n_bad = len(result.bad_stimuli())
    console.print(f"{result.expected - n_bad}/{result.expected} samples usable; "
                  f"{len(result.errors)} errors, {len(result.warnings)} warnings")
    if result.errors or (args.strict and result.warnings):
        return 1
    return 0


def cmd_questions(args) -> int:
    """The listening tests as a plan for a human evaluation (ids the `human` listener reads)."""
    import csv
    import json

    from .questions import LETTERS, all_questions

    corpus = _corpus(args)
    rows = []
    for task, qs in all_questions(corpus).items():
        if args.tasks and task not in args.tasks:
            continue
        for q in qs:
            rows.append({"question_id": q.question_id, "task": task, "question": q.question,
                         "stimuli": " | ".join(q.stimuli),
                         "choices": " | ".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(q.choices)),
                         "answer": q.answer_letter, "target": q.target})
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".jsonl":
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                       encoding="utf-8")
    else:
        with open(out, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    console.print(f"{len(rows)} questions written to {out}")
    return 0


def _scores_table(path: Path, score_key: str = "score") -> dict[str, tuple[float | None, str]]:
    """id -> (score, type) from a speech_judge result JSON (``items``) or CSV/JSONL rows with
    ``id`` (or ``item_id``), ``score`` and optionally ``instruction_type``; several rows with one
    id (several human raters) are averaged."""
    import csv
    import json
    from collections import defaultdict

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        rows = json.loads(text).get("items", [])
    elif path.suffix == ".jsonl":
        rows = [json.loads(x) for x in text.splitlines() if x.strip()]
    else:
        rows = list(csv.DictReader(text.splitlines()))
    acc: dict[str, list] = defaultdict(list)
    types: dict[str, str] = {}
    for i, row in enumerate(rows, 1):
        key = str(row.get("item_id", row.get("id", "")))
        if not key:
            raise ValueError(f"{path}: row {i} has no id/item_id")
        value = row.get(score_key)
        acc[key].append(None if value in (None, "") else float(value))
        types[key] = row.get("instruction_type", types.get(key, "")) or ""
    out = {}
    for key, values in acc.items():
        good = [v for v in values if v is not None]
        out[key] = (sum(good) / len(good) if good else None, types[key])
    return out


def cmd_judge_agreement(args) -> int:
    from .judge.agreement import agreement

    judge_scores = _scores_table(Path(args.judge))
    human_scores = _scores_table(Path(args.human))
    common = sorted(set(judge_scores) & set(human_scores))
    if not common:
        err_console.print("[red]no item ids in common between the two files[/red]")
        return 2
    result = agreement([judge_scores[k][0] for k in common], [human_scores[k][0] for k in common],
                       [judge_scores[k][1] or human_scores[k][1] for k in common])
    table = Table(title=f"Judge vs human scores ({len(common)} items in both files; "
                  f"{result['dropped']} left out for a missing score)", box=box.SIMPLE_HEAD)
    for col in ("instruction type", "n", "Spearman", "Kendall", "QWK", "exact", "within 1"):
        table.add_column(col, justify="left" if col == "instruction type" else "right")
    rows = [("all", result["overall"])] + list(result.get("by_type", {}).items())
    for name, st in rows:
        table.add_row(name or "-", str(st["n"]), *(f"{st[k]:.3f}" for k in
                      ("spearman", "kendall", "qwk", "exact", "within_1")))
    console.print(table)
    only = len(set(judge_scores) ^ set(human_scores))
    if only:
        console.print(f"{only} ids appear in only one of the files and were not compared")
    if args.output:
        import json

        Path(args.output).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


def cmd_ceiling(args) -> int:
    """A listener's accuracy on ADEPT's own natural recordings: the most it can credit a system."""
    import ast

    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from .lm_eval_plugin import register
    from .report import adept_table

    if args.corpus:
        import os

        os.environ["ADEPT_EVAL_CORPUS"] = args.corpus
    options = {}
    for item in args.option or []:
        key, _, value = item.partition("=")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    register()
    res = simple_evaluate(model="adept-natural", tasks=args.tasks,
                          task_manager=TaskManager(metadata={"listener": args.listener, **options}),
                          bootstrap_iters=0, limit=args.limit)
    console.print(adept_table(res["results"], title=f"Ceiling of the {args.listener!r} listener "
                              "(accuracy on ADEPT's natural recordings)"))
    return 0


def cmd_report(args) -> int:
    """lm-eval results as adept-eval tables: n, intervals, tests against chance, pooled groups."""
    from .hub import load_run
    from .report import adept_table, group_table

    run = load_run(args.results)
    res = run.results["results"]
    console.print(adept_table(res, title=f"{run.system}: ADEPT, {run.listener() or '-'} listener"))
    groups = group_table(res)
    if groups is not None:
        console.print(groups)
    vs = [t for t in res if t.startswith("vstyle_") and "score,speech_judge" in res[t]]
    if vs:
        table = Table(title=f"{run.system}: VStyle, judge {run.judge()}", box=box.SIMPLE_HEAD)
        for col in ("task", "score", "95% CI", "n", "failed"):
            table.add_column(col, justify="left" if col == "task" else "right")
        for t in vs:
            r = res[t]
            ci = (f"{r['score_ci_low,speech_judge']:.2f}-{r['score_ci_high,speech_judge']:.2f}"
                  if "score_ci_low,speech_judge" in r else "-")
            table.add_row(t, f"{r['score,speech_judge']:.2f}", ci,
                          str(r.get("n,speech_judge", "-")), str(r.get("n_failed,speech_judge", "-")))
        console.print(table)
    console.print(f"from {run.results_path}")
    return 0


def cmd_publish(args) -> int:
    from .hub import publish

    report = publish(args.results, args.repo, samples=not args.no_details, audio=args.audio,
                     model_repo=args.model_repo, benchmark_dataset=args.benchmark_dataset,
                     private=args.private)
    console.print(f"pushed {report.files} files to {report.repo_id}/{report.path_in_repo} "
                  f"(prepared in {report.staged})")
    if report.model_repo:
        colour = "green" if report.model_repo_written else "yellow"
        console.print(f"[{colour}]{report.note}[/{colour}]")
    return 0


def cmd_leaderboard(args) -> int:
    from .leaderboard import leaderboard

    rows, paths = leaderboard(args.sources, args.output, hub_repo=args.from_hub,
                              push_repo=args.push)
    f = lambda x, s="{:.3f}": "-" if x is None else s.format(x)  # noqa: E731
    # one table per scorer: rows scored by different listeners or judges are never ranked together
    for listener in sorted({r.listener for r in rows if r.adept_acc is not None}):
        table = Table(title=f"ADEPT, {listener} listener", box=box.SIMPLE_HEAD)
        for col in ("rank", "system", "accuracy", "95% CI", "n", "failed"):
            table.add_column(col, justify="left" if col == "system" else "right")
        for r in sorted((r for r in rows if r.listener == listener and r.adept_acc is not None),
                        key=lambda r: r.adept_rank):
            table.add_row(str(r.adept_rank), r.system, f(r.adept_acc),
                          f"{f(r.adept_ci_low, '{:.2f}')}-{f(r.adept_ci_high, '{:.2f}')}",
                          str(r.adept_n), str(r.adept_failed))
        console.print(table)
    for judge in sorted({r.judge for r in rows if r.vstyle_score is not None}):
        table = Table(title=f"VStyle, judge {judge}", box=box.SIMPLE_HEAD)
        for col in ("rank", "system", "overall", "n", "failure rate"):
            table.add_column(col, justify="left" if col == "system" else "right")
        for r in sorted((r for r in rows if r.judge == judge and r.vstyle_score is not None),
                        key=lambda r: r.vstyle_rank):
            table.add_row(str(r.vstyle_rank), r.system, f(r.vstyle_score, "{:.2f}"),
                          str(r.vstyle_n), f(r.vstyle_failure_rate, "{:.1%}"))
        console.print(table)
    console.print("written: " + ", ".join(str(p) for p in paths))
    if not any(p.suffix == ".png" for p in paths):
        console.print("[yellow]no chart: pip install 'adept-eval[plot]' for matplotlib[/yellow]")
    if args.push:
        console.print(f"pushed to {args.push}")
    return 0


def cmd_make_synthetic(args) -> int:
    from .synthetic import build_corpus, build_zip

    out = Path(args.output)
    if out.suffix == ".zip":
        build_zip(out)
    else:
        build_corpus(out, wrap=False)
    console.print(f"synthetic ADEPT written to {out} (for testing the pipeline only; it is not "
                  "the real corpus)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="adept-eval", description=__doc__)
    parser.add_argument("--version", action="version", version=f"adept-eval {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--corpus", help="ADEPT.zip or extracted folder (default: "
                        "$ADEPT_EVAL_CORPUS, the cache, or a download from Zenodo)")
    common.add_argument("--no-download", action="store_true",
                        help="fail instead of downloading ADEPT")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", parents=[common], help="fetch and verify ADEPT; print a summary")
    p.set_defaults(func=cmd_prepare)

    p = sub.add_parser("manifest", parents=[common],
                       help="write the 195 stimuli a system must synthesise (CSV and JSONL)")
    p.add_argument("-o", "--output", default="adept_manifest",
                   help="output path stem (default: adept_manifest -> .csv and .jsonl)")
    p.set_defaults(func=cmd_manifest)

    p = sub.add_parser("check", parents=[common], help="validate a system's samples folder")
    p.add_argument("folder")
    p.add_argument("--strict", action="store_true", help="fail on warnings too")
    p.add_argument("--all", action="store_true", help="list every problem")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("questions", parents=[common],
                       help="write every listening-test question (ids, stimuli order, choices, "
                       "answer) for running a human evaluation")
    p.add_argument("-o", "--output", default="adept_questions.csv", help=".csv or .jsonl")
    p.add_argument("--tasks", nargs="*", help="only these tasks")
    p.set_defaults(func=cmd_questions)

    p = sub.add_parser("make-synthetic", help="write a synthetic ADEPT (folder or .zip) for "
                       "trying the pipeline offline; not the real corpus")
    p.add_argument("output")
    p.set_defaults(func=cmd_make_synthetic)

    p = sub.add_parser("ceiling", parents=[common], help="a listener's accuracy on ADEPT's "
                       "natural recordings: its measured ceiling")
    p.add_argument("--listener", default="acoustic")
    p.add_argument("--option", nargs="*", metavar="KEY=VALUE",
                   help="listener options, e.g. llm_base_url=http://localhost:8000/v1")
    p.add_argument("--tasks", nargs="*", default=["adept"])
    p.add_argument("--limit", type=int, help="questions per task (a quick, partial ceiling)")
    p.set_defaults(func=cmd_ceiling)

    p = sub.add_parser("report", help="print an lm-eval run's results with n, intervals, tests "
                       "against chance and pooled groups")
    p.add_argument("results", help="lm-eval results_*.json, or the --output_path folder")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("publish", help="push an lm-eval run (results, per-question details, "
                       "optionally audio) to a Hub dataset, and scores onto your model repo")
    p.add_argument("results", help="lm-eval results_*.json, or the --output_path folder")
    p.add_argument("--repo", required=True, help="results dataset, e.g. my-org/adept-results")
    p.add_argument("--no-details", action="store_true", help="skip per-question parquet files")
    p.add_argument("--audio", action="store_true", help="also upload the system's audio")
    p.add_argument("--model-repo", help="the system's model repo, to write eval results to")
    p.add_argument("--benchmark-dataset", help="the Hub dataset ADEPT scores refer to "
                   "(your copy from scripts/publish_corpus.py)")
    p.add_argument("--private", action="store_true")
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("leaderboard", help="build a leaderboard from many runs (folders or a "
                       "Hub results dataset): Markdown, CSV, parquet, PNG; optionally push it")
    p.add_argument("sources", nargs="*", help="folders or results files")
    p.add_argument("--from-hub", help="a results dataset made by `adept-eval publish`")
    p.add_argument("-o", "--output", default="leaderboard")
    p.add_argument("--push", help="dataset repo to push the leaderboard to")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("judge-agreement", help="agreement of speech-judge scores with human "
                       "scores (Spearman, Kendall, quadratic-weighted kappa, exact, within 1)")
    p.add_argument("judge", help="speech_judge result .json, or .csv/.jsonl with id,score")
    p.add_argument("human", help=".csv/.jsonl with id,score[,instruction_type]; raters averaged")
    p.add_argument("-o", "--output", help="also write the figures as JSON")
    p.set_defaults(func=cmd_judge_agreement)
    _add_listening_test(sub, common)
    return parser


def _add_listening_test(sub, common) -> None:
    """``adept-eval listening-test ...``: ADEPT's listening tests with people (its own module)."""
    from .listening_test.cli import add_parser

    add_parser(sub, common)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CorpusError, DownloadError, FileNotFoundError, ValueError, RuntimeError) as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
