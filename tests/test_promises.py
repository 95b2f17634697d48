"""What README and docs promise, checked through the real executables where the promise is
about a command: `check --strict` and its warnings, MP3 systems, lm_eval's exit status on an
error of ours, human answers (empty, or given as subcategory names) and the acoustic
listener's seeded tie rule."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from conftest import run_lm_eval


def _adept_eval(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "adept_eval.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "COLUMNS": "300", **(env or {})})


def _lm_eval(*args, env=None):
    return subprocess.run([shutil.which("lm_eval") or "lm_eval", *map(str, args)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TQDM_DISABLE": "1", **(env or {})})


def test_check_strict_fails_on_warnings_only_when_asked(synthetic_root, systems, tmp_path):
    """A complete folder whose only problems are warnings (0.1-1% of samples clipped, an
    unusual sampling rate) passes `check` and fails `check --strict`, naming each file."""
    folder = tmp_path / "sys"
    shutil.copytree(systems["copy"], folder)
    clipped = folder / "emotion/joy/ad00_0001.wav"
    x, rate = sf.read(clipped)
    x = 0.5 * x / np.max(np.abs(x))
    x[: max(1, int(0.005 * len(x)))] = 1.0  # 0.5% of samples at full scale: a warning
    sf.write(clipped, x, rate, subtype="FLOAT")
    odd = folder / "emotion/fear/ad00_0001.wav"
    y, rate = sf.read(odd)
    sf.write(odd, y, 23000)  # not a common rate: a warning (the pitch moves, not checked)
    env = {"ADEPT_EVAL_CORPUS": str(synthetic_root), "ADEPT_EVAL_HOME": str(tmp_path / "h")}
    plain = _adept_eval("check", "--all", folder, env=env)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    strict = _adept_eval("check", "--all", "--strict", folder, env=env)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    out = strict.stdout
    assert "emotion/joy/ad00_0001.wav" in out and "clipp" in out
    assert "emotion/fear/ad00_0001.wav" in out and "23000" in out


def test_an_mp3_system_is_evaluated_like_a_wav_one(synthetic_root, systems, tmp_path):
    folder = tmp_path / "mp3"
    for wav in systems["copy"].glob("emotion/*/*.wav"):
        dest = folder / wav.relative_to(systems["copy"]).with_suffix(".mp3")
        dest.parent.mkdir(parents=True, exist_ok=True)
        data, rate = sf.read(wav)
        sf.write(dest, data, rate, format="MP3")
    done = _lm_eval("--model", "audio-dir", "--model_args", f"path={folder},name=mp3-sys",
                    "--tasks", "adept_emotion_female", "--output_path", tmp_path / "out",
                    env={"ADEPT_EVAL_CORPUS": str(synthetic_root),
                         "ADEPT_EVAL_HOME": str(tmp_path / "h")})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    r = results["results"]["adept_emotion_female"]
    assert r["failed,none"] == 0 and r["acc,none"] >= 0.9


def test_lm_eval_exits_1_with_one_message_on_an_error_of_ours(tmp_path):
    done = _lm_eval("--model", "adept-natural", "--tasks", "adept_emotion_female",
                    env={"ADEPT_EVAL_CORPUS": str(tmp_path / "no-such-corpus"),
                         "ADEPT_EVAL_HOME": str(tmp_path / "h")})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no-such-corpus" in done.stderr and "Traceback" not in done.stderr


def test_human_answers_empty_is_wrong_and_subcategory_names_are_answers(use_corpus, tmp_path):
    from adept_eval.questions import build_questions

    task = "adept_emotion_female"
    qs = build_questions(use_corpus, task)
    rows = ["participant,task,question_id,answer"]
    for q in qs:
        rows.append(f"named,{task},{q.question_id},{q.target}")  # the subcategory's name
        rows.append(f"blank,{task},{q.question_id},")  # an empty answer
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    res = run_lm_eval("adept-natural", [task],
                      metadata={"listener": "human", "responses": str(path)})
    r = res["results"][task]
    assert r["n,none"] == 2 * len(qs)  # the empty answers are responses, not dropped
    assert r["acc,none"] == pytest.approx(0.5)  # every named answer right, every blank wrong


def test_acoustic_ties_are_a_guess_seeded_by_the_question(use_corpus, tmp_path):
    """A system that speaks every subcategory of a sentence alike gives the listener nothing to
    choose by: each answer is a guess seeded by the question id - the same in every run, and
    not always the same position."""
    from adept_eval.harness import load_questions, question_of
    from adept_eval.listeners.acoustic import AcousticListener

    docs = load_questions("adept_emotion_female", str(use_corpus.root))["test"]
    same = tmp_path / "same"
    samples = {}
    for d in docs:
        for stim in d["stimuli"]:
            cls, _, key = stim.split("/")
            neutral = use_corpus.get(f"{cls}/neutral/{key}").audio_path
            dest = same / f"{stim}.wav"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(neutral, dest)
            samples[stim] = str(dest)
    asked = [(question_of(d), samples) for d in docs]
    runs = [[a.responses[0].choice for a in AcousticListener(
        corpus=use_corpus, cache_dir=str(tmp_path / f"f{i}"), progress=False).answer_many(asked)]
        for i in range(2)]
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1
