"""Paired comparisons: the statistics against hand-computed cases and null simulations, and
`adept-eval compare` on real runs through the shell."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from adept_eval import stats


# ----------------------------------------------------------------------------- hand-computed
def test_mcnemar_exact_by_hand():
    # 7 questions right only for A, 1 only for B: two-sided 2 * P(X <= 1 | n=8, 1/2) = 18/256
    assert stats.mcnemar_exact_p(7, 1) == pytest.approx(18 / 256)
    assert stats.mcnemar_exact_p(1, 7) == pytest.approx(18 / 256)
    assert stats.mcnemar_exact_p(0, 0) == 1.0
    assert stats.mcnemar_exact_p(3, 3) == 1.0


def test_sign_flip_by_hand():
    # three sentences, each +1 in total: of the 8 sign patterns only all-plus and all-minus
    # reach |3|, so p = 2/8; the questions of a sentence flip together
    assert stats.cluster_sign_flip_p([1, 0, 1, 1], ["s1", "s1", "s2", "s3"]) == 0.25
    assert stats.cluster_sign_flip_p([1, -1], ["s1", "s1"]) == 1.0  # nothing to flip: 0 vs 0
    assert np.isnan(stats.cluster_sign_flip_p([], []))


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 (m=3): 0.03, 0.06, max(0.06, 0.04) = 0.06; nan stays out of m
    assert stats.holm([0.01, 0.04, 0.03, float("nan")])[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_paired_difference_by_hand():
    a, b = [1, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 0]
    d = stats.paired_difference(a, b, ["x", "x", "y", "y", "z", "z"], exact_binary=True)
    assert d.difference == pytest.approx(3 / 6) and d.n == 6 and d.clusters == 3
    assert d.p_value == pytest.approx(stats.mcnemar_exact_p(3, 0)) == pytest.approx(0.25)
    assert d.ci_low <= d.difference <= d.ci_high
    # an undefined figure on either side leaves that unit out of the pairing
    d = stats.paired_difference([0.5, float("nan"), 0.2], [0.4, 0.1, float("nan")], [1, 2, 3])
    assert d.n == 1 and d.difference == pytest.approx(0.1)


# ----------------------------------------------------------------------------- type-I error
def _null_pairs(rng, sentences=60, per=3):
    """Two systems that are exchangeable: both answer each question with the same probability
    (sentence and question difficulty shared), independently."""
    difficulty = np.repeat(rng.normal(0, 1, sentences), per) + rng.normal(0, 0.7, sentences * per)
    p = 1 / (1 + np.exp(-(0.5 + difficulty)))
    a = (rng.random(p.size) < p).astype(float)
    b = (rng.random(p.size) < p).astype(float)
    return a, b, np.repeat(np.arange(sentences), per)


def test_sign_flip_holds_its_level_under_the_null():
    rng = np.random.default_rng(2026)
    rejected = 0
    for i in range(1000):
        a, b, clusters = _null_pairs(rng)
        rejected += stats.cluster_sign_flip_p(a - b, clusters, n_resamples=1000, seed=i) < 0.05
    assert 0.03 <= rejected / 1000 <= 0.07, rejected


def test_exact_mcnemar_holds_its_level_under_the_null():
    rng = np.random.default_rng(7)
    rejected = 0
    for _ in range(1000):
        a, b, _ = _null_pairs(rng, sentences=100, per=4)
        rejected += stats.mcnemar_exact_p(int(np.sum(a > b)), int(np.sum(b > a))) < 0.05
    assert 0.03 <= rejected / 1000 <= 0.07, rejected


def test_sign_flip_detects_a_real_difference():
    rng = np.random.default_rng(3)
    a, b, clusters = _null_pairs(rng)
    better = np.maximum(a, (rng.random(a.size) < 0.3).astype(float))  # A fixes 30% of misses
    assert stats.cluster_sign_flip_p(better - b, clusters) < 0.01


# ----------------------------------------------------------------------------- through the shell
def _lm_eval(system, name, tasks, out, env):
    done = subprocess.run([shutil.which("lm_eval") or "lm_eval", "--model", "audio-dir",
                           "--model_args", f"path={system},name={name}", "--tasks", tasks,
                           "--output_path", str(out), "--log_samples"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory, synthetic_root, systems):
    tmp = tmp_path_factory.mktemp("compare")
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_root),
           "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    tasks = "adept_emotion_female,adept_topical_emphasis_male"
    out = {name: _lm_eval(systems[name], f"sim-{name}", tasks, tmp / "out", env)
           for name in ("copy", "flat", "partial")}
    out["other_tasks"] = _lm_eval(systems["copy"], "sim-copy-one-task", "adept_emotion_female",
                                  tmp / "out", env)
    out["_systems"] = (None, None, systems)
    return out, env, tmp


def _compare(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "adept_eval.cli", "compare", *map(str, args)],
                          capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                          cwd=cwd, timeout=600)


def test_compare_two_runs_through_the_shell(runs):
    out, env, tmp = runs
    done = _compare([out["copy"], out["flat"], "--json", tmp / "cmp.json"], env, tmp)
    assert done.returncode == 0, done.stderr
    assert "accuracy, pooled" in done.stdout and "A better" in done.stdout
    assert "paired over 35 questions" in done.stdout
    data = json.loads((tmp / "cmp.json").read_text())
    pooled = data["adept"]["pooled"]
    assert set(pooled) >= {"acc_difference", "ci_low", "ci_high", "p_value", "n"}
    assert pooled["n"] == 35 and pooled["acc_difference"] > 0.3 and pooled["p_value"] < 0.01
    assert pooled["ci_low"] <= pooled["acc_difference"] <= pooled["ci_high"]
    assert set(data["adept"]["tasks"]) == {"adept_emotion_female", "adept_topical_emphasis_male"}
    assert set(data["adept"]["classes"]) == {"emotion", "topical_emphasis"}
    # independently: the pooled difference is the difference of the two runs' accuracies
    res = {k: json.loads(next(out[k].glob("results_*.json")).read_text())["results"]
           for k in ("copy", "flat")}
    acc = {k: (20 * r["adept_emotion_female"]["acc,none"] +
               15 * r["adept_topical_emphasis_male"]["acc,none"]) / 35 for k, r in res.items()}
    assert pooled["acc_difference"] == pytest.approx(acc["copy"] - acc["flat"])
    dist = data["adept"]["prosody_distance"]
    assert dist["difference"] < 0 and dist["n"] == 25 + 15  # copy is closer to the references


def test_three_runs_every_pair_holm_adjusted(runs):
    out, env, tmp = runs
    done = _compare([out["copy"], out["partial"], out["flat"], "--json", tmp / "three.json"],
                    env, tmp)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp / "three.json").read_text())
    assert [(p["a"], p["b"]) for p in data["pairs"]] == [
        ("sim-copy", "sim-partial"), ("sim-copy", "sim-flat"), ("sim-partial", "sim-flat")]
    raw = [p["adept"]["pooled"]["p_value"] for p in data["pairs"]]
    adjusted = [p["adept"]["pooled"]["p_adjusted"] for p in data["pairs"]]
    assert adjusted == pytest.approx(stats.holm(raw))
    assert all(x >= y for x, y in zip(adjusted, raw))
    assert "Holm-adjusted" in done.stdout


def test_compare_refuses_different_evaluations_and_runs_without_samples(runs):
    out, env, tmp = runs
    done = _compare([out["copy"], out["other_tasks"]], env, tmp)
    assert done.returncode == 2 and "task set" in done.stderr and "Traceback" not in done.stderr
    bare = tmp / "bare"
    shutil.copytree(out["flat"], bare)
    for f in bare.glob("samples_*.jsonl"):
        f.unlink()
    done = _compare([out["copy"], bare], env, tmp)
    assert done.returncode == 2 and "--log_samples" in done.stderr
    done = _compare([out["copy"]], env, tmp)
    assert done.returncode == 2 and "at least two runs" in done.stderr


def test_leaderboard_gives_the_prosody_distance_an_interval(runs):
    """Runs made with --log_samples: the leaderboard's prosody-distance "95% CI" column is an
    interval (it was '---' on every row: the runs were found without their samples)."""
    import re

    out, env, tmp = runs
    _, _, systems = out["_systems"]
    full = tmp / "full"
    for name in ("copy", "flat"):  # complete runs: only those are ranked
        _lm_eval(systems[name], f"sim-{name}", "adept", full, env)
    done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "leaderboard",
                           str(full), "-o", str(tmp / "lb")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    md = (tmp / "lb" / "leaderboard.md").read_text()
    rows = [ln for ln in md.splitlines()  # the ranked table: rank, system, ...
            if re.match(r"^\| \d+ \| sim-(copy|flat) \|", ln)]
    assert len(rows) == 2, md
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        distance_ci = cells[8]
        assert re.fullmatch(r"\d\.\d\d-\d\.\d\d", distance_ci), (distance_ci, row)
    # on an 80-column terminal the console table folds or widens, never cuts a name ("sim-…")
    tty = {**env, "COLUMNS": "80", "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"}
    done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "leaderboard",
                           str(full), "-o", str(tmp / "lb80")],
                          capture_output=True, text=True, env=tty, timeout=600)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    assert done.returncode == 0 and "…" not in shown, shown
    assert "sim-copy" in shown and "sim-flat" in shown and "95% CI" in shown
