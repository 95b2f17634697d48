"""Graded figures in `adept-eval report` and the leaderboard (--sort prosody_distance)."""

import json
import math

import pytest

from adept_eval.scoring import graded
from adept_eval.corpora import spec
from adept_eval.results.runs import Run, load_run
from adept_eval.results.leaderboard import build, write
from run_files import _results, _run


def _with_graded(data, distance, n=10, failed=1):
    for r in data["results"].values():
        r.update({"prosody_distance,none": distance, "prosody_distance_ci_low,none": distance - .1,
                  "prosody_distance_ci_high,none": distance + .1, "graded_n,none": n,
                  "graded_failed,none": failed})
    return data


def test_leaderboard_sorts_by_prosody_distance_lower_first(tmp_path):
    full = lambda acc: {t: acc for t in spec.TASKS}  # noqa: E731
    runs = [_run(tmp_path, "acc-best", "2026-01-01T00-00-00",
                 _with_graded(_results("acc-best", full(0.9)), 0.8, failed=0)),
            _run(tmp_path, "close", "2026-01-01T00-00-01",
                 _with_graded(_results("close", full(0.7)), 0.3, failed=0)),
            _run(tmp_path, "none", "2026-01-01T00-00-02", _results("none", full(0.8)))]
    by_acc = {r.system: r for r in build(runs)}
    assert [by_acc[s].figure("adept", "rank") for s in ("acc-best", "none", "close")] == [1, 2, 3]
    rows = build(runs, sort="prosody_distance")
    by_pd = {r.system: r for r in rows}
    pd = {r.system: (lambda name, r=r: r.figure("adept", name)) for r in rows}
    assert pd["close"]("rank") == 1 and pd["acc-best"]("rank") == 2
    assert pd["none"]("rank") is None and "graded" in pd["none"]("unranked")
    assert pd["close"]("prosody_distance") == pytest.approx(0.3)
    assert pd["close"]("graded_n") == 120 and pd["close"]("graded_failed") == 0
    write(list(by_pd.values()), tmp_path / "lb")
    assert "prosody distance" in (tmp_path / "lb" / "leaderboard.md").read_text()
    with pytest.raises(ValueError):
        build(runs, sort="loudness")
    # the interval is pooled from the tasks' own: 12 tasks of 10 stimuli, each a t interval
    # on 4 df of +-0.1, so each se is 0.1 / t(4), the pooled se sqrt(12 (10/120)^2 se^2) on
    # Satterthwaite's (12 s)^2 / (12 s^2 / 4) = 48 df - and 0.3 against 0.8 is a difference,
    # not a tie (no interval was recorded, every pair tied)
    from scipy.stats import t as student_t

    se = math.sqrt(12 * (10 / 120) ** 2 * (0.1 / student_t.ppf(0.975, 4)) ** 2)
    half = student_t.ppf(0.975, 48) * se
    assert pd["close"]("prosody_distance_ci_low") == pytest.approx(0.3 - half)
    assert pd["close"]("prosody_distance_ci_high") == pytest.approx(0.3 + half)
    assert pd["close"]("rank_range") == "1" and pd["acc-best"]("rank_range") == "2"


def test_a_run_whose_distance_left_out_failed_stimuli_is_not_ranked_by_it(tmp_path):
    """A stimulus that failed (a missing or unusable sample) has no prosody distance and is
    left out of the run's mean, so with --sort prosody_distance a system missing a third of
    its samples ranked first beside the natural recordings (accuracy scores them wrong). Such
    a run is listed apart, saying how many failed; by accuracy it is ranked as before."""
    full = lambda acc: {t: acc for t in spec.TASKS}  # noqa: E731
    runs = [_run(tmp_path, "whole", "2026-01-01T00-00-00",
                 _with_graded(_results("whole", full(0.9)), 0.5, failed=0)),
            _run(tmp_path, "holes", "2026-01-01T00-00-01",
                 _with_graded(_results("holes", full(0.6)), 0.1, failed=1))]
    by_pd = {r.system: r for r in build(runs, sort="prosody_distance")}
    assert by_pd["whole"].figure("adept", "rank") == 1
    assert by_pd["holes"].figure("adept", "rank") is None
    assert by_pd["holes"].figure("adept", "graded_failed") == 12
    assert by_pd["holes"].figure("adept", "unranked") == (
        "prosody distance over 120 stimuli: 12 failed (missing or unusable samples) and were "
        "left out; ranked by prosody_distance only with none failed")
    by_acc = {r.system: r for r in build(runs)}
    assert [by_acc[s].figure("adept", "rank") for s in ("whole", "holes")] == [1, 2]


