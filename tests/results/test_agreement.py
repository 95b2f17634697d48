"""A listener's answers against people's (``adept_eval.results.agreement``): the figures on
runs whose answers are known, worked out here by hand (matches counted, modes found, pairs of
systems ordered, permutations counted), and every refusal naming its file."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats as sps

from adept_eval.errors import AgreementError
from adept_eval.results import agreement as ag
from adept_eval.scoring import stats
from run_files import write_answers_run as write_run

EMO = "adept_emotion_female"
TON = "adept_marked_tonicity_female"
PEOPLE_ANSWERS = [  # question, sentence, right answer, three people's choices
    ("q1", "s1", "A", ["A", "A", "B"]),
    ("q2", "s1", "B", ["B", "C", "C"]),
    ("q3", "s2", "C", ["C", "D", None]),  # a blank answer, and C and D tied for most frequent
    ("q4", "s2", "A", ["A", "A", "A"]),
]
MACHINE_ANSWERS = {"q1": "A", "q2": "B", "q3": "C", "q4": None}  # q4: the listener failed


def _people(answers=PEOPLE_ANSWERS, task=EMO):
    return [(task, f"{task}/{q}", s, right, list(zip(("p1", "p2", "p3"), chosen)))
            for q, s, right, chosen in answers]


def _machine(answers=MACHINE_ANSWERS, task=EMO, right=None):
    right = right or {q: r for q, _, r, _ in PEOPLE_ANSWERS}
    sentence = {q: s for q, s, _, _ in PEOPLE_ANSWERS}
    return [(task, f"{task}/{q}", sentence[q], right[q], [("", a)]) for q, a in answers.items()]


def test_one_system_by_hand(tmp_path):
    write_run(tmp_path, "people/sys", "sys", _people(), people=True)
    write_run(tmp_path, "out/sys", "sys", _machine(), people=False)
    result = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")], replicates=50)
    (entry,) = result["listeners"]
    cell = entry["systems"]["sys"]["pooled"]
    # matches per question: q1 2 (A, A), q2 1 (B), q3 1 (C; the blank matches nothing), q4 0
    # (failed): 4 of 12 answers
    assert cell["per_participant"]["agreement"] == pytest.approx(4 / 12)
    assert cell["per_participant"]["n"] == 12
    assert cell["per_participant"]["chance"] == pytest.approx(0.2)
    # majority: q1 A = A (1), q2 C != B (0), q3 C and D tied (1/2), q4 failed (0)
    assert cell["majority"]["agreement"] == pytest.approx(1.5 / 4)
    assert cell["majority"]["n"] == 4
    # accuracies over the same questions: people 2 + 1 + 1 + 3 of 12, the listener 3 of 4
    assert cell["acc_people"] == pytest.approx(7 / 12)
    assert cell["acc_machine"] == pytest.approx(3 / 4)
    assert cell["acc_people_ci"][0] < 7 / 12 < cell["acc_people_ci"][1]
    # people with each other: ordered pairs of participants answering alike, q1 2 (the two
    # A's), q2 2 (the two C's), q3 0 (the blank matches nobody), q4 6, of 6 pairs per question
    assert cell["people_with_people"]["agreement"] == pytest.approx(10 / 24)
    assert cell["people_with_people"]["pairs"] == 24
    assert (cell["questions"], cell["sentences"], cell["responses"], cell["participants"],
            cell["failed"]) == (4, 2, 12, 3, 1)
    # the intervals are the clustered ones: two-way over people and sentences, by sentence
    matches = {"q1": (1, 1, 0), "q2": (1, 0, 0), "q3": (1, 0, 0), "q4": (0, 0, 0)}
    trials = [stats.Trial(p, q, bool(m)) for q, ms in matches.items()
              for p, m in zip(("p1", "p2", "p3"), ms)]
    two_way = stats.two_way_proportion(trials, {"q1": "s1", "q2": "s1", "q3": "s2", "q4": "s2"},
                                       null=0.2)
    assert cell["per_participant"]["ci_low"] == pytest.approx(two_way.ci_low)
    assert cell["per_participant"]["p_chance"] == pytest.approx(two_way.p_value)
    by_sentence = stats.clustered_proportion([1, 0, 0.5, 0], [1] * 4, ["s1", "s1", "s2", "s2"],
                                             null=0.2)
    assert cell["majority"]["ci_high"] == pytest.approx(by_sentence.ci_high)
    assert list(entry["systems"]["sys"]["tasks"]) == [EMO]
    assert "One system" in entry["ranking"]["verdict"]


def test_per_task_cells_and_chance_weighted_by_answers(tmp_path):
    tonicity = [("t1", "s3", "A", ["A", "B", "A"]), ("t2", "s4", "B", ["B", "B", "A"])]
    write_run(tmp_path, "people", "sys", _people() + _people(tonicity, TON), people=True)
    sentence = {"t1": "s3", "t2": "s4"}
    machine = _machine() + [(TON, f"{TON}/{q}", sentence[q], r, [("", "A")])
                            for q, _, r, _ in tonicity]
    write_run(tmp_path, "out", "sys", machine, people=False)
    result = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")], replicates=20)
    s = result["listeners"][0]["systems"]["sys"]
    assert set(s["tasks"]) == {EMO, TON}
    # tonicity: the listener says A; people A, B, A then B, B, A: 3 of 6 match
    assert s["tasks"][TON]["per_participant"]["agreement"] == pytest.approx(3 / 6)
    assert s["pooled"]["per_participant"]["agreement"] == pytest.approx(7 / 18)
    # chance over the answers: 12 at 1/5, 6 at 1/2
    assert s["pooled"]["per_participant"]["chance"] == pytest.approx((12 * 0.2 + 6 * 0.5) / 18)
    assert s["tasks"][TON]["majority"]["agreement"] == pytest.approx(0.5)  # t1 A, t2 B


def test_majority_credit_splits_ties():
    q = ag.Answered("q", EMO, "s", 0.2, "A", 0, (("p1", "A"), ("p2", "B"), ("p3", None)))
    assert ag.majority_credit(q, "A") == 0.5 and ag.majority_credit(q, "B") == 0.5
    assert ag.majority_credit(q, "C") == 0 and ag.majority_credit(q, None) == 0
    blank = ag.Answered("q", EMO, "s", 0.2, "A", 0, (("p1", None),))
    assert ag.majority_credit(blank, "A") == 0


def test_kendall_tau_b_matches_scipy_with_ties():
    for x, y in [([1, 2, 3, 4], [1, 3, 2, 4]), ([1, 1, 2, 3], [2, 1, 1, 3]),
                 ([0.9, 0.7, 0.5], [0.2, 0.4, 0.4])]:
        assert ag.kendall_tau_b(x, y) == pytest.approx(sps.kendalltau(x, y).statistic)
    assert math.isnan(ag.kendall_tau_b([1, 1], [1, 2]))


def test_order_p_counts_permutations_by_hand():
    # 4 systems, one pair swapped: tau (5 - 1) / 6; of the 24 orders, those with at most one
    # swapped pair (the identity and the 3 adjacent swaps) reach it: p = 4/24
    assert ag.kendall_tau_b([0.9, 0.7, 0.5, 0.3], [1.0, 0.75, 0.25, 0.5]) == pytest.approx(4 / 6)
    assert ag.order_p([0.9, 0.7, 0.5, 0.3], [1.0, 0.75, 0.25, 0.5]) == pytest.approx(4 / 24)
    # the same order of 3 systems: at best 1/3! however exact the agreement
    assert ag.order_p([0.9, 0.5, 0.3], [0.8, 0.6, 0.1]) == pytest.approx(1 / 6)
    assert ag.order_p([0.9, 0.5], [0.8, 0.6]) == pytest.approx(1 / 2)
    # ties on the listener's side: 3 distinct orders of (0.5, 0.5, 0.9) by value, each twice
    # among the 6 permutations; tau-b reaches its observed maximum in the one order (2 of 6)
    assert ag.order_p([0.9, 0.5, 0.3], [0.9, 0.5, 0.5]) == pytest.approx(2 / 6)


def test_order_p_beyond_exact_counting_draws_permutations():
    people = list(range(10, 0, -1))
    p = ag.order_p(people, people)  # the same order of 10 systems: no draw of 20,000 reaches it
    assert p == pytest.approx(1 / 20_001)
    shuffled = [3, 9, 1, 7, 10, 2, 8, 4, 6, 5]
    assert 0.05 < ag.order_p(people, shuffled) <= 1


def _system_runs(tmp_path, name, people_right, machine_right, sentences=6, participants=4):
    """One system's people's and listener's runs on a marked-tonicity task: each sentence one
    question, the people right on ``people_right`` of every participant's answers per
    sentence pattern, the listener right on the first ``machine_right`` sentences."""
    people, machine = [], []
    for i in range(sentences):
        qid, s = f"{TON}/q{i}", f"s{i}"
        chosen = [("A" if (i + j) % participants < people_right else "B")
                  for j in range(participants)]
        people.append((TON, qid, s, "A", [(f"p{j}", c) for j, c in enumerate(chosen)]))
        machine.append((TON, qid, s, "A", [("", "A" if i < machine_right else "B")]))
    write_run(tmp_path, f"people/{name}", name, people, people=True)
    write_run(tmp_path, f"out/{name}", name, machine, people=False)


def test_ranking_of_systems_by_hand(tmp_path):
    # people's accuracy 4/4, 3/4, 2/4, 1/4 of the answers; the listener's 6, 5, 2, 3 of 6
    # questions: one pair (C, D) in the other order
    for name, p, m in (("a", 4, 6), ("b", 3, 5), ("c", 2, 2), ("d", 1, 3)):
        _system_runs(tmp_path, name, p, m)
    result = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")], replicates=400)
    r = result["listeners"][0]["ranking"]
    assert [s["system"] for s in r["systems"]] == ["a", "b", "c", "d"]
    assert [s["acc_people"] for s in r["systems"]] == pytest.approx([1, 0.75, 0.5, 0.25])
    assert [s["acc_machine"] for s in r["systems"]] == pytest.approx([1, 5 / 6, 1 / 3, 0.5])
    assert r["kendall_tau_b"] == pytest.approx(4 / 6)
    assert (r["concordant"], r["discordant"], r["tied"], r["pairs"]) == (5, 1, 0, 6)
    assert r["p_order"] == pytest.approx(4 / 24) and r["smallest_p"] == pytest.approx(1 / 24)
    assert -1 <= r["ci_low"] <= r["kendall_tau_b"] <= r["ci_high"] <= 1
    assert (r["participants"], r["sentences"]) == (4, 6)
    assert "not shown to rank these 4 systems" in r["verdict"]
    again = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")], replicates=400)
    assert again["listeners"][0]["ranking"]["ci_low"] == r["ci_low"]  # seeded


def test_few_systems_say_little(tmp_path):
    for name, p, m in (("a", 4, 6), ("b", 2, 3)):
        _system_runs(tmp_path, name, p, m)
    r = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")],
                     replicates=50)["listeners"][0]["ranking"]
    assert r["kendall_tau_b"] == 1.0 and r["p_order"] == 0.5
    assert "only 2 systems a rank correlation says little" in r["verdict"]
    assert "0.5 (1/2!)" in r["verdict"]


def test_bootstrap_interval_covers_a_listener_that_ranks_as_people_do(tmp_path):
    """Eight systems ordered alike on both sides, far apart: tau 1, the order's p 1/8!, and
    the resampled tau stays positive."""
    for i in range(8):
        _system_runs(tmp_path, f"s{i}", people_right=i + 1, machine_right=i, sentences=8,
                     participants=8)
    r = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")],
                     replicates=300)["listeners"][0]["ranking"]
    assert r["kendall_tau_b"] == 1.0 and r["ci_low"] > 0
    assert r["p_order"] == pytest.approx(1 / math.factorial(8))
    assert "ranks these 8 systems as people do more closely than chance" in r["verdict"]


# ----------------------------------------------------------------------------- refusals
def _both(tmp_path, **machine):
    write_run(tmp_path, "people/sys", "sys", _people(), people=True)
    return write_run(tmp_path, "out/x", machine.pop("system", "sys"),
                     machine.pop("questions", _machine()), people=False, **machine)


def _refused(tmp_path, *paths) -> str:
    with pytest.raises(AgreementError) as e:
        ag.agreement([str(tmp_path / p) for p in paths or ("people", "out")], replicates=10)
    return str(e.value)


def test_a_run_of_another_system_is_refused(tmp_path):
    path = _both(tmp_path, system="other")
    msg = _refused(tmp_path)
    assert str(path) in msg and "no people's answers to 'other' are given" in msg


def test_a_run_of_other_tasks_is_refused(tmp_path):
    path = _both(tmp_path, questions=_machine(task=TON))
    msg = _refused(tmp_path)
    assert str(path) in msg and "none of its tasks (adept_marked_tonicity_female)" in msg


def test_no_question_in_common_is_refused(tmp_path):
    other = [(t, q + "x", s, r, c) for t, q, s, r, c in _machine()]
    path = _both(tmp_path, questions=other)
    msg = _refused(tmp_path)
    assert str(path) in msg and "no question both answered" in msg


def test_a_run_without_logged_samples_is_refused(tmp_path):
    path = _both(tmp_path, samples=False)
    msg = _refused(tmp_path)
    assert str(path) in msg and "--log_samples" in msg


def test_only_people_or_only_listeners_is_refused(tmp_path):
    _both(tmp_path)
    assert "no automatic listener's run" in _refused(tmp_path, "people")
    assert "no people's run" in _refused(tmp_path, "out")


def test_runs_of_another_corpus_are_refused(tmp_path):
    path = _both(tmp_path, sha="b" * 64)
    msg = _refused(tmp_path)
    assert str(path) in msg and "another corpus" in msg


def test_people_s_choices_not_one_per_participant_are_refused(tmp_path):
    path = write_run(tmp_path, "people/sys", "sys", _people(), people=True)
    write_run(tmp_path, "out/sys", "sys", _machine(), people=False)
    samples = path.parent / f"samples_{EMO}_2026-01-01T00-00-00.jsonl"
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[1]["acc"]["answer"] = lines[1]["acc"]["answer"][:2]  # two letters, three people
    samples.write_text("\n".join(map(json.dumps, lines)))
    msg = _refused(tmp_path)
    assert f"{samples}:2" in msg and "2 chosen letters for 3 participants" in msg


def test_an_older_run_of_the_same_system_and_listener_is_named(tmp_path):
    write_run(tmp_path, "people/sys", "sys", _people(), people=True)
    old = write_run(tmp_path, "out/sys", "sys", _machine(), people=False,
                    stamp="2025-01-01T00-00-00")
    data = json.loads(old.read_text())
    data["date"] = 1.0
    old.write_text(json.dumps(data))
    new = write_run(tmp_path, "out/sys", "sys", _machine(), people=False)
    result = ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")], replicates=10)
    assert result["listeners"][0]["systems"]["sys"]["machine"] == str(new)
    assert any(str(old) in n and "the newest is used" in n for n in result["notes"])


def test_json_writes_nan_as_null():
    assert ag.to_json({"a": [math.nan, 1.0], "b": {"c": math.nan}}) == {"a": [None, 1.0],
                                                                       "b": {"c": None}}


def test_a_responses_file_beside_a_people_s_run_of_its_system_is_refused(tmp_path):
    _both(tmp_path)
    with pytest.raises(AgreementError) as e:
        ag.agreement([str(tmp_path / "people"), str(tmp_path / "out")],
                     responses={"sys": str(tmp_path / "answers.csv")})
    assert f"{tmp_path / 'answers.csv'}: people's answers for 'sys'" in str(e.value)
    assert "give one of the two" in str(e.value)


def test_responses_file_read_directly(corpus, tmp_path):
    """People's answers read from the export keep each participant's choice, blank included."""
    from adept_eval.corpora.questions import all_questions

    q1, q2 = all_questions(corpus)[TON][:2]
    (tmp_path / "answers.csv").write_text(
        "participant,task,question_id,answer\n"
        f"p1,{TON},{q1.question_id},A\np2,{TON},{q1.question_id},B\n"
        f"p1,{TON},{q2.question_id},\n")
    source = ag.responses_source("sys", tmp_path / "answers.csv", corpus)
    assert source.people and source.tasks == (TON,) and source.corpus_sha256 == corpus.fingerprint
    got = ag.answered(source)
    assert set(got) == {q1.question_id, q2.question_id}
    assert got[q1.question_id].choices == (("p1", "A"), ("p2", "B"))
    assert got[q2.question_id].choices == (("p1", None),)
    assert got[q1.question_id].sentence == f"{q1.speaker}_{q1.sentence_id}"
    assert got[q1.question_id].correct_answer == q1.answer_letter
