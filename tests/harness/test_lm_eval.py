"""The ADEPT tasks through lm-evaluation-harness itself: models, listeners, logged samples."""

import json
import logging
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from adept_eval.corpora import spec
from adept_eval.errors import SystemSetupError
from adept_eval.models.synthesizing import FAILURES_SHOWN
from conftest import run_lm_eval

ALL = list(spec.TASKS)


def _acc(res, task):
    return res["results"][task]["acc,none"]


def test_natural_recordings_through_all_12_tasks(use_corpus):
    res = run_lm_eval("adept-natural", ["adept"])
    for task in ALL:
        r = res["results"][task]
        assert r["acc,none"] == 1.0, task
        assert r["n,none"] == spec.TASKS[task].n_questions
        assert r["failed,none"] == 0
        assert r["chance,none"] == pytest.approx(spec.TASKS[task].chance)
        # 5 sentences of 2-choice questions all right: p = 0.02 (the sentences are the evidence)
        assert r["p_chance,none"] < 0.05 and 0 < r["acc_ci_low,none"] < 1
    assert res["results"]["adept_emotion_female"]["acc_fear,none"] == 1.0
    assert res["results"]["adept"]["acc,none"] == 1.0
    # logged samples show stimuli, choices, the correct answer and the listener's answer
    sample = res["samples"]["adept_emotion_male"][0]
    assert sample["doc"]["stimuli"] and sample["doc"]["choices"]
    rec = sample["acc"] if isinstance(sample["acc"], dict) else sample["acc"][0]
    assert rec["correct_answer"] and rec["answer"] and rec["listener"] == "acoustic"
    assert rec["system"] == "adept-natural"


def test_audio_dir_ranks_systems(use_corpus, systems):
    accs = {}
    for name in ("copy", "flat"):
        res = run_lm_eval("audio-dir", ["adept_emotion_female", "adept_topical_emphasis_male"],
                          model_args={"path": str(systems[name]), "name": f"sim-{name}"})
        accs[name] = res["results"]["adept_emotion_female"]["acc,none"]
        assert res["adept_eval"]["system"] == f"sim-{name}"  # the run is named after name=
    assert accs["copy"] == 1.0 and accs["flat"] < 0.5


def test_audio_dir_missing_samples_fail_before_scoring(use_corpus, systems, tmp_path):

    folder = tmp_path / "sys"
    shutil.copytree(systems["copy"], folder)
    (folder / "emotion/fear/ad00_0002.wav").unlink()
    (folder / "emotion/fear/ad00_0002.aac").write_bytes(b"\xff\xf1")  # a format not read here
    sf.write(folder / "emotion/joy/ad00_0003.wav", np.zeros(24000), 24000)  # silent
    with pytest.raises(SystemSetupError) as info:
        run_lm_eval("audio-dir", ["adept_emotion_female"], model_args={"path": str(folder)})
    msg = str(info.value)
    assert "2 of 25 samples" in msg and "emotion/fear/ad00_0002" in msg and "silent" in msg
    assert "ad00_0002.aac is there, in a format not read here (.aac)" in msg
    assert "on_missing=wrong in --model_args to score the ADEPT questions that need them as " \
           "wrong answers" in msg
    # the explicit option scores them as wrong answers and says so
    res = run_lm_eval("audio-dir", ["adept_emotion_female"],
                      model_args={"path": str(folder), "on_missing": "wrong"})
    r = res["results"]["adept_emotion_female"]
    # sentences 0002 and 0003 lose all 4 questions each (every question hears every variant)
    assert r["failed,none"] == 8 and r["n,none"] == 20
    assert r["acc,none"] == pytest.approx(12 / 20)
    recs = [s["acc"] for s in res["samples"]["adept_emotion_female"]]
    recs = [r[0] if isinstance(r, list) else r for r in recs]
    assert sum(r["status"] == "failed" for r in recs) == 8
    assert any("missing" in r["detail"] for r in recs)
    # the graded counts hold every one of the 25 stimuli once: the two bad ones failed, the
    # usable renditions of their sentences (no full set to compare within) undefined
    assert r["graded_failed,none"] == 2 and r["graded_undefined,none"] == 8
    assert r["graded_n,none"] + r["graded_failed,none"] + r["graded_undefined,none"] == 25