def _stimulus(sid, pd, status="ok"):
    if status != "ok":
        return graded.failed(sid, "silent").to_dict()
    return graded.StimulusScores(id=sid, status="ok", prosody_distance=pd, f0_corr=0.5).to_dict()


def _samples_file(tmp_path, task, questions):
    path = tmp_path / f"samples_{task}_2026-01-01T00-00-00.jsonl"
    path.write_text("\n".join(json.dumps({"acc": {"question_id": str(i), "graded": g}})
                              for i, g in enumerate(questions)))
    return path


def test_pooled_figures_count_a_shared_stimulus_once_and_resample_sentences(tmp_path):
    from adept_eval.results.report import graded_pooled

    a = [_stimulus(f"emotion/{s}/ad00_000{k}", d) for k, (s, d) in
         enumerate([("anger", 0.2), ("fear", 0.4), ("joy", 0.6)])]
    # every question of a multi-stimulus sentence carries the same stimuli: counted once
    emo = _samples_file(tmp_path, "adept_emotion_female", [a, a, a])
    single = _samples_file(tmp_path, "adept_syntactic_phrasing_male", [
        [_stimulus("syntactic_phrasing/interpretation_1/ad01_0001", 1.0)],
        [_stimulus("syntactic_phrasing/interpretation_2/ad01_0001", 0.0, "failed")]])
    s = graded_pooled({"adept_emotion_female": emo, "adept_syntactic_phrasing_male": single})
    pd = s["prosody_distance"]
    assert pd.n == 4 and pd.n_failed == 1 and pd.mean == pytest.approx(0.55)
    assert pd.ci_low <= pd.mean <= pd.ci_high
    assert s["f0_rmse_st"].n == 0 and s["f0_rmse_st"].n_undefined == 4
    assert math.isnan(s["f0_rmse_st"].mean)


def test_report_prints_graded_figures(tmp_path, capsys):
    from adept_eval.cli import main

    data = _with_graded(_results("sys", {"adept_emotion_female": 0.5}), 0.42)
    _run(tmp_path, "sys", "2026-01-01T00-00-00", data)
    _samples_file(tmp_path / "sys", "adept_emotion_female",
                  [[_stimulus("emotion/anger/ad00_0001", 0.42),
                    _stimulus("emotion/fear/ad00_0002", 0.5)]])
    run = load_run(tmp_path)
    assert isinstance(run, Run) and "adept_emotion_female" in run.samples
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    pooled = next(r for r in rows if r[:2] == ["prosody_distance", "all"])
    task = next(r for r in rows if r[:2] == ["prosody_distance", "emotion_female"])
    assert pooled[2] == "0.460" and pooled[4:6] == ["2", "0"]
    assert task[2] == "0.420" and task[4:6] == ["10", "1"]


def test_vstyle_overall_is_the_mean_of_the_category_scores_with_an_interval():
    """The overall (the ``vstyle_<language>`` group's score: categories 0.25 each, each the
    weighted mean of its subcategories' means over those present) with its stratified interval."""
    import math
    import statistics

    from adept_eval.corpora.vstyle import CATEGORIES, subcategory_weights
    from adept_eval.results.compare import JudgedItem
    from adept_eval.results.report import vstyle_overall

    weights = subcategory_weights()
    items, expected = [], []
    for c, (category, subs) in enumerate(CATEGORIES.items()):
        present = subs[:-1] if len(subs) > 2 else subs  # one subcategory absent where possible
        means = {}
        for s, sub in enumerate(present):
            scores = [1 + (c + s + k) % 5 for k in range(3)]
            means[sub] = statistics.mean(scores)
            items += [JudgedItem(f"{category}-{sub}-{k}", f"vstyle_en_{category}", sub,
                                 weights[(category, sub)], float(v), 0)
                      for k, v in enumerate(scores)]
        total = sum(weights[(category, s)] for s in present)
        expected.append(sum(weights[(category, s)] * m for s, m in means.items()) / total)
    items.append(JudgedItem("x", "vstyle_en_empathy", "anger", weights[("empathy", "anger")],
                            math.nan, 1))
    overall = vstyle_overall(items)["en"]
    assert overall["score"] == pytest.approx(statistics.mean(expected))
    assert overall["ci_low"] < overall["score"] < overall["ci_high"]
    assert (overall["n"], overall["failed"], overall["categories"], overall["unjudged"]) == \
        (len(items) - 1, 1, 4, [])


