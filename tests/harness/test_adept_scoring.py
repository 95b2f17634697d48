"""The ADEPT tasks' whole-task scoring step (harness.score_task): one map of the system's
samples, answer_many, graded figures, and failures that stay counted failures."""

import json
import math
import sys

import pytest

from adept_eval.harness import adept as harness
from adept_eval.corpora import spec
from conftest import run_lm_eval

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
