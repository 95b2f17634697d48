"""A leaderboard from many runs: one row per system and scorer, ranked only among equals.

Each run's identity is read from what it recorded (``results["adept_eval"]``): a row is ranked
only against rows with the same corpus (sha256), the same scorer identity (listener or judge,
with its version, model, prompt hashes, server) and a complete task set. Other rows are shown
apart with the reason (partial task set, no recorded identity, mixed scorers). Equal scores
share a rank. Every score carries its n and a 95% interval. Written as Markdown, CSV (spreadsheet
formulas neutralised), parquet and a PNG chart, and optionally pushed to the Hub.

Every suite in ``suites.SUITES`` is on it: this module only iterates the suites, and each
suite's board (``suite_boards.board_of``) reads its figures from a run, tests its ties and
shows its sections.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from adept_eval.errors import CompareError, PublishError
from adept_eval.results.board import Board, Panel, Row, is_nan
from adept_eval.results.formatting import chart_text, fit_title
from adept_eval.results.report import csv_safe
from adept_eval.results.runs import Run, find_runs
from adept_eval.results.suite_boards import board_of
from adept_eval.scoring import stats
from adept_eval.suites import SUITES

log = logging.getLogger(__name__)

TIE_LEVEL = 0.05


def boards() -> list[Board]:
    """Every suite's board, in ``SUITES``' order (the order of the leaderboard's sections)."""
    return [board_of(suite) for suite in SUITES.values()]


def sorts() -> dict[str, tuple[str, str, bool]]:
    """The ``--sort`` choices the suites offer: name -> (suite, column, higher is better)."""
    return {name: (board.name, column, higher) for board in boards()
            for name, (column, higher) in board.sorts.items()}


def row_of(run: Run) -> Row:
    """A run's row: its system, date, scorers and its standing in every suite it ran.

    Args:
        run: the run.

    Returns:
        The row, holding the run (its logged samples are what tie tests pair).
    """
    date = datetime.fromtimestamp(run.when, tz=timezone.utc).strftime("%Y-%m-%d %H:%M") \
        if run.when else None
    row = Row(run.system, run.timestamp, date=date, people=run.people,
              scorers={name: run.scorer(name) for name in SUITES}, source=run)
    for board in boards():
        board.read(run, row)
    return row


def _latest(runs: list[Run]) -> list[Run]:
    """The newest run per system and scorer identity; each older one is named in a warning:
    given explicitly, a run dropped without a word looked like a leaderboard of both."""
    latest: dict[tuple, Run] = {}
    for run in runs:
        ident = run.identity
        key = (run.system,) + tuple(
            (name, s.comparable_key(), s.complete) for name, s in sorted(
                (ident.suites if ident else {}).items())) + (
            () if ident else tuple(run.scorer(name) for name in SUITES))
        if key in latest:
            older, newer = sorted((latest[key], run), key=lambda r: r.when)
            log.warning("leaderboard: %s not ranked: an older run of the same system (%s) and "
                        "scorer than %s", older.results_path, run.system, newer.results_path)
            latest[key] = newer
        else:
            latest[key] = run
    return list(latest.values())


def build(runs: list[Run], sort: str = "accuracy") -> list[Row]:
    """Rows, ranked among equals: same corpus, same scorer, complete task set; ties share a
    rank, and rank ranges come from the section's pairwise tests.

    Args:
        runs: the runs (the newest per system and scorer identity is kept, ``_latest``).
        sort: a ``--sort`` choice (``sorts``): the suite offering it ranks by it (rows
            without that figure shown apart, ``Board.unranked_for``); every other suite by
            its default.

    Returns:
        The rows, the first suite's ranked rows first.

    Raises:
        ValueError: an unknown ``sort``.
    """
    if sort not in sorts():
        raise ValueError(f"unknown sort {sort!r}; choose from {', '.join(sorts())}")
    rows = [row_of(r) for r in _latest(runs)]
    for board in boards():
        _rank(rows, board, *board.ranked_by(sort))
    first = boards()[0].name
    return sorted(rows, key=lambda r: (r.scorers.get(first) or "",
                                       r.figure(first, "unranked") is not None,
                                       r.figure(first, "rank") or 1e9, r.system))


def _rank(rows: list[Row], board: Board, column: str, higher: bool) -> None:
    """Rank the rows of one suite by ``column`` within each section (rows with one ranking
    key), setting their rank, rank range and tie method; a row that cannot be ranked by it
    (the board says why, or its figure is NaN) is given the reason instead."""
    suite = board.name
    for row in rows:
        row.set_figure(suite, "ranked_by", column)  # what the chart draws (not a CSV column)
        reason = board.unranked_for(row, column)
        if reason:
            row.set_figure(suite, "unranked", reason)
    for members in _rankable_sections(rows, suite, column).values():
        ranks = stats.competition_ranks([r.figure(suite, column) for r in members], higher)
        for row, rank in zip(members, ranks):
            row.set_figure(suite, "rank", rank)
        _ties(members, board, column, higher)


def _rankable_sections(rows: list[Row], suite: str, column: str) -> dict[tuple, list[Row]]:
    """The rows that can be ranked by ``column``, by section (ranking key); a row whose
    figure is NaN is marked unranked on the way (``stats.competition_ranks`` refuses NaN)."""
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        value = row.figure(suite, column)
        if row.figure(suite, "unranked") is None and is_nan(value):
            row.set_figure(suite, "unranked", f"no score: its {column} is not a number (NaN)")
        if value is not None and row.figure(suite, "unranked") is None:
            groups.setdefault(row.group(suite), []).append(row)
    return groups


def _pair_p(a: Row, b: Row, board: Board, column: str) -> tuple[float, str]:
    """The p-value of a difference between two rows of a section, and how it was made: paired
    on their runs' logged samples when both have them (``compare.tie_test``), else from their
    recorded figures, unpaired (``Board.unpaired_p``)."""
    from adept_eval.results.compare import tie_test

    figure = board.tie_figure(column)
    runs = [r.source for r in (a, b)]
    if figure and all(run is not None and all(t in run.samples for t in run.task_names()
                                              if t in board.suite.tasks) for run in runs):
        try:
            return tie_test(runs[0], runs[1], figure)
        except CompareError:
            pass
    return board.unpaired_p(a, b, column)


def _ties(members: list[Row], board: Board, column: str, higher: bool) -> None:
    """Rank ranges within one section from its pairwise tests, Holm-adjusted over the pairs: a
    row's range spans every row it is not significantly different from (at 5%). An untestable
    pair counts as tied."""
    suite = board.name
    k = len(members)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    tests = [_pair_p(members[i], members[j], board, column) for i, j in pairs]
    different = _different(k, pairs, stats.holm([p for p, _ in tests]))
    ranges = stats.rank_ranges([r.figure(suite, column) for r in members], different, higher)
    method = _tie_method(tests, len(pairs))
    for i, (row, (low, high)) in enumerate(zip(members, ranges)):
        row.set_figure(suite, "rank_range", stats.format_rank_range(low, high))
        row.set_figure(suite, "tie_method", method)
        row.standing(suite).tied = {members[j].system for j in range(k)
                                    if j != i and not different[i][j]}


def _different(k: int, pairs: list[tuple[int, int]], adjusted: list[float]) -> list[list[bool]]:
    """A k x k matrix: True where a pair's adjusted p is below ``TIE_LEVEL`` (NaN: tied)."""
    different = [[False] * k for _ in range(k)]
    for (i, j), p in zip(pairs, adjusted):
        different[i][j] = different[j][i] = not math.isnan(p) and p < TIE_LEVEL
    return different


def _tie_method(tests: list[tuple[float, str]], pairs: int) -> str:
    """How a section's ties were decided, in words, from its tests' methods."""
    if not pairs:
        return "the only row of its section"
    methods = sorted({how for _, how in tests})
    return "; ".join(methods) + f"; Holm-adjusted over {pairs} pairs at 5%"


def heading(rows: list[Row], suite: str) -> str:
    """A ranked section's heading (its suite's scorer and corpus)."""
    return board_of(suite).heading(rows)


def sections(rows: list[Row], suite: str) -> tuple[list[list[Row]], list[Row]]:
    """Ranked sections of a suite (one per corpus and scorer, by rank) and the rows of it
    shown apart (by system); rows without the suite's headline figure are in neither."""
    headline = SUITES[suite].headline
    groups: dict[tuple, list[Row]] = {}
    apart = []
    for r in rows:
        if r.figure(suite, headline) is None:
            continue
        if r.figure(suite, "unranked") is not None:
            apart.append(r)
        else:
            groups.setdefault(r.group(suite), []).append(r)
    ranked = [sorted(m, key=lambda r: (r.figure(suite, "rank"), r.system))
              for _, m in sorted(groups.items(), key=lambda kv: str(kv[0]))]
    return ranked, sorted(apart, key=lambda r: r.system)


def markdown(rows: list[Row]) -> str:
    """The leaderboard as Markdown: every suite's ranked sections, then its rows apart."""
    out = ["# Leaderboard", "",
           "Rows are ranked only against rows with the same corpus, the same scorer and a "
           "complete task set; equal scores share a rank, and a rank range shows which "
           "systems are statistically tied. Other rows are listed apart with the reason.", ""]
    for board in boards():
        ranked, apart = sections(rows, board.name)
        for members in ranked:
            out += board.markdown_section(members)
        if apart:
            out += board.markdown_apart(apart)
    return "\n".join(out)


def chart(rows: list[Row], path: Path) -> Path | None:
    """Every suite's panels (``Board.chart_panels``: one per section, with intervals where
    the suite has them), with brackets over statistically tied systems. Needs
    matplotlib (``pip install adept-eval[plot]``).

    Args:
        rows: the leaderboard's rows.
        path: the PNG to write.

    Returns:
        ``path``, or None without matplotlib or without a panel to draw.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels: list[Panel] = []
    for board in boards():
        panels += board.chart_panels(*sections(rows, board.name))
    if not panels:
        return None
    height = sum(max(1.9, 0.45 * len(panel.members) + 1.4) for panel in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, height), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        suite, members = panel.board.name, panel.members
        ranks = [r.figure(suite, "rank_range") for r in members]
        names = [chart_text(panel.board.chart_label(r, rank, len(members) > 1))
                 for r, rank in zip(members, ranks)]
        panel.board.draw(ax, names, members)
        if any(ranks) and len(members) > 1:
            _brackets(ax, members, suite)
    for ax, panel in zip(axes[:, 0], panels):  # once the panels are drawn: none clipped
        fit_title(fig, ax, chart_text(panel.title), 10)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def tie_brackets(members: list[Row], suite: str) -> list[tuple[int, int]]:
    """Spans (first, last position in ``members``' order) of systems not significantly
    different from the system at the span's start in ``suite``, dropping spans inside
    another: the brackets the chart draws."""
    spans = []
    for i, row in enumerate(members):
        j = _last_tied(members, i, row.standings[suite].tied if suite in row.standings else set())
        if j > i:
            spans.append((i, j))
    return [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1]
                                        for o in spans)]


def _last_tied(members: list[Row], i: int, tied: set[str]) -> int:
    """The last position after ``i`` whose system is in ``tied``, else ``i``."""
    return max((j for j, m in enumerate(members) if m.system in tied and j > i), default=i)


def _brackets(ax, members: list[Row], suite: str) -> None:
    """Brackets right of the bars joining systems that are statistically tied."""
    from matplotlib.transforms import blended_transform_factory

    where = blended_transform_factory(ax.transAxes, ax.transData)
    for depth, (i, j) in enumerate(tie_brackets(members, suite)):
        x = 1.01 + 0.025 * depth
        ax.plot([x - 0.008, x, x, x - 0.008], [i - 0.3, i - 0.3, j + 0.3, j + 0.3],
                color="#333333", linewidth=1, transform=where, clip_on=False)
    if tie_brackets(members, suite):
        ax.set_xlabel(ax.get_xlabel() + "; bracketed: no significant difference")


def scorer_columns() -> dict[str, str]:
    """Suite -> the CSV column naming its scorer: the scorer's kind (``listener``, ``judge``)
    for the first suite of that kind, ``<suite>_<kind>`` for any later one."""
    columns: dict[str, str] = {}
    for suite in SUITES.values():
        taken = suite.scorer in columns.values()
        columns[suite.name] = f"{suite.name}_{suite.scorer}" if taken else suite.scorer
    return columns


def column_order() -> list[str]:
    """The leaderboard's CSV columns before the per-part ones: system, run, then per suite its
    scorer and its columns (``<suite>_<column>``), then the date."""
    order = ["system", "run"]
    scorers = scorer_columns()
    for board in boards():
        order += [scorers[board.name]] + [f"{board.name}_{c}" for c in board.columns]
    return order + ["date"]


def flat(row: Row) -> dict:
    """A row as one flat record: ``column_order``'s columns and every suite's per-part ones
    (per task, class, category)."""
    out = {"system": row.system, "run": row.run}
    scorers = scorer_columns()
    for board in boards():
        out[scorers[board.name]] = row.scorers.get(board.name)
        out.update({f"{board.name}_{c}": row.figure(board.name, c) if row.figure(
            board.name, c) is not None else board.defaults.get(c) for c in board.columns})
    out["date"] = row.date
    for board in boards():
        out.update(board.extra_columns(row))
    return out


def write(rows: list[Row], out: Path) -> list[Path]:
    """Write the leaderboard as Markdown, CSV, parquet and (with matplotlib) a PNG chart.

    Args:
        rows: the leaderboard's rows.
        out: the folder (made when missing).

    Returns:
        The files written.
    """
    out.mkdir(parents=True, exist_ok=True)
    records = [flat(r) for r in rows]
    order = column_order()
    columns = sorted({k for f in records for k in f},
                     key=lambda c: (c not in order, order.index(c) if c in order else 0, c))
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard.parquet"]
    paths[0].write_text(markdown(rows), encoding="utf-8")
    with open(paths[1], "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows([{c: csv_safe(f.get(c)) for c in columns} for f in records])
    pq.write_table(pa.Table.from_pylist([{c: f.get(c) for c in columns} for f in records]),
                   paths[2])
    png = chart(rows, out / "leaderboard.png")
    if png:
        paths.append(png)
    return paths


def from_hub(repo_id: str, workdir: Path) -> list[Run]:
    """Every run in a results dataset published by ``adept-eval publish``.

    Args:
        repo_id: the results dataset.
        workdir: where its results files are downloaded.

    Returns:
        The runs (their results only: details are not downloaded).

    Raises:
        PublishError: the download fails, or the dataset holds no run.
    """
    import os

    from huggingface_hub import snapshot_download

    from adept_eval.results.publish import with_retries

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
    """Push the written leaderboard with a dataset card to a Hub dataset.

    Args:
        out: the folder ``write`` wrote into (the card is written there too).
        repo_id: the dataset.
        rows: the rows (the card shows their Markdown).
        private: create the dataset private.

    Raises:
        PublishError: a secret value in the files, or the Hub refuses the push.
    """
    from adept_eval.results.publish import hub_api, with_retries

    api = hub_api()
    card = ["---", "tags:", "- adept-eval", "- leaderboard", "configs:", "- config_name: default",
            "  data_files:", "  - split: train", "    path: leaderboard.parquet", "---", "",
            markdown(rows), "", "![leaderboard](leaderboard.png)", "",
            "Built by [adept-eval](https://pypi.org/project/adept-eval/) `leaderboard`. Rows are "
            "ranked only among runs with the same corpus, scorer and complete task set; the "
            "rank range (" + ", ".join(f"`{name}_rank_range`" for name in SUITES) + ") spans "
            "the systems a row is not significantly different from (paired tests, "
            "Holm-adjusted).", ""]
    (out / "README.md").write_text("\n".join(card), encoding="utf-8")
    from adept_eval.secrecy import find_secrets

    leaks = find_secrets(out)
    if leaks:
        raise PublishError("refusing to upload: secret values found in " + "; ".join(leaks))
    with_retries(lambda: api.create_repo(repo_id, repo_type="dataset", private=private,
                                         exist_ok=True), f"creating {repo_id}")
    with_retries(lambda: api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=out,
                                           allow_patterns=["leaderboard.*", "README.md"],
                                           commit_message="adept-eval: leaderboard"),
                 f"uploading the leaderboard to {repo_id}")


def _check_request(sources: list[str], out: Path, hub_repo: str | None,
                   push_repo: str | None) -> None:
    """Refuse a ``leaderboard`` request that cannot succeed, before any download.

    Raises:
        PublishError: nothing named to look in, ``out`` a file, or no token to push with.
    """
    if not sources and not hub_repo:  # not "no runs found in -": nothing was named to look in
        raise PublishError("no runs given: name the lm-eval --output_path folders or "
                           "results_*.json files to rank (e.g. adept-eval leaderboard out/ -o "
                           f"{out}), or a results dataset with --from-hub REPO")
    if out.exists() and not out.is_dir():  # `-o leaderboard.md`: named, not a bare "File exists"
        raise PublishError(f"-o {out}: a file, not a folder; -o names the folder to write "
                           "leaderboard.md, .csv, .parquet and .png into (e.g. -o leaderboard/)")
    if push_repo:  # before any download or network call
        from adept_eval.results.publish import require_token

        require_token(f"pushing the leaderboard to {push_repo}")


def _gather_runs(sources: list[str], out: Path, hub_repo: str | None) -> list[Run]:
    """The runs under ``sources`` and in ``hub_repo`` (downloaded into ``out``), each once.

    Raises:
        PublishError: a source without a run, a damaged results file, a Hub refusal, or no
            run at all.
    """
    runs = find_runs(sources) if sources else []  # each source holds runs; each run once
    if hub_repo:
        runs += from_hub(hub_repo, out / "_hub_runs")
    if not runs:
        raise PublishError("no lm-eval runs found in " + ", ".join(sources or [hub_repo or "-"]))
    return runs


def leaderboard(sources: list[str], out: str | Path, *, hub_repo: str | None = None,
                push_repo: str | None = None,
                sort: str = "accuracy") -> tuple[list[Row], list[Path]]:
    """Build the leaderboard of runs in local folders or files and/or a Hub results dataset,
    write it, and push it when asked.

    Args:
        sources: folders (searched recursively) or results files.
        out: the folder to write into.
        hub_repo: a results dataset to read runs from (``--from-hub``).
        push_repo: a dataset to push the leaderboard to (``--push``).
        sort: a ``--sort`` choice (see ``build``).

    Returns:
        The rows and the files written.

    Raises:
        PublishError: nothing named, ``out`` a file, no token to push with, a source without
            a run, a damaged results file, or a Hub refusal.
    """
    out = Path(out)
    _check_request(sources, out, hub_repo, push_repo)
    runs = _gather_runs(sources, out, hub_repo)
    rows = build(runs, sort=sort)
    paths = write(rows, out)
    if push_repo:
        push(out, push_repo, rows)
    return rows, paths