TTS_SCRIPT = r'''
import shutil, sys, pathlib
text, ref, out = sys.argv[1:4]
log = pathlib.Path(sys.argv[4])
log.open("a").write(text + "\n")
if "fail" in sys.argv[5:]:
    sys.exit(3)
shutil.copy(ref, out)   # a perfect prosody-transfer "model": it returns the reference
'''


def test_tts_command_synthesises_once_and_survives_failures(use_corpus, tmp_path, monkeypatch,
                                                           caplog):
    script = tmp_path / "tts.py"
    script.write_text(TTS_SCRIPT)
    log = tmp_path / "calls.log"
    command = f"{sys.executable} {script} {{text}} {{reference}} {{output}} {log}"
    args = {"command": command, "name": "copy-tts", "cache_dir": str(tmp_path / "cache")}
    res = run_lm_eval("tts-command", ["adept_syntactic_phrasing_female"], model_args=args)
    assert res["results"]["adept_syntactic_phrasing_female"]["acc,none"] == 1.0
    assert len(log.read_text().splitlines()) == 10
    run_lm_eval("tts-command", ["adept_syntactic_phrasing_female"], model_args=args)
    assert len(log.read_text().splitlines()) == 10  # the rerun synthesised nothing

    failing = {**args, "command": command + " fail", "name": "broken-tts"}
    with caplog.at_level(logging.WARNING, logger="adept_eval.models.synthesizing"):
        # every synthesis failed: nothing to score, one message (not an accuracy of 0)
        with pytest.raises(SystemSetupError, match=r"broken-tts: no sample was produced: all 10 "
                           r"syntheses failed.*First: syntactic_phrasing/.*exit code 3.*"
                           r"\(and 7 more\)$"):
            run_lm_eval("tts-command", ["adept_syntactic_phrasing_female"], model_args=failing)
    # the console names the first few failures and counts the rest (it printed all ten)
    said = [rec.getMessage() for rec in caplog.records if "broken-tts" in rec.getMessage()]
    assert len([m for m in said if "synthesis of" in m]) == FAILURES_SHOWN
    assert any(f"{10 - FAILURES_SHOWN} more syntheses failed (10 of 10 in all" in m for m in said)


PARALLEL_TTS = r'''
import pathlib, shutil, sys, time
ref, out, log = sys.argv[1:4]
start = time.time()
time.sleep(0.2)
with open(log, "a") as fh:
    fh.write(f"{start} {time.time()}\n")
if pathlib.Path(ref).match("*/ad00_050[023].*"):
    sys.exit("model crashed on " + pathlib.Path(ref).name)
shutil.copy(ref, out)
'''


def test_tts_command_concurrency_runs_at_once_with_the_same_results_and_failures(
        use_corpus, tmp_path, caplog):
    """``concurrency=4`` runs four syntheses at once (one at a time before); the scores, the
    logged samples and the failure accounting (which failed, why, what the console says) are
    those of ``concurrency=1``."""
    script = tmp_path / "tts.py"
    script.write_text(PARALLEL_TTS)
    task = "adept_marked_tonicity_female"
    runs = {}
    for workers in (1, 4):
        log = tmp_path / f"calls{workers}.log"
        args = {"command": f"{sys.executable} {script} {{reference}} {{output}} {log}",
                "name": f"parallel-tts-{workers}", "cache_dir": str(tmp_path / f"c{workers}"),
                "concurrency": workers}
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="adept_eval.models.synthesizing"):
            res = run_lm_eval("tts-command", [task], model_args=args)
        said = [r.getMessage().replace(f"parallel-tts-{workers}", "S") for r in caplog.records]
        spans = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
        at_once = max(sum(a <= t < b for a, b in spans) for t, _ in spans)
        samples = [x["acc"][0] if isinstance(x["acc"], list) else x["acc"]
                   for x in res["samples"][task]]
        runs[workers] = (res["results"][task], said, at_once, len(spans),
                         [(x["correct"], x["failed"], x["detail"].replace(str(tmp_path), ""))
                          for x in samples])
    one, four = runs[1], runs[4]
    assert one[3] == four[3] == 10  # every stimulus synthesised once
    assert one[2] == 1 and 2 <= four[2] <= 4, (one[2], four[2])
    assert {k: v for k, v in one[0].items() if k != "alias"} == \
        {k: v for k, v in four[0].items() if k != "alias"}
    assert one[0]["failed,none"] == 6  # three sentences' two renditions each
    assert one[1] == four[1] and len([m for m in one[1] if "synthesis of" in m]) == 5
    assert any("1 more syntheses failed (6 of 10 in all" in m for m in one[1])
    assert one[4] == four[4]
    with pytest.raises(Exception, match="concurrency=0"):
        run_lm_eval("tts-command", [task], model_args={**args, "concurrency": 0})


