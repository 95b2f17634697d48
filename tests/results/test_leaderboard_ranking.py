"""Ranking among equals: only complete runs on one corpus and scorer are ranked together, ties
share a rank, the CSV neutralises formulas, and report/publish take the newest run."""

import csv
import json
import time

import pytest

from adept_eval.corpora import spec
from adept_eval.results.leaderboard import build, write
from adept_eval.results.runs import load_run
from run_files import _results, _run


def test_only_complete_runs_on_one_corpus_and_scorer_are_ranked_and_ties_share_a_rank(tmp_path):
    full = {t: 0.6 for t in spec.TASKS}
    two = {"adept_emotion_female": 1.0, "adept_syntactic_phrasing_male": 1.0}
    runs = [_run(tmp_path, "a", "2026-01-01T00-00-00", _results("a", full)),
            _run(tmp_path, "b", "2026-01-01T00-00-01", _results("b", full)),
            _run(tmp_path, "c", "2026-01-01T00-00-02", _results("c", {t: 0.4 for t in spec.TASKS})),
            _run(tmp_path, "partial", "2026-01-01T00-00-03", _results("partial", two)),
            _run(tmp_path, "synth", "2026-01-01T00-00-04",
                 _results("synth", {t: 0.9 for t in spec.TASKS}, sha="b" * 64, synthetic=True)),
            _run(tmp_path, "old", "2026-01-01T00-00-05", _results("old", full, identity=False))]
    rows = {r.system: r for r in build(runs)}
    rank = {name: row.figure("adept", "rank") for name, row in rows.items()}
    why = {name: row.figure("adept", "unranked") for name, row in rows.items()}
    assert rank["a"] == rank["b"] == 1 and rank["c"] == 3
    assert rank["partial"] is None and "partial" in why["partial"]
    assert rank["old"] is None and "identity" in why["old"]
    # another corpus: ranked only among its own, and marked synthetic
    assert rows["synth"].figure("adept", "rank") == 1 and rows["synth"].figure("adept", "synthetic")
    assert rows["synth"].group("adept") != rows["a"].group("adept")
    assert rows["a"].figure("adept", "chance") == pytest.approx(
        sum(t.chance * t.n_questions for t in spec.TASKS.values()) /
        sum(t.n_questions for t in spec.TASKS.values()))
    paths = write(list(rows.values()), tmp_path / "lb")
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "not ranked" in md and "SYNTHETIC" in md
    assert any(p.suffix == ".png" for p in paths)  # matplotlib is in the test extra


def test_leaderboard_csv_neutralises_formulas(tmp_path):
    name = "@SUM(1+1)*cmd|' /C calc'!A0"
    run = _run(tmp_path, "x", "2026-01-01T00-00-00",
               _results(name, {t: 0.5 for t in spec.TASKS}))
    write(build([run]), tmp_path / "lb")
    rows = list(csv.DictReader(open(tmp_path / "lb" / "leaderboard.csv", encoding="utf-8")))
    assert rows[0]["system"] == "'" + name
    from adept_eval.results.report import csv_safe

    assert [csv_safe(v) for v in ("=1+1", "+1", "-2", "\tx", "ok", -2.0)] == \
        ["'=1+1", "'+1", "'-2", "'\tx", "ok", -2.0]


def test_report_and_publish_take_the_newest_run_by_timestamp(tmp_path):
    # "zzz" sorts last alphabetically but is the older run
    _run(tmp_path, "zzz-old", "2026-01-01T00-00-00",
         _results("zzz-old", {"adept_emotion_female": 0.5}, date=1000.0))
    _run(tmp_path, "aaa-new", "2026-01-02T00-00-00",
         _results("aaa-new", {"adept_emotion_female": 0.5}, date=2000.0))
    run = load_run(tmp_path)
    assert run.system == "aaa-new" and "newest of 2" in run.chosen
    assert load_run(tmp_path, "zzz").system == "zzz-old"
    from adept_eval.cli import main

    assert main(["report", str(tmp_path)]) == 0
    assert main(["report", str(tmp_path), "--run", "nothing-like-it"]) == 2


def test_the_chart_of_a_board_sorted_by_prosody_distance_draws_the_distance(tmp_path):
    """Sorted by prosody distance, the chart drew accuracy bars titled "ADEPT accuracy",
    labelled with the distance ranks; it draws each run's distance with its interval, the
    lowest (best) at the top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from adept_eval.results.leaderboard import boards, sections

    runs = []
    for i, (system, acc, distance) in enumerate((("near", 0.5, 0.2), ("far", 0.9, 0.7),
                                                 ("mid", 0.7, 0.4))):
        data = _results(system, {t: acc for t in spec.TASKS})
        for r in data["results"].values():
            r.update({"prosody_distance,none": distance, "graded_n,none": 20,
                      "prosody_distance_ci_low,none": distance - 0.05,
                      "prosody_distance_ci_high,none": distance + 0.05})
        runs.append(_run(tmp_path, system, f"2026-01-01T00-00-0{i}", data))
    rows = build(runs, sort="prosody_distance")
    board = next(b for b in boards() if b.name == "adept")
    (panel,) = board.chart_panels(*sections(rows, "adept"))
    assert panel.title.startswith("ADEPT prosody distance (lower is better)")
    assert [r.system for r in panel.members] == ["far", "mid", "near"]  # bottom to top
    fig, ax = plt.subplots()
    board.draw(ax, [r.system for r in panel.members], panel.members)
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == pytest.approx([0.7, 0.4, 0.2])  # the distances, not the accuracies
    assert ax.get_xlabel().startswith("prosody distance (95% CI), lower is better")
    plt.close(fig)
    # sorted by accuracy the same runs draw accuracy, the best at the top
    (panel,) = board.chart_panels(*sections(build(runs), "adept"))
    assert panel.title.startswith("ADEPT accuracy") and panel.members[-1].system == "far"