def test_listener_distance_states_no_direction_across_systems():
    """``listener_distance`` ("lower is better") rated a flat system at chance below one
    carrying the right prosody: its units are how far the natural candidates lie apart, so
    it does not order systems. The report states no "better" for it; prosody_distance, which
    does order them, keeps "lower"."""
    from rich.table import Table

    from adept_eval.results.report import _add_pooled_graded_rows

    figures = {name: graded.Summary(name, 1.0, 0.5, 1.5, 10, 0, 0)
               for name in ("listener_distance", "prosody_distance")}
    table = Table()
    for col in ("figure", "tasks", "mean", "95% CI", "n", "failed", "undef", "better"):
        table.add_column(col)
    assert _add_pooled_graded_rows(table, figures) == 2
    better = dict(zip(table.columns[0]._cells, table.columns[-1]._cells))
    assert better == {"listener_distance": "none: diagnostic", "prosody_distance": "lower"}
    assert not graded.METRIC_BY_NAME["listener_distance"].ranks_systems
    assert "compare systems by prosody_distance" in graded.METRIC_BY_NAME[
        "listener_distance"].description


def test_local_and_hub_boards_give_the_same_prosody_distance_interval(tmp_path):
    """The board read from a folder pooled the distance from the logged samples over all
    sentences at once, the Hub board (results only) from the tasks' own intervals: two
    intervals for one run. Both now pool the tasks' intervals (stratified, the tasks' t on
    their 4 df read back): with one task, its own interval."""
    data = _with_graded(_results("sys", {"adept_emotion_female": 0.5}), 0.42)
    path = _run(tmp_path, "sys", "2026-01-01T00-00-00", data).results_path
    stimuli = [_stimulus("emotion/anger/ad00_0001", 0.1), _stimulus("emotion/fear/ad00_0002", 0.9)]
    (tmp_path / "sys" / "samples_adept_emotion_female_2026-01-01T00-00-00.jsonl").write_text(
        "\n".join(json.dumps({"acc": {
            "question_id": f"adept_emotion_female/ad00_000{i}/anger", "graded": stimuli,
            "correct": 1, "n": 1, "sub": "anger", "chance": 0.25}}) for i in range(1, 3)))
    local_run = load_run(tmp_path / "sys")
    assert local_run.samples  # the folder's run carries its samples, the Hub's does not
    local = build([local_run])[0]
    hub = build([Run(path, json.loads(path.read_text()))])[0]
    figures = ("prosody_distance", "prosody_distance_ci_low", "prosody_distance_ci_high")
    got = [local.figure("adept", f) for f in figures]
    assert got == pytest.approx([hub.figure("adept", f) for f in figures])
    assert got == pytest.approx([0.42, 0.32, 0.52])
    # two tasks: sum (n_t / N)^2 se_t^2 with se_t = half-width / t(4), Satterthwaite's df
    from scipy.stats import t as student_t

    both = _with_graded(_results("two", {"adept_emotion_female": 0.5,
                                         "adept_emotion_male": 0.5}), 0.42)
    both["results"]["adept_emotion_male"].update({
        "prosody_distance,none": 0.62, "prosody_distance_ci_low,none": 0.42,
        "prosody_distance_ci_high,none": 0.82, "graded_n,none": 30})
    row = build([_run(tmp_path, "two", "2026-01-01T00-00-01", both)])[0]
    t4 = student_t.ppf(0.975, 4)
    shares = [(10 / 40 * 0.1 / t4) ** 2, (30 / 40 * 0.2 / t4) ** 2]
    df = sum(shares) ** 2 / sum(s ** 2 / 4 for s in shares)
    half = student_t.ppf(0.975, df) * sum(shares) ** 0.5
    mean = (10 * 0.42 + 30 * 0.62) / 40
    assert [row.figure("adept", f) for f in figures] == pytest.approx(
        [mean, mean - half, mean + half])
