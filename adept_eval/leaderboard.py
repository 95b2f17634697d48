"""A leaderboard from many runs: one row per system and scorer, ranked only among equals.

Rows scored by different listeners (ADEPT) or judges (VStyle) are never ranked together: each
row carries its scorer's identity and its rank among the rows with the same identity. Every
score carries its n and a 95% interval. Written as Markdown, CSV, parquet and a PNG chart, and
optionally pushed to the Hub as a dataset with a card.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import spec, vstyle
from .harness import exact_interval
from .hub import PublishError, Run, _api, find_runs, with_retries
from .report import pooled


@dataclass
class Row:
    system: str
    run: str
    listener: str | None = None
    adept_acc: float | None = None
    adept_n: int | None = None
    adept_ci_low: float | None = None
    adept_ci_high: float | None = None
    adept_tasks: int = 0
    adept_failed: int | None = None
    adept_rank: int | None = None
    judge: str | None = None
    vstyle_score: float | None = None
    vstyle_n: int | None = None
    vstyle_failure_rate: float | None = None
    vstyle_rank: int | None = None
    tasks: dict[str, float] = field(default_factory=dict)
    classes: dict[str, float] = field(default_factory=dict)
    vstyle_categories: dict[str, float] = field(default_factory=dict)

    def flat(self) -> dict:
        out = {k: v for k, v in asdict(self).items()
               if k not in ("tasks", "classes", "vstyle_categories")}
        out.update({f"acc_{t.removeprefix('adept_')}": v for t, v in self.tasks.items()})
        out.update({f"class_{c}": v for c, v in self.classes.items()})
        out.update({f"vstyle_{c}": v for c, v in self.vstyle_categories.items()})
        return out


def row_of(run: Run) -> Row:
    res = run.results["results"]
    row = Row(run.system, run.timestamp, run.listener(), judge=run.judge())
    failed = 0
    by_class: dict[str, list[tuple[float, int]]] = {}
    for task in spec.TASKS:
        r = res.get(task)
        if not r or r.get("acc,none") is None:
            continue
        acc, tn = float(r["acc,none"]), int(r.get("n,none") or 0)
        row.tasks[task] = acc
        failed += int(r.get("failed,none") or 0)
        by_class.setdefault(spec.TASKS[task].cls.name, []).append((acc, tn))
    k, n = pooled(res, list(row.tasks))
    if n:
        row.adept_acc, row.adept_n, row.adept_tasks, row.adept_failed = k / n, n, len(row.tasks), failed
        row.adept_ci_low, row.adept_ci_high = exact_interval(k, n)
        row.classes = {c: sum(a * m for a, m in v) / sum(m for _, m in v)
                       for c, v in by_class.items() if sum(m for _, m in v)}
    for lang in vstyle.LANGUAGES:
        group = res.get(f"vstyle_{lang}")
        cats = {c: res[f"vstyle_{lang}_{c}"] for c in vstyle.CATEGORIES
                if f"vstyle_{lang}_{c}" in res}
        if not cats:
            continue
        row.vstyle_categories = {f"{lang}_{c}": r.get("score,speech_judge") for c, r in cats.items()}
        judged = sum(int(r.get("n,speech_judge") or 0) for r in cats.values())
        failed_v = sum(int(r.get("n_failed,speech_judge") or 0) for r in cats.values())
        row.vstyle_n = judged
        row.vstyle_failure_rate = failed_v / (judged + failed_v) if judged + failed_v else None
        if group and group.get("score,speech_judge") is not None and len(cats) == 4:
            row.vstyle_score = group["score,speech_judge"]
        break
    return row


def build(runs: list[Run]) -> list[Row]:
    """Rows (the newest run per system and scorer), ranked within each scorer's identity."""
    latest: dict[tuple, Run] = {}
    for run in runs:
        key = (run.system, run.listener(), run.judge())
        if key not in latest or run.timestamp > latest[key].timestamp:
            latest[key] = run
    rows = [row_of(r) for r in latest.values()]
    for attr, ident, rank in (("adept_acc", "listener", "adept_rank"),
                              ("vstyle_score", "judge", "vstyle_rank")):
        groups: dict[str, list[Row]] = {}
        for row in rows:
            if getattr(row, attr) is not None:
                groups.setdefault(getattr(row, ident), []).append(row)
        for members in groups.values():
            for i, row in enumerate(sorted(members, key=lambda r: -getattr(r, attr)), 1):
                setattr(row, rank, i)
    return sorted(rows, key=lambda r: (r.listener or "", r.adept_rank or 1e9, r.system))


