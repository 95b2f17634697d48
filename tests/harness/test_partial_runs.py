"""A run made with lm-eval's --limit answers only some questions of each task: whatever task
set it covers, it is partial - never ranked beside complete runs, never reported complete."""

from __future__ import annotations

from adept_eval import identity
from adept_eval.corpora import spec
from adept_eval.cli import main
from adept_eval.results.leaderboard import build
from run_files import _results, _run


def _limited(data: dict, limit: int) -> dict:
    """lm-eval's own record of a run with --limit: each task's documents held and run."""
    data["n-samples"] = {t: {"original": spec.TASKS[t].n_questions,
                             "effective": min(limit, spec.TASKS[t].n_questions)}
                         for t in data["results"]}
    for t, r in data["results"].items():
        r["n,none"] = min(limit, spec.TASKS[t].n_questions)
    return data


def test_a_limited_run_records_itself_as_partial():
    results = _limited(_results("x", {t: 1.0 for t in spec.TASKS}, identity=False), 3)
    suite = identity.attach(results, "adept-natural")["adept_eval"]["suites"]["adept"]
    assert len(suite["tasks"]) == 12 and suite["complete"] is False
    assert suite["limited"] == {"documents": 36, "of": 165}
    whole = _results("x", {t: 1.0 for t in spec.TASKS}, identity=False)
    whole["n-samples"] = {t: {"original": spec.TASKS[t].n_questions,
                              "effective": spec.TASKS[t].n_questions} for t in spec.TASKS}
    assert identity.attach(whole, "adept-natural")["adept_eval"]["suites"]["adept"]["complete"]


def test_leaderboard_does_not_rank_a_limited_run_beside_complete_ones(tmp_path):
    """Results written before adept-eval looked at --limit say "complete": true; lm-eval's
    n-samples decides. A run of 3 questions a task, all right, was ranked first beside (and
    tied with) a complete run of 165."""
    full = {t: 1.0 for t in spec.TASKS}
    runs = [_run(tmp_path, "complete", "2026-01-01T00-00-00", _results("complete", full)),
            _run(tmp_path, "worse", "2026-01-01T00-00-01",
                 _results("worse", {t: 0.5 for t in spec.TASKS})),
            _run(tmp_path, "limited", "2026-01-01T00-00-02",
                 _limited(_results("limited", full), 3))]
    assert runs[2].identity.suites["adept"].complete is False
    rows = {r.system: r for r in build(runs)}
    assert rows["complete"].figure("adept", "rank") == 1 and rows["worse"].figure("adept", "rank") == 2
    assert rows["limited"].figure("adept", "rank") is None
    assert rows["limited"].figure("adept", "unranked") == "partial: run with --limit (36 of 165 questions)"


def test_report_says_a_limited_run_is_partial(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    run = _run(tmp_path, "limited", "2026-01-01T00-00-00",
               _limited(_results("limited", {t: 1.0 for t in spec.TASKS}), 3))
    assert main(["report", str(run.results_path)]) == 0
    out = capsys.readouterr().out
    assert "12 tasks (partial: run with --limit, 36 of 165 questions)" in out
    assert "(complete)" not in out


def test_a_limited_run_is_refused_for_a_model_card_before_any_network_call(tmp_path,
                                                                           monkeypatch):
    """write_model_results from Python refuses as publish does (tests/results/test_publish.py runs the
    command against the loopback Hub): the refusal names the run and what it answered, and
    comes before the Hub is asked anything - here a Hub that is down."""
    import socket

    import pytest

    from adept_eval.errors import PublishError
    from adept_eval.results.publish import write_model_results

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    run = _run(tmp_path, "limited", "2026-01-01T00-00-00",
               _limited(_results("limited", {t: 1.0 for t in spec.TASKS}), 3))
    with pytest.raises(PublishError, match=r"^limited \(.*results_2026-01-01T00-00-00\.json\) "
                       r"is a partial run: made with lm-eval's --limit, it answered 36 of 165 "
                       r"questions of its 12 ADEPT tasks"):
        write_model_results(run, "me/limited", results_repo="me/results", path_in_repo="runs/x",
                            benchmark_dataset="me/ADEPT")
