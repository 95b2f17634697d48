"""``adept-eval``: prepare the corpus, list what to synthesise, check a system's samples."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from adept_eval import __version__
from adept_eval.corpora import spec
from adept_eval.corpora.corpus import load_corpus
from adept_eval.options import arg_type
from adept_eval.corpora.questions import DEFAULT_BLIND_SALT

console = Console(soft_wrap=True)  # messages stay greppable; tables still fit the width
err_console = Console(stderr=True, soft_wrap=True)


def _corpus(args):
    return load_corpus(args.corpus, download=not args.no_download, progress=not args.quiet)


def _lit(value) -> str:
    """Text from data (a path, a system or task name, a scorer's label) printed as written:
    Rich would otherwise take ``[plot]`` or ``[a3f9...]`` in it for markup and drop it."""
    return escape(str(value))


SYNTHETIC_NOTE = "SYNTHETIC stand-in corpus: not ADEPT results"
PLOT_EXTRA = "pip install 'adept-eval[plot]'"


def cmd_prepare(args) -> int:
    from adept_eval.identity import is_synthetic

    if args.refetch:
        from adept_eval.corpora.corpus import refetch_corpus

        refetch_corpus(args.corpus, download=not args.no_download, progress=not args.quiet)
    corpus = _corpus(args)
    synthetic = is_synthetic(corpus)
    table = Table(title=f"ADEPT: {len(corpus)} recordings, 12 listening tests"
                  + (f" - {SYNTHETIC_NOTE}" if synthetic else ""), box=box.SIMPLE_HEAD)
    table.add_column("task", no_wrap=True, min_width=35)
    for col in ("stimuli", "questions", "choices", "chance"):
        table.add_column(col, justify="right")
    from adept_eval.corpora.questions import build_questions

    tot_rec = tot_q = 0
    for name, t in spec.TASKS.items():
        qs = build_questions(corpus, name)
        n_rec = sum(1 for r in corpus.recordings if r.cls == t.cls.name and r.speaker == t.speaker)
        tot_rec, tot_q = tot_rec + n_rec, tot_q + len(qs)
        table.add_row(name, str(n_rec), str(len(qs)), str(qs[0].n_choices),
                      f"{1 / qs[0].n_choices:.3f}")
    table.add_row("total", str(tot_rec), str(tot_q), "", "", end_section=True)
    console.print(table)
    console.print(f"corpus: {_lit(corpus.root)}\nsource: {_lit(corpus.source)}\n"
                  f"sha256: {corpus.fingerprint}")
    if synthetic:
        console.print(f"[red]{SYNTHETIC_NOTE}[/red] (adept-eval make-synthetic's corpus, for "
                      "trying the pipeline only)")
    return 0


def cmd_manifest(args) -> int:
    from adept_eval.corpora.manifest import build_manifest, write_manifest

    corpus = _corpus(args)
    entries = build_manifest(corpus)
    paths = write_manifest(entries, Path(args.output))
    console.print(f"{len(entries)} stimuli to synthesise; written to "
                  + " and ".join(_lit(p) for p in paths))
    from adept_eval.signal.audio import AUDIO_EXTENSIONS

    console.print(f"Put each sample at <your folder>/<output_path> (as "
                  f"{', '.join(e.lstrip('.') for e in AUDIO_EXTENSIONS)}), then run "
                  "`adept-eval check <your folder>`.")
    return 0


def cmd_check(args) -> int:
    from adept_eval.corpora.manifest import check_folder

    folder = Path(args.folder)
    if folder.is_file():  # the manifest or one sample named instead of the folder, say
        err_console.print(f"[red]{_lit(folder)}: a file, not a folder; check takes the folder "
                          "of a system's samples, each at <folder>/<output_path> as `adept-eval "
                          "manifest` lists them[/red]", highlight=False)
        return 2
    if not folder.is_dir():
        err_console.print(f"[red]{_lit(folder)}: no such folder[/red]")
        return 2
    corpus = _corpus(args)
    result = check_folder(corpus, folder, progress=not args.quiet)
    if not result.candidates:  # one message, not a "missing" row per stimulus
        from adept_eval.signal.audio import AUDIO_EXTENSIONS

        err_console.print(f"[red]{_lit(folder)}: contains no audio files (looked for "
                          f"{', '.join(AUDIO_EXTENSIONS)}, in subfolders too); each sample goes "
                          f"at {_lit(folder)}/<output_path>, as `adept-eval manifest` lists "
                          f"them[/red]", highlight=False)
        return 1
    if result.layout_hint:  # one message, not a "missing" row per stimulus and an "extra" per file
        err_console.print(f"[red]{_lit(result.layout_hint)}[/red]", highlight=False)
        return 1
    problems = result.problems
    if problems:
        table = Table(title=f"Problems in {_lit(folder)}")
        table.add_column("severity")
        table.add_column("kind")
        table.add_column("file / problem", overflow="fold")
        shown = problems if args.all or len(problems) <= 40 else problems[:40]
        for p in shown:
            colour = "red" if p.severity == "error" else "yellow"
            table.add_row(f"[{colour}]{p.severity}[/{colour}]", p.kind, _lit(p.message))
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
    """The listening tests as a plan for a human evaluation (ids the `human` listener reads).

    Beside the real ids (which name class, subcategory and sentence, so they must not reach
    participants), every question and stimulus gets a blinded id to use as page and audio file
    names on the platform; ``blinded_id`` recomputes them from the real ids and the salt."""
    import csv
    import json

    from adept_eval.corpora.questions import (
        LETTERS,
        all_questions,
        blinded_id,
        blinded_question_id,
        unblinding,
    )

    corpus = _corpus(args)
    wanted = _comma_list(args.tasks)
    unknown = sorted(set(wanted) - set(spec.TASKS))
    if unknown:
        raise ValueError(f"--tasks: unknown task(s) {', '.join(unknown)} (the twelve "
                         "adept_{class}_{speaker} tasks)")
    rows, chosen = [], []
    for task, qs in all_questions(corpus).items():
        if wanted and task not in wanted:
            continue
        chosen += qs
        for q in qs:
            rows.append({"question_id": q.question_id,
                         "blinded_question_id": blinded_question_id(q.question_id, args.salt),
                         "task": task, "question": q.question,
                         "stimuli": " | ".join(q.stimuli),
                         "blinded_stimuli": " | ".join(blinded_id(s, args.salt) for s in q.stimuli),
                         "choices": " | ".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(q.choices)),
                         "answer": q.answer_letter, "target": q.target})
    unblinding(chosen, args.salt)  # refuses a collision among the blinded ids
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
    console.print(f"{len(rows)} questions written to {_lit(out)}")
    return 0


def _comma_list(values) -> list[str]:
    """``a b``, ``a,b`` and ``a, b`` alike (lm-eval's --tasks takes commas)."""
    return [part.strip() for v in values or [] for part in str(v).split(",") if part.strip()]


def _key_values(items) -> dict:
    """``k=v k2=v2`` (--option) and ``k=v,k2=v2`` or a JSON object (lm-eval's --metadata).

    Commas split only outside brackets and quotes, so ``orders=[0,1]`` stays one value; values
    are Python literals where they parse (``3``, ``True``, ``[0, 1]``) and strings otherwise."""
    import ast
    import json

    out: dict = {}
    for item in items or []:
        text = str(item).strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--metadata: not a valid JSON object ({exc})") from None
            if not isinstance(parsed, dict):
                raise ValueError("--metadata: a JSON value must be an object")
            out.update(parsed)
            continue
        for part in _split_top_level(text):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"expected key=value, got {part!r}")
            try:
                out[key.strip()] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                out[key.strip()] = value
    return out


def _split_top_level(text: str) -> list[str]:
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


def _scores_table(path: Path, score_key: str = "score") -> dict[str, tuple[float | None, str]]:
    """id -> (score, type) from a speech_judge result JSON (``items``) or CSV/JSONL rows with
    ``id`` (or ``item_id``), ``score`` and optionally ``instruction_type``; several rows with one
    id (several human raters) are averaged. A missing score (empty, null) is kept as None: the
    agreement leaves the pair out and counts it.

    The one reader of both files, so that every problem is one message naming the file and the
    row (a JSON line, a CSV line, a result's item), all of a file's problems at once: a file
    that is not the expected shape, a row without an id, a score that is not a number, not
    finite or off the judge's 1-5 scale (``verdict.SCORE_RANGE``: a 300 or a -4 is a typo or
    another scale, and would skew every figure), no score column at all (it gave an all-NaN
    table and exit 0). Text is decoded as the responses of people are
    (``human.decode_text``): a spreadsheet's byte-order mark or UTF-16 export reads as text."""
    import csv
    import io
    import json
    import math
    from collections import defaultdict

    from adept_eval.judge.verdict import SCORE_RANGE
    from adept_eval.errors import ResponsesError
    from adept_eval.scoring.listeners.human import decode_text

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise ValueError(f"{path}: a folder, not a scores file")
    try:
        text, _ = decode_text(path)
    except ResponsesError as exc:
        raise ValueError(str(exc)) from None
    rows: list[tuple[str, object]] = []  # (where, row)
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise ValueError(f"{path}: not a speech_judge result: expected a JSON object with an "
                             "\"items\" list (or give the scores as .csv/.jsonl with id,score)")
        rows = [(f"{path}: item {i}", r) for i, r in enumerate(data["items"], 1)]
    elif path.suffix == ".jsonl":
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"{path}:{i}", json.loads(line)))
                except ValueError as exc:
                    raise ValueError(f"{path}:{i}: not JSON ({exc})") from None
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        columns = [c.strip() for c in reader.fieldnames or []]
        missing = [c for c, ok in (("id or item_id", {"id", "item_id"} & set(columns)),
                                   (score_key, score_key in columns)) if not ok]
        if missing:
            raise ValueError(f"{path}: no {' and no '.join(missing)} column (its columns: "
                             f"{', '.join(columns) or 'none'})")
        for row in reader:
            rows.append((f"{path}: line {reader.line_num}",
                         {(k or "").strip(): v for k, v in row.items()}))
    problems: list[str] = []
    acc: dict[str, list] = defaultdict(list)
    types: dict[str, str] = {}
    low, high = SCORE_RANGE
    if rows and all(isinstance(r, dict) and score_key not in r for _, r in rows):
        raise ValueError(f"{path}: no row has a {score_key!r}")
    for where, row in rows:
        if not isinstance(row, dict):
            problems.append(f"{where}: not an object with id and {score_key}")
            continue
        key = row.get("item_id", row.get("id"))
        key = "" if key is None else str(key).strip()
        if not key:
            problems.append(f"{where}: no id/item_id")
            continue
        value = row.get(score_key)
        if isinstance(value, str):
            value = value.strip()
        score = None
        if value not in (None, ""):
            try:
                if isinstance(value, bool):
                    raise ValueError
                score = float(value)
            except (TypeError, ValueError):
                problems.append(f"{where}: {score_key} {value!r} is not a number")
                continue
            if not math.isfinite(score):
                problems.append(f"{where}: {score_key} {value!r} is not a finite number")
                continue
            if not low <= score <= high:
                problems.append(f"{where}: {score_key} {value!r} is outside the judge's "
                                f"{low}-{high} scale")
                continue
        acc[key].append(score)
        kind = row.get("instruction_type")
        types[key] = str(kind) if kind not in (None, "") else types.get(key, "")
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"]
                                 if len(problems) > 20 else [])
        raise ValueError("\n".join(shown))
    out = {}
    for key, values in acc.items():
        good = [v for v in values if v is not None]
        out[key] = (sum(good) / len(good) if good else None, types[key])
    return out


