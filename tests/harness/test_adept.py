"""The ADEPT harness (``harness.adept``): per-question records and their aggregation (accuracy
over responses, CI, test vs chance), and the whole-task scoring step (``score_task``): one map
of the system's samples, ``answer_many``, graded figures, and failures that stay counted
failures."""

import json
import math
import sys

import pytest
from scipy.stats import binomtest

from adept_eval.corpora import spec
from adept_eval.harness import adept as harness
from adept_eval.scoring import recognition
from conftest import run_lm_eval


def _items(pattern, sub="fear", chance=0.2):
    return [{"correct": c, "n": n, "sub": sub, "chance": chance, "failed": f}
            for c, n, f in pattern]


def test_accuracy_is_over_all_responses():
    items = _items([(3, 4, 0), (0, 1, 0), (5, 5, 0)])  # unequal responses per question
    assert harness.accuracy(items) == 8 / 10
    assert harness.n_responses(items) == 10


def test_interval_and_test_against_chance_match_scipy():
    """Questions of no shared sentence (each its own cluster: no design effect) get
    Clopper-Pearson's interval and the binomial test it inverts (both tails doubled)."""
    items = _items([(1, 1, 0)] * 7 + [(0, 1, 1)] * 3, chance=0.25)
    central = 2 * min(binomtest(7, 10, 0.25, alternative="greater").pvalue,
                      binomtest(7, 10, 0.25, alternative="less").pvalue)
    ci = binomtest(7, 10).proportion_ci(0.95, method="exact")
    assert math.isclose(harness.p_chance(items), central)
    assert math.isclose(harness.ci_low(items), ci.low) and math.isclose(harness.ci_high(items), ci.high)
    assert harness.n_failed(items) == 3 and harness.chance(items) == 0.25


def test_subcategory_accuracy_filters():
    items = _items([(1, 1, 0), (0, 1, 0)], sub="fear") + _items([(1, 1, 0)], sub="joy")
    assert harness.SUBCATEGORY_ACCURACY["acc_fear"](items) == 0.5
    assert harness.SUBCATEGORY_ACCURACY["acc_joy"](items) == 1.0
    assert math.isnan(harness.SUBCATEGORY_ACCURACY["acc_anger"](items))


def test_metric_names_follow_tutorial():
    assert "acc_fear" in harness.metric_names("adept_emotion_female")
    assert "acc_sarcasm" not in harness.metric_names("adept_propositional_attitude_female")
    assert "acc_sarcasm" in harness.metric_names("adept_propositional_attitude_male")
    # classes without subcategories are scored only as a whole
    assert not [m for m in harness.metric_names("adept_syntactic_phrasing_male")
                if m.startswith("acc_") and m not in ("acc_ci_low", "acc_ci_high")]


def test_secrets_are_refused_as_listener_options():
    import pytest

    from adept_eval.harness import settings
    from adept_eval.scoring.listeners import LISTENERS, Listener, register_listener

    @register_listener("test-keyed")
    class Keyed(Listener):
        def __init__(self, api_key: str = "", corpus=None):
            pass

    try:
        assert "api_key" in LISTENERS.options("test-keyed")  # declared, hence its key...
        share = settings.split({"path": "x"}, suite="adept", listener="test-keyed")
        assert share.listener == {}
        with pytest.raises(ValueError, match="secrets"):  # ...but refused as an option
            settings.split({"api_key": "abc"}, suite="adept", listener="test-keyed")
    finally:
        LISTENERS.unregister("test-keyed")


def test_human_responses_get_intervals_clustered_by_participant_and_question():
    """30 answers from 3 people are not 30 independent trials: one person who is always right
    and two who guess make a wider interval than Clopper-Pearson over the pooled responses."""
    from adept_eval.harness import adept as harness
    from adept_eval.scoring import stats

    records = []
    for q in range(10):
        responses = (("p1", 1), ("p2", int(q % 3 == 0)), ("p3", int(q % 4 == 0)))
        records.append(harness.QuestionRecord(
            question_id=f"q{q}", sub="joy", target="joy", correct_answer="A", chance=0.25,
            listener="human", correct=sum(ok for _, ok in responses), n=3,
            responses=responses).to_json())
    k, n = recognition.counts(records)
    exact = stats.clopper_pearson(k, n)
    low, high = harness.ci_low(records), harness.ci_high(records)
    assert low <= k / n <= high
    assert high - low > exact[1] - exact[0]
    # the test against chance is clustered too: with one reliable person and two guessers the
    # evidence is far weaker than 17/30 independent trials (exact binomial p = 0.0002)
    p_clustered, p_independent = harness.p_chance(records), stats.binomial_p(k, n, 0.25)
    assert (k, n) == (17, 30) and p_independent < 0.001
    assert 0.05 < p_clustered < 1
    # a machine listener (one response, no participants) keeps the exact interval
    machine = [dict(r, responses=[], correct=1, n=1) for r in records]
    assert (harness.ci_low(machine), harness.ci_high(machine)) == stats.clopper_pearson(10, 10)