def _fmt(x, spec_="{:.3f}") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else spec_.format(x)


def markdown(rows: list[Row]) -> str:
    out = ["# Leaderboard", ""]
    for listener in sorted({r.listener for r in rows if r.adept_acc is not None}):
        members = sorted((r for r in rows if r.listener == listener and r.adept_acc is not None),
                         key=lambda r: r.adept_rank)
        classes = [c for c in spec.CLASS_ORDER if any(c in r.classes for r in members)]
        out += [f"## ADEPT, scored by the `{listener}` listener", "",
                "Recognition accuracy over all questions (n) with its exact 95% interval; "
                "per-class accuracy over both speakers.", "",
                "| rank | system | accuracy | 95% CI | n | failed | " +
                " | ".join(c.replace("_", " ") for c in classes) + " |",
                "|---:|---|---:|---|---:|---:|" + "---:|" * len(classes)]
        for r in members:
            out.append(f"| {r.adept_rank} | {r.system} | {_fmt(r.adept_acc)} | "
                       f"{_fmt(r.adept_ci_low, '{:.2f}')}-{_fmt(r.adept_ci_high, '{:.2f}')} | "
                       f"{r.adept_n} | {r.adept_failed} | " +
                       " | ".join(_fmt(r.classes.get(c)) for c in classes) + " |")
        tasks = [t for t in spec.TASKS if any(t in r.tasks for r in members)]
        out += ["", "Per task (accuracy; questions per task as in the ADEPT tutorial):", "",
                "| system | " + " | ".join(t.removeprefix("adept_") for t in tasks) + " |",
                "|---|" + "---:|" * len(tasks)]
        out += [f"| {r.system} | " + " | ".join(_fmt(r.tasks.get(t)) for t in tasks) + " |"
                for r in members]
        out.append("")
    for judge in sorted({r.judge for r in rows if r.vstyle_score is not None}):
        members = sorted((r for r in rows if r.judge == judge and r.vstyle_score is not None),
                         key=lambda r: r.vstyle_rank)
        cats = sorted({c for r in members for c in r.vstyle_categories})
        out += [f"## VStyle, judged by `{judge}`", "",
                "Overall score 1-5 (each category 0.25, VStyle's weighting); n judged answers.",
                "", "| rank | system | overall | n | failure rate | " + " | ".join(cats) + " |",
                "|---:|---|---:|---:|---:|" + "---:|" * len(cats)]
        for r in members:
            out.append(f"| {r.vstyle_rank} | {r.system} | {_fmt(r.vstyle_score, '{:.2f}')} | "
                       f"{r.vstyle_n} | {_fmt(r.vstyle_failure_rate, '{:.1%}')} | " +
                       " | ".join(_fmt(r.vstyle_categories.get(c), '{:.2f}') for c in cats) + " |")
        out.append("")
    return "\n".join(out)