def _print_whole(table: Table) -> None:
    """Print a table at its natural width when the output is not a terminal (a file, a pipe),
    so no cell is truncated or folded to fit an imagined 80 columns."""
    if console.is_terminal:
        console.print(table)
    else:
        natural = console.measure(table, options=console.options.update(max_width=10_000))
        Console(file=console.file, width=max(console.width, natural.maximum),
                soft_wrap=True).print(table)


def cmd_judge_agreement(args) -> int:
    from adept_eval.judge.agreement import agreement

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
    table.add_column("instruction type", overflow="fold")  # never cut a name short
    for col in ("n", "Spearman", "Kendall", "QWK", "exact", "within 1"):
        table.add_column(col, justify="right")
    rows = [("all", result["overall"])] + list(result.get("by_type", {}).items())
    for name, st in rows:
        table.add_row(_lit(name or "-"), str(st["n"]), *(f"{st[k]:.3f}" for k in
                      ("spearman", "kendall", "qwk", "exact", "within_1")))
    _print_whole(table)
    only = len(set(judge_scores) ^ set(human_scores))
    if only:
        console.print(f"{only} ids appear in only one of the files and were not compared")
    if args.output:
        import json

        Path(args.output).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


def cmd_ceiling(args) -> int:
    """A listener's accuracy on ADEPT's own natural recordings: the most it can credit a system."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval.harness.startup import register
    from adept_eval.results.report import adept_table

    if args.corpus:
        import os

        os.environ["ADEPT_EVAL_CORPUS"] = args.corpus
    options = _key_values(args.option)
    listener = options.pop("listener", None)
    if listener and args.listener and listener != args.listener:
        raise ValueError(f"--listener {args.listener} and --metadata listener={listener} disagree")
    listener = listener or args.listener or "acoustic"
    tasks = _comma_list(args.tasks) or ["adept"]
    from adept_eval.suites import ADEPT

    _check_adept_tasks(tasks, [*ADEPT.tasks, *ADEPT.groups])  # before lm-eval's task index
    register()
    manager = TaskManager(metadata={"listener": listener, **options})
    res = simple_evaluate(model="adept-natural", tasks=tasks, task_manager=manager,
                          bootstrap_iters=0, limit=args.limit)
    from adept_eval.identity import RunIdentity

    ident = RunIdentity.of(res)
    suite = ident.suites.get("adept") if ident is not None else None
    synthetic = suite is not None and suite.synthetic
    console.print(adept_table(res["results"], title=_lit(
        f"Ceiling of the {listener!r} listener (accuracy on ADEPT's natural recordings)"
        + (f" - {SYNTHETIC_NOTE}" if synthetic else ""))))
    if synthetic:
        console.print(f"[red]{SYNTHETIC_NOTE}[/red] (adept-eval make-synthetic's corpus, for "
                      "trying the pipeline only: not this listener's ceiling on ADEPT)")
    return 0


def _check_adept_tasks(tasks: list[str], registered) -> None:
    """Refuse a --tasks name that is not an ADEPT task or group (a typo, say) before anything
    runs, naming it, suggesting the nearest names and listing the valid ones."""
    from adept_eval.suites import with_nearest

    adept = sorted(t for t in registered if t == "adept" or t.startswith("adept_"))
    unknown = [t for t in tasks if t not in adept and not (t.endswith((".yaml", ".yml"))
                                                          and Path(t).is_file())]
    if not unknown:
        return
    raise ValueError(f"--tasks: unknown ADEPT task or group {with_nearest(unknown, adept)}; "
                     f"valid: {', '.join(adept)}")


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

        lines.append(f"{SUITES[name].title}: scorer {_lit(label(s.scorer))}; corpus "
                     f"{_lit(corpus)}{synthetic}; "
                     f"{len(s.tasks)} tasks ({_completeness(s)}); "
                     f"adept-eval {ident.version}")
    return lines


def _completeness(s) -> str:
    """'complete', or why a run is partial (a task set short of a complete one, or --limit)."""
    from adept_eval.identity import answered

    if s.limited:
        return f"partial: run with --limit, {answered(s.limited)}"
    return "complete" if s.complete else "partial"


def cmd_compare(args) -> int:
    """Paired comparison of runs: every pair, Holm-adjusted, with the direction in words."""
    import json

    from adept_eval.results.compare import compare, render, to_json

    result = compare(args.runs, args.run)
    for named, r in zip(args.runs, result["runs"]):  # a folder of several runs: say which one
        if r["chosen"]:  # (`out/` may hold every system's runs: its newest is another system)
            console.print(f"run for {_lit(named)}: {_lit(r['chosen'])}")
    for part in render(result):  # per pair: a table per suite, then what it rests on
        _print_whole(part) if isinstance(part, Table) else console.print(_lit(part) + "\n")
    if args.json:
        from pathlib import Path

        Path(args.json).write_text(json.dumps(to_json(result), indent=2), encoding="utf-8")
        console.print(f"wrote {_lit(args.json)}")
    return 0


def cmd_report(args) -> int:
    """lm-eval results as adept-eval tables: n, intervals, tests against chance, pooled groups."""
    from adept_eval.results.runs import load_run, samples_mismatch
    from adept_eval.results.report import adept_table, group_table
    from adept_eval.suites import VSTYLE

    run = load_run(args.results, args.run)
    if run.chosen:
        console.print(f"run: {_lit(run.chosen)}")
    res = run.results["results"]
    why = samples_mismatch(run, run.task_names())
    if why:  # samples cut short: groups, subcategories and graded figures over a subset, unsaid
        console.print(f"[yellow]warning: {_lit(run.results_path)}: {_lit(why)}; its figures are "
                      "read from the results alone[/yellow]")
        run.samples = {}
    if run.listener() is not None:
        console.print(adept_table(res, title=_lit(f"{run.system}: ADEPT, {run.listener()} "
                                                  "listener")))
        groups = group_table(res, run.samples, people=run.people)
        if groups is not None:
            console.print(groups)
        from adept_eval.results.report import graded_table, subcategory_table

        subcategories = subcategory_table(run.samples or {})
        if subcategories is not None:
            _print_whole(subcategories)

        graded = graded_table(res, run.samples)
        if graded is not None:
            _print_whole(graded)
            if not run.samples:
                console.print("[yellow]the figures pooled over tasks need the run's logged "
                              "samples (lm_eval --log_samples)[/yellow]")
    vs = [t for t in res if t in VSTYLE.tasks and "score,speech_judge" in res[t]]
    if vs:
        table = Table(title=_lit(f"{run.system}: VStyle, judge {run.judge()}"),
                      box=box.SIMPLE_HEAD)
        for col in ("task", "score", "95% CI", "n", "failed"):
            table.add_column(col, justify="left" if col == "task" else "right")
        for t in vs:
            r = res[t]
            ci = (f"{r['score_ci_low,speech_judge']:.2f}-{r['score_ci_high,speech_judge']:.2f}"
                  if "score_ci_low,speech_judge" in r else "-")
            table.add_row(t, f"{r['score,speech_judge']:.2f}", ci,
                          str(r.get("n,speech_judge", "-")), str(r.get("n_failed,speech_judge", "-")))
        console.print(table)
    for line in _identity_lines(run):
        console.print(line)
    console.print(f"from {_lit(run.results_path)}")
    return 0


def cmd_publish(args) -> int:
    from adept_eval.results.runs import publish

    report = publish(args.results, args.repo, samples=not args.no_details, audio=args.audio,
                     model_repo=args.model_repo, benchmark_dataset=args.benchmark_dataset,
                     private=args.private, run_id=args.run, allow_partial=args.allow_partial)
    if report.chosen:
        console.print(f"run: {_lit(report.chosen)}")
    console.print(f"pushed {report.files} files to {_lit(report.repo_id)}/"
                  f"{_lit(report.path_in_repo)} (prepared in {_lit(report.staged)})")
    if report.model_repo:
        colour = "green" if report.model_repo_written else "yellow"
        console.print(f"[{colour}]{_lit(report.note)}[/{colour}]")
    return 0


def _print_tie_method(method: str | None, systems: int) -> None:
    """What a section's rank ranges mean and how its pairwise tests were made."""
    if method and systems > 1:
        console.print(f"rank range: the ranks a system could hold given the paired tests "
                      f"between these {systems} systems ({_lit(method)}): a system's range spans "
                      "every system it is not significantly different from", highlight=False)


