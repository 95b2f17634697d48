"""`adept-eval compare` through the shell on runs made through `lm_eval`: the human listener
(two systems heard by different participants) and VStyle (the published examples' systems,
judged by a loopback judge replaying the recorded verdicts)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_or_skip

TASKS = ["adept_emotion_female", "adept_topical_emphasis_male"]


def _run(args, env, cwd):
    return subprocess.run(args, capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                          cwd=cwd, timeout=900)


def _lm_eval(*args):
    return [shutil.which("lm_eval") or "lm_eval", *args]


def _compare(*args):
    return [shutil.which("adept-eval") or "adept-eval", "compare", *map(str, args)]


# ----------------------------------------------------------------------------- people
@pytest.fixture(scope="module")
def human_runs(tmp_path_factory, synthetic_root, systems):
    """Two systems, each heard by its own 10 participants: A's listeners recognise about 85% of
    the questions, B's about 45%; plus a third system heard by the same people as A (same
    skill), scored from another file."""
    from adept_eval.corpora.corpus import Corpus
    from adept_eval.corpora.questions import LETTERS, build_questions

    tmp = tmp_path_factory.mktemp("human")
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_root),
           "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    corpus = Corpus(synthetic_root)
    questions = [q for t in TASKS for q in build_questions(corpus, t)]
    rng = np.random.default_rng(2024)
    counts = {}
    for name, prefix, skill in (("A", "a", 0.85), ("B", "b", 0.45), ("C", "a", 0.85)):
        rows, right = [], 0
        for i in range(10):
            p_right = float(np.clip(skill + rng.normal(0, 0.08), 0.05, 0.98))
            for q in questions:
                ok = rng.random() < p_right
                right += ok
                letter = q.answer_letter if ok else LETTERS[(q.answer + 1) % q.n_choices]
                rows.append({"participant": f"{prefix}{i:02d}", "task": q.task,
                             "question_id": q.question_id, "answer": letter})
        path = tmp / f"answers-{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        counts[name] = (right, len(rows))
        done = _run(_lm_eval("--model", "audio-dir", "--model_args",
                             f"path={systems['copy']},name=people-{name}", "--tasks",
                             ",".join(TASKS), "--output_path", str(tmp / "out"), "--log_samples",
                             "--metadata", "listener=human", f"responses={path}"), env, tmp)
        assert done.returncode == 0, done.stderr[-3000:]
    return tmp, env, counts, len(questions)


def test_compare_human_runs_through_the_shell(human_runs):
    tmp, env, counts, n_questions = human_runs
    out = tmp / "out"
    done = _run(_compare(out / "people-A", out / "people-B", "--json", tmp / "people.json"),
                env, tmp)
    assert done.returncode == 0, done.stderr
    assert "clustered by participant within each system" in done.stdout
    assert "A better" in done.stdout and "Traceback" not in done.stderr
    data = json.loads((tmp / "people.json").read_text())
    pooled = data["adept"]["pooled"]
    # independently, from the answer files: the difference of the two accuracies
    (ka, na), (kb, nb) = counts["A"], counts["B"]
    assert pooled["acc_difference"] == pytest.approx(ka / na - kb / nb)
    assert (pooled["n_a"], pooled["n_b"]) == (na, nb) == (10 * n_questions, 10 * n_questions)
    assert (pooled["participants_a"], pooled["participants_b"]) == (10, 10)
    assert pooled["questions"] == n_questions and pooled["p_value"] < 0.01
    assert pooled["ci_low"] <= pooled["acc_difference"] <= pooled["ci_high"]
    assert pooled["ci_low"] > 0.2  # 0.85 vs 0.45 with 10 people each
    assert data["adept"]["listener"] == "human"
    assert set(data["adept"]["tasks"]) == set(TASKS)
    # the two-way cluster-robust variance with its t reference: df = min(20 participants - 2
    # strata, sentences - 1), the interval d -+ t * se, and p < 0.05 iff 0 lies outside it
    assert "Cameron-Gelbach-Miller" in pooled["method"]
    assert pooled["df"] == min(20 - 2, pooled["sentences"] - 1)
    half = __import__("adept_eval.scoring.stats").scoring.stats.t_quantile(0.95, pooled["df"]) * pooled["se"]
    assert pooled["ci_high"] == pytest.approx(min(1.0, pooled["acc_difference"] + half))
    assert f"t interval and test ({pooled['df']} df pooled)" in " ".join(done.stdout.split())
    for cell in data["adept"]["tasks"].values():  # each task: its own sentences
        assert (cell["p_value"] < 0.05) == (cell["ci_low"] > 0 or cell["ci_high"] < 0)
    assert "prosody_distance (lower better)" not in done.stdout  # people give no distance


def test_compare_human_runs_same_skill_no_detectable_difference(human_runs):
    """A and C: listeners of the same skill (the same ten people, other answers)."""
    tmp, env, counts, _ = human_runs
    out = tmp / "out"
    done = _run(_compare(out / "people-A", out / "people-C", "--json", tmp / "same.json"),
                env, tmp)
    assert done.returncode == 0, done.stderr
    pooled = json.loads((tmp / "same.json").read_text())["adept"]["pooled"]
    (ka, na), (kc, nc) = counts["A"], counts["C"]
    assert pooled["acc_difference"] == pytest.approx(ka / na - kc / nc)
    assert pooled["ci_low"] < 0 < pooled["ci_high"] or pooled["p_value"] >= 0.05
    assert pooled["participants_a"] == pooled["participants_b"] == 10


def test_compare_says_whether_the_same_people_answered_both_runs(human_runs):
    """The title says who answered, from the participant ids the runs' records carry: A and B
    were heard by different people, A and C by the same ten. It called every pair "other
    participants per system", the same ten people included."""
    tmp, env, _, _ = human_runs
    out = tmp / "out"
    titles = {}
    for other, expected in (("B", {"relation": "different", "a": 10, "b": 10, "both": 0}),
                            ("C", {"relation": "same", "a": 10, "b": 10, "both": 10})):
        done = _run(_compare(out / "people-A", out / f"people-{other}", "--json",
                             tmp / f"who-{other}.json"), env, tmp)
        assert done.returncode == 0, done.stderr
        data = json.loads((tmp / f"who-{other}.json").read_text())
        assert data["adept"]["participants"] == expected
        titles[other] = next(line for line in done.stdout.splitlines() if "ADEPT," in line)
    assert titles["B"].endswith(
        "ADEPT, human listener (different participants per run: 10 (A), 10 (B))"), titles
    assert titles["C"].endswith("ADEPT, human listener (the same 10 participants in both runs)")