@pytest.mark.parametrize("model_args, expected", [
    ("command=no_such_tts_program --out {output}",
     "tts-command: cannot run 'no_such_tts_program', the command's program: not an executable "
     "file on PATH"),
    ("command_file=/nonexistent/template.txt",
     "tts-command: command_file=/nonexistent/template.txt: cannot be read (No such file"),
    ("command=cp {reference} {output},timeout=abc", "--model_args timeout=abc: not a number"),
])
def test_tts_command_that_cannot_run_is_one_message_before_any_stimulus(model_args, expected,
                                                                       corpus, tmp_path):
    """Through the real `lm_eval`: one line, no traceback, nothing synthesised or scored (a
    missing program used to fail all 95 stimuli one warning at a time, then exit 0)."""
    from faults import console_script

    done = subprocess.run([console_script("lm_eval"), "--model", "tts-command", "--model_args",
                           model_args, "--tasks", "adept_female", "--output_path",
                           str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root),
                               "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2  # as adept-eval's own commands
    assert "Traceback" not in done.stderr and "synthesis of" not in done.stderr, done.stderr
    error, = [line for line in done.stderr.splitlines() if "error: " in line]
    assert expected in error
    assert not list((tmp_path / "out").rglob("results_*.json"))


def test_tts_command_timeout_fails_that_stimulus(use_corpus, tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text("import pathlib, shutil, sys, time\n"
                    "ref, out = sys.argv[1:3]\n"
                    "if pathlib.Path(ref).match('interpretation_1/ad00_0500.*'):\n"
                    "    time.sleep(30)\n"
                    "shutil.copy(ref, out)\n")
    args = {"command": f"{sys.executable} {slow} {{reference}} {{output}}", "timeout": 1,
            "name": "slow-tts", "cache_dir": str(tmp_path / "cache")}
    res = run_lm_eval("tts-command", ["adept_marked_tonicity_female"], model_args=args)
    r = res["results"]["adept_marked_tonicity_female"]
    assert r["failed,none"] == 1  # its own question; the other rendition's is answered
    recs = [x["acc"][0] if isinstance(x["acc"], list) else x["acc"]
            for x in res["samples"]["adept_marked_tonicity_female"]]
    failed, = [x for x in recs if x["failed"]]
    assert "timed out after 1 s" in failed["detail"]


BROKEN_ONCE = r'''
import pathlib, shutil, sys
ref, out, log, broken = sys.argv[1:5]
pathlib.Path(log).open("a").write(ref + "\n")
if pathlib.Path(broken).exists() and pathlib.Path(ref).match("interpretation_1/ad00_0500.*"):
    pathlib.Path(out).write_text("Traceback: model crashed\n")  # not audio
else:
    shutil.copy(ref, out)
'''


def test_tts_command_does_not_cache_an_unusable_output(use_corpus, tmp_path):
    """A synthesiser that wrote a non-audio file for one stimulus, then was fixed: the rerun
    synthesises that stimulus again (the docs: a rerun "synthesises only what is missing")
    rather than reusing the broken output from the cache for ever."""
    script = tmp_path / "tts.py"
    script.write_text(BROKEN_ONCE)
    log, broken = tmp_path / "calls.log", tmp_path / "broken"
    broken.touch()
    task = "adept_marked_tonicity_female"
    args = {"command": f"{sys.executable} {script} {{reference}} {{output}} {log} {broken}",
            "name": "flaky-tts", "cache_dir": str(tmp_path / "cache")}
    res = run_lm_eval("tts-command", [task], model_args=args)
    assert res["results"][task]["failed,none"] == 1
    recs = [x["acc"][0] if isinstance(x["acc"], list) else x["acc"]
            for x in res["samples"][task]]
    assert "not decodable audio" in " ".join(x["detail"] for x in recs if x["failed"])
    assert len(log.read_text().splitlines()) == 10
    broken.unlink()  # the synthesiser is fixed
    res = run_lm_eval("tts-command", [task], model_args=args)
    assert res["results"][task]["failed,none"] == 0 and res["results"][task]["acc,none"] == 1.0
    calls = log.read_text().splitlines()
    assert len(calls) == 11 and calls[-1].endswith("interpretation_1/ad00_0500.wav")


@pytest.mark.parametrize("command, why", [
    ("/bin/true {output}", "no audio was written"),
    (f"{sys.executable} -c 'import time; time.sleep(5)' {{output}},timeout=0.01", "timed out"),
])
def test_a_run_where_no_sample_was_produced_stops_with_one_message(command, why, corpus,
                                                                   tmp_path):
    """Through the real `lm_eval`: when every synthesis fails there is nothing to score; one
    message says so and why (its first failures), exit status 2, no results - not a normal
    run scored 0.0."""
    from faults import console_script

    done = subprocess.run([console_script("lm_eval"), "--model", "tts-command", "--model_args",
                           f"command={command},name=dead-tts", "--tasks",
                           "adept_marked_tonicity_female", "--output_path",
                           str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root),
                               "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr
    error, = [line for line in done.stderr.splitlines() if "error: " in line]
    assert "dead-tts: no sample was produced: all 10 syntheses failed" in error
    assert why in error
    assert not list((tmp_path / "out").rglob("results_*.json"))


def test_in_process_model(use_corpus, tmp_path):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval.harness.startup import task_dir
    from adept_eval.models import InProcessTTS

    class Echo(InProcessTTS):
        def synthesize(self, text, reference_audio):
            return reference_audio.samples, reference_audio.rate

    model = Echo(name="echo", cache_dir=str(tmp_path))
    res = simple_evaluate(model=model, tasks=["adept_marked_tonicity_male"],
                          task_manager=TaskManager(include_path=str(task_dir()), include_defaults=False),
                          bootstrap_iters=0)
    assert res["results"]["adept_marked_tonicity_male"]["acc,none"] == 1.0
    assert model.synthesized == 10

    class Int16Echo(InProcessTTS):  # what many TTS libraries hand back
        def synthesize(self, text, reference_audio):
            pcm = np.round(reference_audio.samples * 32767).astype(np.int16)
            return pcm, reference_audio.rate

    model = Int16Echo(name="int16-echo", cache_dir=str(tmp_path))
    res = simple_evaluate(model=model, tasks=["adept_marked_tonicity_male"],
                          task_manager=TaskManager(include_path=str(task_dir()), include_defaults=False),
                          bootstrap_iters=0)
    r = res["results"]["adept_marked_tonicity_male"]
    assert r["acc,none"] == 1.0 and r["failed,none"] == 0  # it read as 98% clipped
    # a 64-bit integer array is floats cast by mistake: refused (it read as silence)
    from adept_eval.models.synthesizing import _checked_pcm

    with pytest.raises(TypeError, match="int64 samples"):
        _checked_pcm(np.round(np.zeros(10) * 32767).astype(np.int64))


def test_human_listener_scores_responses_file(use_corpus, tmp_path):
    from adept_eval.corpora.questions import build_questions

    qs = build_questions(use_corpus, "adept_topical_emphasis_female")
    rows = ["participant,task,question_id,answer"]
    for p in range(3):
        for i, q in enumerate(qs):
            wrong = (p == 0 and i < 6)  # participant 0 misses 6 questions
            answer = "ABC"[(q.answer + 1) % 3] if wrong else q.choices[q.answer]
            rows.append(f'p{p},{q.task},{q.question_id},"{answer}"')
    responses = tmp_path / "responses.csv"
    responses.write_text("\n".join(rows) + "\n")
    res = run_lm_eval("adept-natural", ["adept_topical_emphasis_female"],
                      metadata={"listener": "human", "responses": str(responses)})
    r = res["results"]["adept_topical_emphasis_female"]
    assert r["n,none"] == 45 and r["acc,none"] == pytest.approx(39 / 45)
    meta = res["configs"]["adept_topical_emphasis_female"]["metadata"]
    assert meta["listener"] == "human"


def test_human_listener_rejects_bad_rows(use_corpus, tmp_path):
    from adept_eval.errors import ResponsesError
    from adept_eval.scoring.listeners.human import HumanListener

    bad = tmp_path / "r.csv"
    bad.write_text("participant,question_id,answer\n"
                   "p1,adept_emotion_female/ad00_0000/fear,Z\n"
                   "p1,nonsense,A\n")
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(bad), corpus=use_corpus)
    assert "line 2" in str(info.value) and "line 3: unknown question_id 'nonsense'" in str(info.value)


def _cli(args, env_extra, cwd):
    env = {**os.environ, **env_extra}
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def test_plain_lm_eval_cli_finds_tasks_and_models(corpus, tmp_path):
    """After `pip install`, plain `lm_eval` sees our tasks and models (no --include_path)."""
    lm_eval = shutil.which("lm_eval")
    if lm_eval is None:
        pytest.skip("lm_eval console script not on PATH")
    env = {"ADEPT_EVAL_CORPUS": str(corpus.root), "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    done = _cli([lm_eval, "--model", "adept-natural", "--tasks", "adept_syntactic_phrasing_male",
                 "--output_path", str(tmp_path / "out"), "--log_samples"], env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "adept_syntactic_phrasing_male" in done.stdout
    # the printed table reads naturally: acc first, counts as integers without arrows; no
    # per-task "Custom kwargs" hint and no "fatal: not a git repository" (tmp_path is no checkout)
    table = [r.split("|") for r in done.stdout.splitlines() if r.startswith("|")]
    rows = table[2:]  # after the header and its rule
    assert rows[0][5].strip() == "acc"
    n_row = next(r for r in rows if r[5].strip() == "n")
    assert n_row[7].strip() == "10" and n_row[6].strip() == ""
    assert "Custom kwargs" not in done.stderr and "not a git repository" not in done.stderr
    results = list((tmp_path / "out").rglob("results_*.json"))
    assert results and results[0].parent.name == "adept-natural"
    data = json.loads(results[0].read_text())
    assert data["results"]["adept_syntactic_phrasing_male"]["acc,none"] == 1.0
    assert list((tmp_path / "out").rglob("samples_adept_syntactic_phrasing_male_*.jsonl"))

    # lm-eval's own models stay known with ours registered (lm-eval fills its registry only
    # when it finds it empty: with ours first, `--model dummy` / `hf` were "not found")
    done = _cli([lm_eval, "--model", "dummy", "--tasks", "adept_syntactic_phrasing_male",
                 "--limit", "1"], env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    known = ("from lm_eval.api.registry import model_registry as r, get_model; "
             "get_model('adept-natural'); get_model('audio-dir'); "
             "print(' '.join(sorted(r.keys())))")
    done = _cli([sys.executable, "-c", known], env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"hf", "vllm", "dummy", "adept-natural", "audio-dir"} <= set(done.stdout.split())

    # --include_path keeps working, even with the start-up hook switched off: lm-eval's own
    # `validate` finds and loads the task from the folder (`ls tasks` would say as much but
    # prints all ~14,700 of lm-eval's tasks: 40 s against 12 s; test_task_index runs it)
    from adept_eval.harness.startup import task_dir

    task = "adept_marked_tonicity_female"
    done = _cli([lm_eval, "validate", "--tasks", task, "--include_path", str(task_dir())],
                {**env, "ADEPT_EVAL_NO_LM_EVAL_HOOK": "1"}, tmp_path)
    assert done.returncode == 0 and "All tasks found and valid" in done.stdout, done.stdout
    # ... and a TaskManager told to index nothing of the installed tasks holds none of ours,
    # hook on or off (lm-eval's own index of ~14,700 tasks, ours among them with the hook on,
    # is test_task_index's: 15 s, not 3)
    listed = ("from lm_eval.tasks import TaskManager; "
              "print(' '.join(TaskManager(include_defaults=False).all_tasks))")
    for off in (True, False):
        hook = {"ADEPT_EVAL_NO_LM_EVAL_HOOK": "1"} if off else {}
        done = _cli([sys.executable, "-c", listed], {**env, **hook}, tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        assert task not in done.stdout.split(), (off, done.stdout)


def test_a_run_saved_to_a_json_file_name_is_found_with_its_samples(corpus, tmp_path):
    """`--output_path run.json` (lm-eval's other form) writes run_<stamp>.json beside
    samples_<task>_<stamp>.jsonl. report read only results_<stamp>.json names: given the file
    it found no logged samples (no subcategory or pooled graded table, and a request to use
    --log_samples, which the run had used); given the folder, "no results file"."""
    from faults import console_script

    lm_eval = console_script("lm_eval")
    env = {"ADEPT_EVAL_CORPUS": str(corpus.root), "ADEPT_EVAL_HOME": str(tmp_path / "home"),
           "COLUMNS": "200"}
    done = _cli([lm_eval, "--model", "adept-natural", "--tasks", "adept_emotion_female",
                 "--output_path", str(tmp_path / "out" / "run.json"), "--log_samples"],
                env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    saved, = (tmp_path / "out").glob("run_*.json")
    assert list((tmp_path / "out").glob("samples_adept_emotion_female_*.jsonl"))
    for target in (saved, tmp_path / "out"):
        done = _cli([sys.executable, "-m", "adept_eval.cli", "report", str(target)], env,
                    tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "--log_samples" not in done.stdout and "pause_agreement" in done.stdout
        assert "fear" in done.stdout and saved.name in done.stdout


def test_on_missing_wrong_with_no_usable_sample_is_one_message_not_a_score_of_zero(
        corpus, tmp_path):
    """audio-dir with on_missing=wrong and a folder holding none of the samples (a mistyped
    path= or pattern=) scored every question wrong and reported accuracy 0 for a system never
    heard; it is one message now, through the real lm_eval."""
    from faults import console_script

    empty = tmp_path / "my_tts"
    empty.mkdir()
    done = subprocess.run(
        [console_script("lm_eval"), "--model", "audio-dir", "--model_args",
         f"path={empty},on_missing=wrong", "--tasks", "adept_emotion_female",
         "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env={**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root),
             "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "my_tts: none of the 25 samples is usable, so there is nothing to score" \
        in done.stderr, done.stderr[-3000:]
    assert "emotion/" in done.stderr and not list((tmp_path / "out").rglob("results_*.json"))


def test_a_mistyped_tts_command_placeholder_is_refused_before_the_first_call(tmp_path):
    """A mistyped placeholder reached the synthesiser as the literal text "{txt}", for every
    stimulus, and the run scored. (In process: the lm_eval path of a SystemSetupError is the
    test above's.)"""
    from adept_eval.models.tts_command import TTSCommandSystem

    with pytest.raises(SystemSetupError) as info:
        TTSCommandSystem(command="cp {reference} {output} --say {txt}",
                         cache_dir=str(tmp_path))
    assert str(info.value) == ("tts-command: unknown placeholder {txt} in the template 'cp "
                               "{reference} {output} --say {txt}': the placeholders are {text}, "
                               "{reference} and {output}")
    # JSON and other braces are not placeholders
    TTSCommandSystem(command='cp {reference} {output} --opts {"a": 1}', cache_dir=str(tmp_path))


def test_an_unknown_model_args_key_is_named_with_the_keys_there_are(corpus, systems, tmp_path):
    """The docs promise the list of valid keys; the message named the unknown key only, and a
    misspelt path= (dir=) read "audio-dir needs path=FOLDER". Through the real `lm_eval` once,
    the other cases in process."""
    from faults import console_script

    from adept_eval.models.audio_dir import AudioDirSystem

    done = subprocess.run([console_script("lm_eval"), "--model", "audio-dir", "--model_args",
                           f"dir={systems['copy']}", "--tasks", "adept_emotion_female"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root),
                               "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr[-2000:]
    error, = [line for line in done.stderr.splitlines() if "error: " in line]
    assert "AudioDirSystem: unknown --model_args dir; its keys are path, name, pattern, " \
           "on_missing, check_samples (the run's, the listener's and the judge's options - " \
           "corpus, listener, responses, judge_... - go in --metadata)" in error, error
    for extra, unknown in (({"nmae": "x"}, "nmae"), ({"listener": "human"}, "listener")):
        with pytest.raises(SystemSetupError, match=f"unknown --model_args {unknown}; its keys "
                                                   "are path, name, pattern"):
            AudioDirSystem(path=str(systems["copy"]), **extra)