def cmd_leaderboard(args) -> int:
    from adept_eval.results.leaderboard import heading, leaderboard, sections

    rows, paths = leaderboard(args.sources, args.output, hub_repo=args.from_hub,
                              push_repo=args.push, sort=args.sort)
    f = lambda x, s="{:.3f}": "-" if x is None else s.format(x)  # noqa: E731
    # every column folds (wraps inside a word) rather than cut a name or figure with "..."
    # one table per corpus and scorer: rows are ranked only among equals
    ranked, apart = sections(rows, "adept")
    for members in ranked:
        table = Table(title=_lit(heading(members, "adept")), box=box.SIMPLE_HEAD, padding=(0, 1),
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
            table.add_row(str(r.adept_rank), str(r.adept_rank_range or "-"), _lit(r.system),
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
            table.add_row(_lit(r.system), _lit(r.listener), f(r.adept_acc), str(r.adept_n),
                          _lit(r.adept_unranked))
        console.print(table)
    ranked, apart = sections(rows, "vstyle")
    for members in ranked:
        table = Table(title=_lit(heading(members, "vstyle")), box=box.SIMPLE_HEAD)
        for col in ("rank", "rank range", "system", "overall", "n", "failure rate"):
            table.add_column(col, justify="left" if col == "system" else "right", overflow="fold",
                             min_width=5 if col == "rank range" else None)
        for r in members:
            table.add_row(str(r.vstyle_rank), str(r.vstyle_rank_range or "-"), _lit(r.system),
                          f(r.vstyle_score, "{:.2f}"), str(r.vstyle_n),
                          f(r.vstyle_failure_rate, "{:.1%}"))
        console.print(table)
        _print_tie_method(members[0].vstyle_tie_method, len(members))
    if apart:
        table = Table(title="VStyle runs not ranked", box=box.SIMPLE_HEAD)
        for col in ("system", "judge", "overall", "n", "why not ranked"):
            table.add_column(col, overflow="fold")
        for r in apart:
            table.add_row(_lit(r.system), _lit(r.judge), f(r.vstyle_score, "{:.2f}"),
                          str(r.vstyle_n), _lit(r.vstyle_unranked))
        console.print(table)
    console.print("written: " + ", ".join(_lit(p) for p in paths))
    if not any(p.suffix == ".png" for p in paths):
        console.print(f"[yellow]no chart: {_lit(PLOT_EXTRA)} for matplotlib[/yellow]")
    if args.push:
        console.print(f"pushed to {_lit(args.push)}")
    return 0


def cmd_make_synthetic(args) -> int:
    from adept_eval.corpora.synthetic import build_corpus, build_zip, check_replaceable

    out = Path(args.output)
    check_replaceable(out)
    if out.suffix == ".zip":
        build_zip(out)
    else:
        build_corpus(out, wrap=False)
    console.print(f"synthetic ADEPT written to {_lit(out)} (for testing the pipeline only; it is "
                  "not the real corpus)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    # not __doc__: its reST quotes printed as ``adept-eval``, and it named only the first steps
    parser = argparse.ArgumentParser(prog="adept-eval", description=(
        "ADEPT prosody-transfer evaluation for lm-evaluation-harness: prepare the corpus, list "
        "and check what to synthesise; read (report), compare, publish and rank (leaderboard) "
        "lm_eval runs of ADEPT and VStyle; run listening tests with people."))
    parser.add_argument("--version", action="version", version=f"adept-eval {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks for errors (for reporting bugs)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--corpus", help="ADEPT.zip or extracted folder (default: "
                        "$ADEPT_EVAL_CORPUS, the cache, or a download from Zenodo)")
    common.add_argument("--no-download", action="store_true",
                        help="fail instead of downloading ADEPT")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", parents=[common], help="fetch and verify ADEPT; print a summary")
    p.add_argument("--refetch", action="store_true", help="download ADEPT again and extract it "
                   "afresh (when the downloaded ADEPT.zip in the cache was damaged after it was "
                   "verified; a damaged extracted copy is extracted again by itself)")
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
    p.add_argument("--tasks", nargs="+", action="extend", metavar="TASK",
                   help="only these tasks (space- or comma-separated)")
    p.add_argument("--salt", default=DEFAULT_BLIND_SALT,
                   help="salt of the blinded ids (default: a fixed public one; pass your own, "
                   "kept private, if participants could recompute ids from ADEPT's file names)")
    p.set_defaults(func=cmd_questions)

    p = sub.add_parser("make-synthetic", help="write a synthetic ADEPT (folder or .zip) for "
                       "trying the pipeline offline; not the real corpus")
    p.add_argument("output")
    p.set_defaults(func=cmd_make_synthetic)

    p = sub.add_parser("ceiling", parents=[common], help="a listener's accuracy on ADEPT's "
                       "natural recordings: its measured ceiling")
    p.add_argument("--listener", help="acoustic (default), audio-llm or human")
    p.add_argument("--option", "--metadata", dest="option", nargs="+", action="extend",
                   metavar="KEY=VALUE", help="listener options as lm-eval's --metadata takes "
                   "them (k=v,k2=v2, space-separated k=v k2=v2, or a JSON object), e.g. "
                   "llm_base_url=http://localhost:8000/v1; listener=NAME works here too")
    p.add_argument("--tasks", nargs="+", action="extend", metavar="TASK",
                   help="tasks or groups, space- or comma-separated (default: adept)")
    p.add_argument("--limit", type=arg_type("a whole number of at least 1", whole=True, least=1),
                   help="questions per task, at least 1 (a quick, partial ceiling)")
    p.set_defaults(func=cmd_ceiling)

    p = sub.add_parser("report", help="print an lm-eval run's results with n, intervals, tests "
                       "against chance and pooled groups")
    p.add_argument("results", help="lm-eval results_*.json, or the --output_path folder "
                   "(the newest run in it by its timestamp)")
    p.add_argument("--run", help="choose a run in the folder: part of its file name or "
                   "timestamp, e.g. flat-tts or 2026-11-22T07")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="is system A better than system B? paired differences "
                       "of ADEPT runs (accuracy and prosody distance) or VStyle runs (judge "
                       "score) with intervals and p-values")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="two or more lm-eval results_*.json or --output_path folders (the newest "
                   "run in each), made with --log_samples")
    p.add_argument("--run", help="choose a run in each folder: part of its file name or timestamp")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("publish", help="push an lm-eval run (results, per-question details, "
                       "optionally audio) to a Hub dataset, and scores onto your model repo")
    p.add_argument("results", help="lm-eval results_*.json, or the --output_path folder "
                   "(the newest run in it by its timestamp)")
    p.add_argument("--run", help="choose a run in the folder: part of its file name or timestamp")
    p.add_argument("--repo", required=True, help="results dataset, e.g. my-org/adept-results")
    p.add_argument("--no-details", action="store_true", help="skip per-question parquet files")
    p.add_argument("--audio", action="store_true", help="also upload the system's audio")
    p.add_argument("--model-repo", help="the system's model repo, to write eval results to")
    p.add_argument("--benchmark-dataset", help="the Hub dataset ADEPT scores refer to "
                   "(your copy from scripts/publish_corpus.py)")
    p.add_argument("--allow-partial", action="store_true",
                   help="with --model-repo: write the scores of a run made with lm-eval's "
                   "--limit (refused without this), each labelled partial with the questions "
                   "its task answered")
    p.add_argument("--private", action="store_true")
    p.set_defaults(func=cmd_publish)

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
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("judge-agreement", help="agreement of speech-judge scores with human "
                       "scores (Spearman, Kendall, quadratic-weighted kappa, exact, within 1)")
    p.add_argument("judge", help="speech_judge result .json, or .csv/.jsonl with id,score")
    p.add_argument("human", help=".csv/.jsonl with id,score[,instruction_type]; raters averaged")
    p.add_argument("-o", "--output", help="also write the figures as JSON")
    p.set_defaults(func=cmd_judge_agreement)
    _add_listening_test(sub, common)
    for p in sub.choices.values():  # `adept-eval check x --debug` works as well as before it
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show Python tracebacks for errors")
    return parser


def _add_listening_test(sub, common) -> None:
    """``adept-eval listening-test ...``: ADEPT's listening tests with people (its own module)."""
    from adept_eval.cli.listening_test import add_parser

    add_parser(sub, common)


def main(argv: list[str] | None = None) -> int:
    """Run one command. A user's mistake (bad file, option, corpus, network) is one message
    naming the file or option and exit status 2; ``--debug`` shows the traceback instead. An
    unexpected failure (a bug) is one message and exit status 3, asking for ``--debug``."""
    from adept_eval.errors import USER_ERROR_STATUS, message, user_error_types

    parser = build_parser()
    args = parser.parse_args(argv)
    with no_progress_bars() if getattr(args, "quiet", False) else nullcontext():
        if args.debug:
            return args.func(args)
        try:
            return args.func(args)
        except KeyboardInterrupt:
            err_console.print("[red]interrupted[/red]", highlight=False)
            return 130
        except (*user_error_types(), OSError, ValueError, RuntimeError) as exc:
            err_console.print(f"[red]error:[/red] {escape(message(exc))}", highlight=False)
            return USER_ERROR_STATUS
        except Exception as exc:  # a bug: still no traceback unless asked for
            err_console.print(f"[red]error:[/red] unexpected {type(exc).__name__}: "
                              f"{escape(message(exc))}\n"
                              f"This is a bug in adept-eval; rerun with --debug for the "
                              f"traceback and please report it.", highlight=False)
            return 3


@contextmanager
def no_progress_bars():
    """``-q``'s "no progress bars", for every bar the command draws: adept-eval's own and those
    of lm-eval (``ceiling`` runs its evaluator, whose bars take no switch), datasets and
    huggingface_hub. Passing ``progress=False`` down reached only some of ours, and
    ``TQDM_DISABLE`` cannot be set here: tqdm reads it once, when it is imported, which is
    before any command runs. So every tqdm bar started inside the block is made disabled where
    they all start (``tqdm.std.tqdm.__init__``, which tqdm.auto's and the libraries' subclasses
    call), whatever ``disable`` its caller passed; the class is restored afterwards."""
    from tqdm import std

    original = std.tqdm.__dict__["__init__"]  # a function, or tqdm's envwrap partialmethod

    def disabled(self, *args, **kwargs):
        kwargs["disable"] = True
        original.__get__(self, type(self))(*args, **kwargs)

    std.tqdm.__init__ = disabled
    try:
        yield
    finally:
        std.tqdm.__init__ = original