def test_a_question_one_person_answered_is_in_the_interval_as_in_the_accuracy():
    """The clustered interval rests on the same responses as the accuracy beside it: a question
    only one participant answered is still that participant's trial."""
    from adept_eval.harness import adept as harness
    from adept_eval.scoring.listeners import Answer, Response
    from adept_eval.corpora.questions import Question

    records = []
    for i, people in enumerate([("p1", "p2"), ("p1",), ("p2",)]):
        q = Question(question_id=f"q{i}", task="adept_emotion_female", cls="emotion",
                     speaker="female", design="single", sentence_id="s", text="t", question="?",
                     stimuli=("x",), stimulus_subcategories=("joy",), choices=("joy", "fear"),
                     choice_subcategories=("joy", "fear"), answer=0, target="joy")
        base = dict(question_id=q.question_id, sub="joy", target="joy", correct_answer="A",
                    chance=0.5, listener="human")
        answer = Answer(tuple(Response(i % 2, participant=p) for p in people))
        records.append(harness._answered(q, base, answer, per_participant=True).to_json())
    assert recognition.counts(records) == (3, 4)
    given = recognition.trials(records)
    assert len(given) == 4 and sum(t.correct for t in given) == 3


def test_every_participant_s_choice_is_recorded():
    """``adept-eval agreement`` sets a listener's answer against each person's choice, so a
    question answered by 60 people records 60 chosen letters, in the order of ``responses``."""
    from adept_eval.corpora.questions import Question
    from adept_eval.scoring.listeners import Answer, Response

    q = Question(question_id="q", task="adept_emotion_female", cls="emotion", speaker="female",
                 design="single", sentence_id="s", text="t", question="?", stimuli=("x",),
                 stimulus_subcategories=("joy",), choices=("joy", "fear"),
                 choice_subcategories=("joy", "fear"), answer=0, target="joy")
    base = dict(question_id="q", sub="joy", target="joy", correct_answer="A", chance=0.5,
                listener="human")
    people = Answer(tuple(Response(i % 2, participant=f"p{i}") for i in range(60)))
    record = harness._answered(q, base, people, per_participant=True)
    assert record.answer == tuple("AB" * 30)
    assert [who for who, _ in record.responses] == [f"p{i}" for i in range(60)]


def test_pooled_groups_of_people_get_the_clustered_interval_or_none(tmp_path):
    """A group's pooled accuracy (adept-eval report, the leaderboard) rests on the same rule as
    a task's: from logged samples people's responses get the two-way cluster bootstrap, never
    Clopper-Pearson over responses as if independent; without samples, no interval at all."""
    import json as json_module

    from adept_eval.harness import adept as harness
    from adept_eval.scoring import stats
    from adept_eval.results.report import pooled_recognition

    tasks = ["adept_emotion_female", "adept_emotion_male"]
    samples, results, everything = {}, {}, []
    for t in tasks:
        records = []
        for q in range(8):
            responses = (("p1", 1), ("p2", int(q % 2 == 0)), ("p3", 0))
            records.append(harness.QuestionRecord(
                question_id=f"{t}/q{q}", sub="joy", target="joy", correct_answer="A",
                chance=0.25, listener="human", correct=sum(ok for _, ok in responses), n=3,
                responses=responses).to_json())
        path = tmp_path / f"samples_{t}.jsonl"
        path.write_text("\n".join(json_module.dumps({"acc": r}) for r in records) + "\n")
        samples[t] = path
        k, n = recognition.counts(records)
        results[t] = {"acc,none": k / n, "n,none": n}
        everything += records
    k, n, low, high = pooled_recognition(results, tasks, samples, people=True)
    r = recognition.recognition(everything)
    assert (k, n, low, high) == (r.correct, r.n, r.ci_low, r.ci_high) == (k, 48, low, high)
    exact = stats.clopper_pearson(k, n)
    assert high - low > exact[1] - exact[0]  # wider than the responses taken as independent
    k2, n2, low2, high2 = pooled_recognition(results, tasks, None, people=True)
    assert (k2, n2) == (k, n) and math.isnan(low2) and math.isnan(high2)
    # a machine listener's results alone: the largest design effect the sentences can give
    # (each task's 24 responses over 5 sentences), never the questions taken as independent
    bound = pooled_recognition(results, tasks, None, people=False)[2:]
    assert bound[1] - bound[0] > exact[1] - exact[0]
    from adept_eval.results.report import sentence_design_effect

    deff = sentence_design_effect({t: 24 for t in tasks})
    assert deff == pytest.approx(24 / 5)
    assert bound == pytest.approx(stats.design_effect_interval(k, n, deff))
    # the tasks' own intervals in the results change nothing (pooled as normal standard
    # errors, the skewed exact intervals near 1 gave narrower intervals than either method)
    for t in tasks:
        results[t].update({"acc_ci_low,none": 0.99, "acc_ci_high,none": 1.0})
    assert pooled_recognition(results, tasks, None, people=False)[2:] == bound


