"""Runs of people (the ``human`` listener) are recognised by the listener's kind, not by its
label: the label also names the responses file and counts ("human participants=8
responses=660 responses_file=answers-A.csv"), so comparing it with "human" never matched. The
leaderboard then gave every people run a section of its own (each ranked 1, never tested
against the others), and without logged samples report and leaderboard gave people's pooled
accuracy an exact binomial interval, as if every response were an independent trial."""

from __future__ import annotations

import math

from adept_eval.corpora import spec
from adept_eval.cli import main
from adept_eval.results.leaderboard import build, heading, sections
from test_structure import _results, _run


def _people(system: str, acc: float, participants: int, responses_file: str) -> dict:
    data = _results(system, {t: acc for t in spec.TASKS}, listener="human")
    data["adept_eval"]["suites"]["adept"]["scorer"] = {
        "listener": "human", "participants": participants, "responses": 165 * participants,
        "responses_file": responses_file}
    for t, r in data["results"].items():
        r["n,none"] = spec.TASKS[t].n_questions * participants
    return data


def test_people_runs_of_two_systems_share_one_ranked_section(tmp_path):
    runs = [_run(tmp_path, "sys-a", "2026-01-01T00-00-00", _people("sys-a", 0.8, 8, "ans-a.csv")),
            _run(tmp_path, "sys-b", "2026-01-01T00-00-01", _people("sys-b", 0.6, 10, "ans-b.csv")),
            _run(tmp_path, "machine", "2026-01-01T00-00-02",
                 _results("machine", {t: 0.7 for t in spec.TASKS}))]
    assert all(r.people for r in runs[:2]) and not runs[2].people
    rows = {r.system: r for r in build(runs)}
    ranked, apart = sections(list(rows.values()), "adept")
    assert not apart
    people = next(m for m in ranked if {r.system for r in m} == {"sys-a", "sys-b"})
    assert [r.figure("adept", "rank") for r in people] == [1, 2]
    assert "`human (participants may differ between runs)`" in heading(people, "adept")
    # no logged samples: people's responses are not independent trials, so no interval, and
    # no two-proportion test over them (it would pretend they were): the pair counts as tied
    for r in people:
        assert r.figure("adept", "ci_low") is None or math.isnan(r.figure("adept", "ci_low"))
        assert r.figure("adept", "rank_range") == "1-2"
        assert "not tested (people's runs" in r.figure("adept", "tie_method")
    # a machine listener's results alone: the exact interval at the largest design effect its
    # sentences can have (60 sentences of 165 questions), wider than over the questions
    machine = rows["machine"]
    assert machine.figure("adept", "rank") == 1
    assert 0.5 < machine.figure("adept", "ci_low") < 0.7 < machine.figure("adept", "ci_high")


def test_report_gives_people_without_samples_no_binomial_interval(tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    run = _run(tmp_path, "sys-a", "2026-01-01T00-00-00", _people("sys-a", 0.8, 8, "ans-a.csv"))
    assert main(["report", str(run.results_path)]) == 0
    out = capsys.readouterr().out
    pooled = next(line for line in out.splitlines() if line.strip().startswith("adept "))
    assert pooled.split()[-1] == "---", pooled