def test_participants_of_two_runs_overlap_or_are_unknown():
    from adept_eval.results.compare import QuestionOutcome, participants, participants_label

    def run(*who):
        return {"q1": QuestionOutcome("q1", "t", "emotion", "s1", 1.0, 0, "human",
                                      responses=tuple((w, 1) for w in who))}

    p = participants(run("p1", "p2", "p3"), run("p3", "p4"), ["q1"])
    assert p == {"relation": "overlapping", "a": 3, "b": 2, "both": 1}
    assert participants_label(p) == "1 participant in both runs, of 3 (A) and 2 (B)"
    p = participants(run("p1"), run(), ["q1"])
    assert p["relation"] == "unknown" and participants_label(p) == "participants not recorded"


@pytest.fixture(scope="module")
def machine_run(human_runs, systems):
    tmp, env, _, _ = human_runs
    done = _run(_lm_eval("--model", "audio-dir", "--model_args",
                         f"path={systems['copy']},name=machine", "--tasks", ",".join(TASKS),
                         "--output_path", str(tmp / "out"), "--log_samples"), env, tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "out" / "machine"


def test_compare_refuses_a_human_run_against_a_machine_run(human_runs, machine_run):
    tmp, env, _, _ = human_runs
    done = _run(_compare(tmp / "out" / "people-A", machine_run), env, tmp)
    assert done.returncode == 2 and "scorer (listener identity)" in done.stderr
    assert "Traceback" not in done.stderr


# ----------------------------------------------------------------------------- VStyle
def _published_weight(category: str, sub: str) -> float:
    """VStyle's weighting as ../shared/README.md describes it (not taken from the code)."""
    from adept_eval.corpora.vstyle import CATEGORIES

    if category == "acoustic_attributes":
        return 0.25 / 2 if sub == "composite_properties" else 0.25 / 2 / 6
    return 0.25 / len(CATEGORIES[category])


def _overall(by_ability: dict) -> float:
    """Each category's weighted mean of subcategory means, the categories averaged."""
    cats = defaultdict(dict)
    for (cat, sub), values in by_ability.items():
        cats[cat][sub] = values
    scores = []
    for cat, subs in cats.items():
        w = {s: _published_weight(cat, s) for s in subs}
        scores.append(sum(w[s] * np.mean(v) for s, v in subs.items()) / sum(w.values()))
    return float(np.mean(scores))


@pytest.fixture(scope="module")
def vstyle_runs(tmp_path_factory):
    from adept_eval.judge import JudgeConfig
    from adept_eval.judge.runner import prepare_audio
    from adept_eval.corpora.vstyle import load_records
    from testing.judge_server import JudgeServer

    folder = shared_or_skip("data", "vstyle_examples", "en")
    records = load_records(folder)
    tmp = tmp_path_factory.mktemp("vstyle")
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    cfg = JudgeConfig()
    replay = {hashlib.sha256(prepare_audio(r.audio_path, cfg, "r")).hexdigest(): r.judge_raw
              for rec in records for r in rec.responses}
    wanted = {"gpt-4o-audio-preview-2025-06-03": "gpt4o", "Qwen2.5-Omni": "qwen"}
    suffix = {}
    for rec in records:
        for r in rec.responses:
            if r.model_name in wanted:
                suffix[wanted[r.model_name]] = Path(r.audio_path).stem[len(rec.record_id):]
    # qwen's answers to six instructions are missing: failed judgements, counted, not scored
    partial = tmp / "qwen-partial"
    partial.mkdir()
    dropped = set()
    for rec in records:
        for r in rec.responses:
            if r.model_name == "Qwen2.5-Omni":
                if len(dropped) < 6 and rec.category in ("instruction", "role_play"):
                    dropped.add(rec.record_id)
                    continue
                shutil.copy(r.audio_path, partial / Path(r.audio_path).name)
    with JudgeServer() as server:
        server.replay = replay
        for name, path in (("gpt4o", folder / "wav"), ("qwen", partial)):
            done = _run(_lm_eval(
                "--model", "audio-dir", "--model_args",
                f"path={path},pattern={{id}}{suffix[name]},name={name},on_missing=wrong",
                "--tasks", "vstyle_en", "--output_path", str(tmp / "out"), "--log_samples",
                "--metadata", f"vstyle_dir={folder}", f"judge_base_url={server.url}",
                "judge_model=replay-judge", "judge_cache="), env, tmp)
            assert done.returncode == 0, done.stderr[-3000:]
    return tmp, env, records, dropped


def test_compare_vstyle_runs_through_the_shell(vstyle_runs):
    tmp, env, records, dropped = vstyle_runs
    done = _run(_compare(tmp / "out" / "gpt4o", tmp / "out" / "qwen", "--json",
                         tmp / "vstyle.json"), env, tmp)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp / "vstyle.json").read_text())
    assert "adept" not in data
    cells = data["vstyle"]["en"]
    overall = cells["overall"]
    # failures counted per system and left out of the pairing
    assert (overall["failed_a"], overall["failed_b"], overall["left_out"]) == (0, 6, 6)
    assert overall["n"] == len(records) - 6 and overall["instructions"] == len(records)
    assert "failed judgements (never scored): A 0, B 6, 6 instructions left out" in done.stdout
    # independently, from the recorded verdicts: VStyle's overall of each system over the
    # instructions both were judged on
    from adept_eval.corpora.vstyle import normalise_ability

    scores = {"gpt-4o-audio-preview-2025-06-03": defaultdict(list),
              "Qwen2.5-Omni": defaultdict(list)}
    for rec in records:
        if rec.record_id in dropped:
            continue
        for r in rec.responses:
            if r.model_name in scores:
                scores[r.model_name][normalise_ability(rec.ability)].append(r.judge_score)
    a = _overall(scores["gpt-4o-audio-preview-2025-06-03"])
    b = _overall(scores["Qwen2.5-Omni"])
    assert overall["score_a"] == pytest.approx(a) and overall["score_b"] == pytest.approx(b)
    assert overall["score_difference"] == pytest.approx(a - b)
    assert overall["ci_low"] <= a - b <= overall["ci_high"]
    assert set(cells["categories"]) == {"acoustic_attributes", "instruction", "role_play",
                                        "empathy"}
    inst = cells["categories"]["instruction"]
    assert inst["failed_b"] + cells["categories"]["role_play"]["failed_b"] == 6
    # GPT-4o audio is far ahead of Qwen2.5-Omni in VStyle's published table (4.05 vs 2.46)
    assert overall["score_difference"] > 0.5 and overall["p_value"] < 0.05
    assert "A better" in done.stdout