def test_the_design_effect_bound_covers_where_questions_taken_as_independent_do_not():
    """Sentences whose questions are all alike (the worst clustering ADEPT's mirrored
    questions can have): Clopper-Pearson over the questions misses the true accuracy far more
    than 5% of the time; the interval at the bounding design effect does not."""
    import numpy as np

    from adept_eval.scoring import stats

    rng = np.random.default_rng(7)
    truth, sentences, per = 0.7, 10, 4
    deff = stats.max_design_effect([per] * sentences)
    missed_exact = missed_bound = 0
    runs = 300
    for _ in range(runs):
        k = int(rng.binomial(1, truth, sentences).sum()) * per
        n = sentences * per
        lo, hi = stats.clopper_pearson(k, n)
        missed_exact += not lo <= truth <= hi
        lo, hi = stats.design_effect_interval(k, n, deff)
        missed_bound += not lo <= truth <= hi
    assert missed_exact / runs > 0.15
    assert missed_bound / runs <= 0.05


def test_order_agreement_is_over_the_questions_answered():
    """A failed question has no answer for presentation orders to agree with: it is counted in
    ``failed`` (and wrong in ``acc``), not as disagreement here."""
    answered = [{"failed": 0, "agreement": a} for a in (1.0, 1.0, 1 / 3)]
    failed = [{"failed": 1, "agreement": 0.0}] * 2
    assert math.isclose(harness.order_agreement(answered + failed), (2 + 1 / 3) / 3)
    assert math.isnan(harness.order_agreement(failed))