def chart(rows: list[Row], path: Path) -> Path | None:
    """ADEPT accuracy with 95% intervals per system, one panel per listener (and per judge
    for VStyle). Needs matplotlib (``pip install adept-eval[plot]``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = []
    for listener in sorted({r.listener for r in rows if r.adept_acc is not None}):
        members = sorted((r for r in rows if r.listener == listener and r.adept_acc is not None),
                         key=lambda r: r.adept_acc)
        panels.append((f"ADEPT accuracy ({listener} listener)", members, "adept"))
    for judge in sorted({r.judge for r in rows if r.vstyle_score is not None}):
        members = sorted((r for r in rows if r.judge == judge and r.vstyle_score is not None),
                         key=lambda r: r.vstyle_score)
        panels.append((f"VStyle overall (judge {judge})", members, "vstyle"))
    if not panels:
        return None
    height = sum(max(1.6, 0.45 * len(m) + 1.0) for _, m, _ in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, height), squeeze=False)
    for ax, (title, members, kind) in zip(axes[:, 0], panels):
        names = [f"{r.system} (n={r.adept_n if kind == 'adept' else r.vstyle_n})" for r in members]
        if kind == "adept":
            values = [r.adept_acc for r in members]
            err = [[r.adept_acc - r.adept_ci_low for r in members],
                   [r.adept_ci_high - r.adept_acc for r in members]]
            ax.barh(names, values, xerr=err, color="#4c72b0", capsize=3)
            ax.set_xlim(0, 1)
            ax.set_xlabel("recognition accuracy (95% CI)")
        else:
            ax.barh(names, [r.vstyle_score for r in members], color="#dd8452")
            ax.set_xlim(1, 5)
            ax.set_xlabel("speech-judge score (1-5)")
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write(rows: list[Row], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    flat = [r.flat() for r in rows]
    columns = sorted({k for f in flat for k in f}, key=lambda c: (c not in Row.__dataclass_fields__, c))
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard.parquet"]
    paths[0].write_text(markdown(rows), encoding="utf-8")
    with open(paths[1], "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows([{c: f.get(c) for c in columns} for f in flat])
    pq.write_table(pa.Table.from_pylist([{c: f.get(c) for c in columns} for f in flat]), paths[2])
    png = chart(rows, out / "leaderboard.png")
    if png:
        paths.append(png)
    return paths


def from_hub(repo_id: str, workdir: Path) -> list[Run]:
    """Every run in a results dataset published by ``adept-eval publish``."""
    import os

    from huggingface_hub import snapshot_download

    local = with_retries(lambda: snapshot_download(
        repo_id, repo_type="dataset", allow_patterns=["runs/**/results.json"],
        local_dir=workdir, endpoint=os.environ.get("HF_ENDPOINT") or None),
        f"downloading {repo_id}")
    runs = [Run(f.parent / f"results_{f.parent.name}.json", json.loads(f.read_text()))
            for f in sorted(Path(local).glob("runs/*/*/results.json"))]
    if not runs:
        raise PublishError(f"{repo_id}: no runs/*/*/results.json in it")
    return runs


def push(out: Path, repo_id: str, rows: list[Row], *, private: bool = False) -> None:
    api = _api()
    card = ["---", "tags:", "- adept-eval", "- leaderboard", "configs:", "- config_name: default",
            "  data_files:", "  - split: train", "    path: leaderboard.parquet", "---", "",
            markdown(rows), "", "![leaderboard](leaderboard.png)", "",
            "Built by [adept-eval](https://pypi.org/project/adept-eval/) `leaderboard`. Rows scored "
            "by different listeners or judges are ranked separately.", ""]
    (out / "README.md").write_text("\n".join(card), encoding="utf-8")
    from .hub import find_secrets

    leaks = find_secrets(out)
    if leaks:
        raise PublishError("refusing to upload: secret values found in " + "; ".join(leaks))
    with_retries(lambda: api.create_repo(repo_id, repo_type="dataset", private=private,
                                         exist_ok=True), f"creating {repo_id}")
    with_retries(lambda: api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=out,
                                           allow_patterns=["leaderboard.*", "README.md"],
                                           commit_message="adept-eval: leaderboard"),
                 f"uploading the leaderboard to {repo_id}")


def leaderboard(sources: list[str], out: str | Path, *, hub_repo: str | None = None,
                push_repo: str | None = None) -> tuple[list[Row], list[Path]]:
    out = Path(out)
    runs = find_runs(sources) if sources else []
    if hub_repo:
        runs += from_hub(hub_repo, out / "_hub_runs")
    if not runs:
        raise PublishError("no lm-eval runs found in " + ", ".join(sources or [hub_repo or "-"]))
    rows = build(runs)
    paths = write(rows, out)
    if push_repo:
        push(out, push_repo, rows)
    return rows, paths