# ----------------------------------------------------------------------------- planning
def _plan(*args):
    return [shutil.which("adept-eval") or "adept-eval", "listening-test", "plan", *map(str, args)]


def _power_rows(stdout: str) -> list[tuple[int, int, float]]:
    """(participants per system on each task, participants in all, power) per printed row."""
    import re

    return [(int(m.group(1)), int(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^\s*(\d+)\s+(\d+)\s+\d+\s+([01]\.\d{3})\s+0\.\d{3}\s+\d+\s*$",
                                 stdout, re.M)]


def test_plan_through_the_shell_with_defaults(tmp_path):
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    done = _run(_plan("--difference", "0.10", "--simulations", "400", "--questions", "60"),
                env, tmp_path)
    assert done.returncode == 0, done.stderr
    rows = _power_rows(done.stdout)
    assert len(rows) >= 3, done.stdout
    assert all(total == 2 * n for n, total, _ in rows)  # two systems: each task, n in each
    recommended = int(__import__("re").search(r"recommended: (\d+) participants per system",
                                              done.stdout).group(1))
    power = {n: p for n, _, p in rows}
    # the recommendation is the smallest number shown that reaches the power asked for
    assert power[recommended] >= 0.8
    assert all(p < 0.8 for n, _, p in rows if n < recommended)
    assert f"({2 * recommended} participants in all)" in done.stdout
    assert "conservative defaults" in done.stdout and "tutorial's 30 participants" in done.stdout
    assert "60 questions per participant in 12 tasks" in done.stdout
    assert "each participant hears both compared systems on some tasks" in done.stdout


def test_plan_simulates_the_tests_rotation(tmp_path):
    """The same 60 questions as one task (each participant hears one system) and in 12 tasks
    rotated over the systems (each hears both): rotation gives more power at 30 per system;
    with three systems the test needs three times the participants per system in all."""
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    common = ("--difference", "0.10", "--simulations", "400", "--questions", "60")
    one = _run(_plan(*common, "--tasks", "1"), env, tmp_path)
    rotated = _run(_plan(*common), env, tmp_path)
    assert one.returncode == rotated.returncode == 0, one.stderr + rotated.stderr
    assert "each participant hears one system (one task)" in one.stdout
    at30 = [{n: p for n, _, p in _power_rows(d.stdout)}[30] for d in (one, rotated)]
    assert at30[1] > at30[0] + 0.2, (at30, one.stdout, rotated.stdout)
    three = _run(_plan(*common, "--systems", "3"), env, tmp_path)
    assert three.returncode == 0, three.stderr
    assert all(total == 3 * n for n, total, _ in _power_rows(three.stdout)), three.stdout
    assert "3 systems in the test" in three.stdout
    bad = _run(_plan(*common, "--systems", "1"), env, tmp_path)
    assert bad.returncode == 2 and "--systems" in bad.stderr and "Traceback" not in bad.stderr
    # --help says which design is simulated
    helped = _run(_plan("--help"), env, tmp_path)
    assert "rotating over tasks and participants" in " ".join(helped.stdout.split())


def test_plan_with_a_pilot_run_of_people(human_runs):
    tmp, env, counts, n_questions = human_runs
    done = _run(_plan("--difference", "0.10", "--pilot", tmp / "out" / "people-A",
                      "--simulations", "300"), env, tmp)
    assert done.returncode == 0, done.stderr
    right, n = counts["A"]
    assert f"baseline accuracy {right / n:.3f}" in done.stdout
    assert f"10 participants, {n_questions} questions, {n} answers" in done.stdout
    assert f"{n_questions} questions per participant in 2 tasks" in done.stdout  # the pilot's


def test_plan_refuses_bad_options_naming_them(tmp_path, human_runs, machine_run):
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    for args, named in ((("--difference", "1.5"), "--difference"),
                        (("--difference", "0.1", "--power", "2"), "--power"),
                        (("--difference", "0.1", "--simulations", "5"), "--simulations"),
                        (("--difference", "0.1", "--pilot", tmp_path / "none"), "--pilot"),
                        (("--difference", "0.6", "--accuracy", "0.5"), "--difference")):
        done = _run(_plan(*args), env, tmp_path)
        assert done.returncode == 2 and named in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    # a machine-listener run is no pilot: it has no participants
    tmp, env2, _, _ = human_runs
    done = _run(_plan("--difference", "0.1", "--pilot", machine_run), env2, tmp)
    assert done.returncode == 2 and "human listener" in done.stderr