def test_missing_files_do_not_read_as_position_sensitivity(corpus, systems, tmp_path):
    """Through the real `lm_eval` and `adept-eval report`: an order-blind listener (acoustic)
    with two of a system's files missing (``on_missing=wrong``) fails 8 questions; they are in
    ``failed`` and ``acc``, and ``order_agreement`` stays 1.0 over the 12 answered. It printed
    0.60 (failures as 0), and report added an ``agree`` column of it."""
    import json
    import os
    import shutil
    import subprocess

    from faults import console_script

    folder = tmp_path / "sys"
    shutil.copytree(systems["copy"], folder)
    for stimulus in ("emotion/fear/ad00_0002", "emotion/joy/ad00_0003"):
        (folder / f"{stimulus}.wav").unlink()
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "TQDM_DISABLE": "1",
           "ADEPT_EVAL_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    done = subprocess.run(
        [console_script("lm_eval"), "--model", "audio-dir", "--model_args",
         f"path={folder},name=gappy,on_missing=wrong", "--tasks", "adept_emotion_female",
         "--output_path", str(tmp_path / "out"), "--log_samples"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    r = results["results"]["adept_emotion_female"]
    assert r["failed,none"] == 8 and r["n,none"] == 20 and r["acc,none"] == 12 / 20
    assert r["order_agreement,none"] == 1.0
    done = subprocess.run([console_script("adept-eval"), "report", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if line.split()[:2] == ["task", "n"])
    assert "fail" in header and "agree" not in header, done.stdout


# ----------------------------------------------------------------------------- whole-task scoring
TASK = "adept_topical_emphasis_female"  # single-stimulus: siblings matter

# a "TTS engine" that returns the simulated system's rendition of the reference it is given;
# tts-command keeps its outputs in a flat content-addressed cache, not the manifest layout
COPY_SYSTEM = r'''
import pathlib, shutil, sys
ref, out, system = map(pathlib.Path, sys.argv[1:4])
shutil.copy(system.joinpath(*ref.parts[-3:]), out)  # <class>/<subcategory>/<speaker_sentence>
'''


def _records(res, task):
    recs = [s["acc"] for s in res["samples"][task]]
    return {r["question_id"]: r for r in (x[0] if isinstance(x, list) else x for x in recs)}


def test_flat_cache_system_gets_the_same_answers_as_audio_dir(use_corpus, systems, tmp_path):
    system = systems["partial"]
    folder = run_lm_eval("audio-dir", [TASK], model_args={"path": str(system), "name": "sim"})
    script = tmp_path / "tts.py"
    script.write_text(COPY_SYSTEM)
    command = f"{sys.executable} {script} {{reference}} {{output}} {system}"
    flat = run_lm_eval("tts-command", [TASK], model_args={
        "command": command, "name": "sim", "cache_dir": str(tmp_path / "cache")})
    cached = list((tmp_path / "cache").rglob("*.wav"))
    assert cached and all(p.parent.parent.name != "topical_emphasis" for p in cached)
    a, b = _records(folder, TASK), _records(flat, TASK)
    assert a.keys() == b.keys() and len(a) == spec.TASKS[TASK].n_questions
    for qid in a:
        assert json.loads(b[qid]["detail"])["method"] == "sentence-relative", qid
        assert a[qid]["answer"] == b[qid]["answer"], qid
    ra, rb = folder["results"][TASK], flat["results"][TASK]
    assert ra["acc,none"] == rb["acc,none"]
    assert ra["prosody_distance,none"] == pytest.approx(rb["prosody_distance,none"])


def test_graded_figures_are_task_metrics(use_corpus, systems):
    out = {}
    for name in ("copy", "flat"):
        res = run_lm_eval("audio-dir", [TASK, "adept_emotion_male"],
                          model_args={"path": str(systems[name]), "name": name})
        out[name] = res
        for task in (TASK, "adept_emotion_male"):
            r = res["results"][task]
            assert r["graded_failed,none"] == 0 and r["graded_undefined,none"] == 0
            # every stimulus once, however many questions hear it
            stimuli = {s for q in _records(res, task).values() for s in
                       [g["id"] for g in q["graded"]]}
            assert r["graded_n,none"] == len(stimuli) > 0
            assert r["prosody_distance_ci_low,none"] <= r["prosody_distance,none"] \
                <= r["prosody_distance_ci_high,none"]
        rec = next(iter(_records(res, "adept_emotion_male").values()))
        assert len(rec["graded"]) == 5 and "f0_rmse_norm_st" in rec["graded"][0]
    for task in (TASK, "adept_emotion_male"):
        assert out["copy"]["results"][task]["prosody_distance,none"] < \
            out["flat"]["results"][task]["prosody_distance,none"]


def test_graded_false_turns_the_figures_off(use_corpus, systems):
    res = run_lm_eval("audio-dir", [TASK], model_args={"path": str(systems["copy"])},
                      metadata={"graded": "false"})
    r = res["results"][TASK]
    assert r["acc,none"] == 1.0 and r["graded_n,none"] == 0
    assert math.isnan(r["prosody_distance,none"])
    assert all(not q["graded"] for q in _records(res, TASK).values())


def _docs_and_outputs(task, system, corpus):
    docs = [dict(row, task=task) for row in harness.load_questions(task)["test"]]
    resps = []
    for d in docs:
        samples = [{"id": s, "status": "ok", "path": str(system / f"{s}.wav")}
                   for s in d["stimuli"]]
        resps.append([json.dumps({"system": "sim", "samples": samples})])
    return docs, resps


def test_one_bad_question_is_a_counted_failure(use_corpus, systems, monkeypatch):
    docs, resps = _docs_and_outputs(TASK, systems["copy"], use_corpus)
    resps[0] = ["not json"]
    listener = harness.listener_for(docs[0]["listener"], docs[0]["listener_options"],
                                 docs[0]["corpus_root"])
    real = type(listener).answer
    target = docs[1]["question_id"]

    def flaky(self, q, samples):
        if q.question_id == target:
            raise RuntimeError("boom")
        return real(self, q, samples)

    monkeypatch.setattr(type(listener), "answer", flaky)
    out = [json.loads(x) for x in harness.score_task(resps, docs)]
    assert len(out) == len(docs)
    assert out[0]["failed"] == 1 and "unreadable system output" in out[0]["detail"]
    assert out[1]["failed"] == 1 and "boom" in out[1]["detail"]
    assert all(r["failed"] == 0 and r["correct"] == 1 for r in out[2:])
    items = [harness.process_results(d, [x])["acc"]
             for d, x in zip(docs, harness.score_task(resps, docs))]
    assert harness.n_failed(items) == 2
    assert harness.accuracy(items) == pytest.approx((len(docs) - 2) / len(docs))


def test_a_broken_batch_falls_back_to_one_question_at_a_time(use_corpus, systems, monkeypatch):
    docs, resps = _docs_and_outputs(TASK, systems["copy"], use_corpus)
    listener = harness.listener_for(docs[0]["listener"], docs[0]["listener_options"],
                                 docs[0]["corpus_root"])

    def broken(self, asked):
        raise RuntimeError("batch broke")

    monkeypatch.setattr(type(listener), "answer_many", broken)
    out = [json.loads(x) for x in harness.score_task(resps, docs)]
    assert all(r["correct"] == 1 and r["failed"] == 0 for r in out)


def test_raw_system_output_is_still_scored(use_corpus, systems):
    docs, resps = _docs_and_outputs(TASK, systems["copy"], use_corpus)
    rec = harness.process_results(docs[0], resps[0])["acc"]
    assert rec["correct"] == 1 and rec["question_id"] == docs[0]["question_id"]


def test_an_unusable_sample_costs_only_its_own_question(use_corpus, systems, tmp_path):
    """A sample the harness refused (here an empty file; an unreadable or silent one is refused
    alike) is not looked up again on disk as a sibling of its sentence's good samples: their
    questions are answered from the sample alone (``lone-sample``), as for a deleted file, and
    only the bad sample's own question fails. Every other answer is the intact run's."""
    import shutil

    task = "adept_marked_tonicity_female"
    system = tmp_path / "sys"
    shutil.copytree(systems["partial"] / "marked_tonicity", system / "marked_tonicity")
    intact = _records(run_lm_eval("audio-dir", [task], model_args={
        "path": str(system), "name": "x"}), task)
    bad = system / "marked_tonicity" / "interpretation_1" / "ad00_0500.wav"
    bad.write_bytes(b"")
    res = run_lm_eval("audio-dir", [task], model_args={
        "path": str(system), "name": "x", "on_missing": "wrong"})
    records = _records(res, task)
    assert res["results"][task]["failed,none"] == 1
    failed = [r for r in records.values() if r["failed"]]
    assert len(failed) == 1 and "interpretation_1/ad00_0500" in failed[0]["detail"]
    lone = {qid for qid, r in records.items() if not r["failed"]
            and json.loads(r["detail"])["method"] == "lone-sample"}
    assert lone and all(intact[qid]["detail"] != records[qid]["detail"] for qid in lone)
    for qid, r in records.items():
        if not r["failed"] and qid not in lone:
            assert r["answer"] == intact[qid]["answer"] and r["detail"] == intact[qid]["detail"]


def test_offline_hint_under_lm_eval_names_its_option_and_works_when_pasted(corpus, tmp_path):
    """Under lm_eval the hint said `--corpus PATH`, which lm_eval refuses ("unrecognized
    arguments"); pasted as it reads now, with PATH filled in, the run goes through and says
    the corpus is synthetic (lm_eval's output said nothing of it)."""
    import os
    import re
    import shlex
    import socket
    import subprocess

    from faults import console_script

    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "ADEPT_EVAL_CORPUS"}
    env.update(ADEPT_EVAL_HOME=str(tmp_path / "home"), ADEPT_EVAL_ZENODO_URL=f"http://127.0.0.1:{port}")
    command = [console_script("lm_eval"), "--model", "adept-natural", "--tasks",
               "adept_marked_tonicity_female", "--output_path", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600,
                          cwd=tmp_path)
    assert done.returncode != 0 and "could not reach Zenodo" in done.stderr
    assert "--corpus" not in done.stderr and "Traceback" not in done.stderr
    option = re.search(r"`(--metadata corpus=PATH)`", done.stderr).group(1)
    pasted = shlex.split(option.replace("PATH", shlex.quote(str(corpus.root))))
    done = subprocess.run(command + pasted, capture_output=True, text=True, env=env,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "adept_marked_tonicity_female" in done.stdout
    assert "SYNTHETIC corpus, not ADEPT results" in done.stderr
    assert f"{corpus.root} is adept-eval make-synthetic's stand-in corpus" in done.stderr


def test_adept_eval_commands_keep_their_own_offline_hint(monkeypatch, capsys):
    from adept_eval.cli import main

    monkeypatch.setenv("ADEPT_EVAL_ZENODO_URL", "http://127.0.0.1:9")
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert "`--corpus PATH`" in err and "--metadata" not in err
