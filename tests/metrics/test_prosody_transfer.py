"""``evaluate.load("prosody_transfer")``: offline by bare name, paths and arrays, failures, card,
and its Space published to a loopback Hub through the real huggingface_hub client."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wavs(tmp_path_factory) -> dict[str, Path]:
    """Real speech from espeak-ng: two sentences' references and a pitch-shifted 'system'."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (Debian package espeak-ng)")
    from sounds import pitch_shifted

    from adept_eval.signal.audio import read_audio

    d = tmp_path_factory.mktemp("pt")
    out = {}
    for name, text, extra in (("ref_a", "Are you coming to the party tonight?", []),
                              ("ref_b", "I am coming to the party tonight.", []),
                              ("ref_a_slow", "Are you coming to the party tonight?", ["-s", "120"])):
        out[name] = d / f"{name}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", *extra, "-w", str(out[name]), text],
                       check=True, capture_output=True)
    shifted = pitch_shifted(read_audio(out["ref_a"]), 3.0)
    out["sys_a"] = d / "sys_a.wav"
    sf.write(out["sys_a"], shifted.samples, shifted.rate)
    out["silent"] = d / "silent.wav"
    sf.write(out["silent"], np.zeros(16000, np.float32), 16000)
    return out


@pytest.fixture(scope="module")
def metric():
    """Loaded offline; HF_HUB_OFFLINE is set only while loading, so it cannot leak into later
    tests' subprocesses (the Hub tests start processes that must reach their loopback Hub)."""
    import evaluate

    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_HUB_OFFLINE", "1")
        return evaluate.load("prosody_transfer")


def test_bare_name_loads_offline_in_a_fresh_process(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "HF_ENDPOINT": "http://127.0.0.1:9"}  # any Hub call would fail
    done = subprocess.run([sys.executable, "-c",
                           "import evaluate; m = evaluate.load('prosody_transfer'); "
                           "print(type(m).__name__, m.name)"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ProsodyTransfer prosody_transfer" in done.stdout


def test_paths_give_per_item_and_mean_figures(metric, wavs, tmp_path):
    from adept_eval.scoring import graded

    out = metric.compute(
        predictions=[str(wavs["sys_a"]), str(wavs["ref_a"]), str(wavs["ref_a_slow"])],
        references=[str(wavs["ref_a"])] * 3,
        others=[[str(wavs["ref_b"])]] * 3, ids=["shifted", "copy", "slow"],
        cache_dir=str(tmp_path / "features"))
    items = {it["id"]: it for it in out["items"]}
    assert items["copy"]["ffe"] == 0 and items["copy"]["prosody_distance"] == 0
    assert items["shifted"]["f0_rmse_st"] == pytest.approx(3.0, abs=0.3)
    assert items["shifted"]["f0_rmse_norm_st"] < 0.5
    assert items["slow"]["log_duration_ratio"] > 0.1
    for m in graded.METRIC_NAMES:
        values = [items[i][m] for i in items if items[i][m] is not None]
        if values:
            assert out[m] == pytest.approx(float(np.mean(values)))
            lo, hi = out[f"{m}_ci95"]
            assert lo <= out[m] <= hi
    assert (out["n"], out["n_scored"], out["n_failed"]) == (3, 3, 0)
    assert {m["name"] for m in out["metrics"]} == set(graded.METRIC_NAMES)
    assert any((tmp_path / "features").glob("*.npy"))  # file inputs go through the cache


def test_arrays_and_paths_agree(metric, wavs):
    data, rate = sf.read(wavs["sys_a"], dtype="float32")
    ref, ref_rate = sf.read(wavs["ref_a"], dtype="float32")
    by_path = metric.compute(predictions=[str(wavs["sys_a"])], references=[str(wavs["ref_a"])],
                             cache_dir="")
    by_array = metric.compute(predictions=[{"array": data, "sampling_rate": rate}],
                              references=[{"array": ref, "sampling_rate": ref_rate}])
    mixed = metric.compute(predictions=[{"array": data, "sampling_rate": rate}],
                           references=[str(wavs["ref_a"])], cache_dir="")
    for m in ("f0_rmse_st", "gpe", "vde", "ffe", "energy_corr"):
        assert by_array[m] == pytest.approx(by_path[m], abs=1e-6)
        assert mixed[m] == pytest.approx(by_path[m], abs=1e-6)


def test_unusable_audio_is_a_counted_failure_not_a_score(metric, wavs, tmp_path):
    missing = tmp_path / "nope.wav"
    out = metric.compute(predictions=[str(wavs["sys_a"]), str(wavs["silent"]), str(missing)],
                         references=[str(wavs["ref_a"])] * 3, cache_dir="")
    assert (out["n"], out["n_scored"], out["n_failed"]) == (3, 1, 2)
    assert out["failure_rate"] == pytest.approx(2 / 3)
    statuses = [(it["status"], it["detail"]) for it in out["items"]]
    assert statuses[1][0] == "failed" and "silent" in statuses[1][1]
    assert statuses[2][0] == "failed" and "nope.wav" in statuses[2][1]
    assert out["summary"]["ffe"]["n"] == 1 and out["summary"]["ffe"]["n_failed"] == 2
    assert out["ffe"] == pytest.approx(out["items"][0]["ffe"])


def test_bad_options_are_one_clear_error(metric, wavs):
    with pytest.raises(ValueError, match="voice_norm"):
        metric.compute(predictions=[str(wavs["ref_a"])], references=[str(wavs["ref_a"])],
                       voice_norm="speaker", cache_dir="")
    with pytest.raises(ValueError, match="others"):
        metric.compute(predictions=[str(wavs["ref_a"])], references=[str(wavs["ref_a"])],
                       others=[[], []], cache_dir="")
    # empty lists: evaluate itself would fail with a bare IndexError (its first example)
    with pytest.raises(ValueError, match="prosody_transfer: predictions is empty"):
        metric.compute(predictions=[], references=[], cache_dir="")


def test_corpus_voice_norm_keeps_level_differences(metric, wavs):
    """With one median over all predictions, a prediction spoken higher than the others keeps
    that difference in the normalised RMSE; per-utterance normalisation removes it."""
    preds = [str(wavs["sys_a"]), str(wavs["ref_b"])]
    refs = [str(wavs["ref_a"]), str(wavs["ref_b"])]
    per_utt = metric.compute(predictions=preds, references=refs, cache_dir="")
    corpus = metric.compute(predictions=preds, references=refs, voice_norm="corpus", cache_dir="")
    assert per_utt["items"][0]["f0_rmse_norm_st"] < 0.5
    assert corpus["items"][0]["f0_rmse_norm_st"] > 1.0


def test_module_card_documents_every_figure():
    from adept_eval.scoring import graded
    from adept_eval.harness.startup import prosody_transfer_path

    card = (prosody_transfer_path().parent / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "\ntags:\n- evaluate\n- metric\n" in card
    for name in graded.METRIC_NAMES:
        assert f"`{name}`" in card, name


def test_space_publishes_and_loads_with_evaluate(tmp_path):
    from testing.hub_server import HubServer

    with HubServer() as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
               "HF_TOKEN": hub.token, "HF_HUB_DISABLE_TELEMETRY": "1",
               "HF_HOME": str(tmp_path / "hf"), "ADEPT_EVAL_HOME": str(tmp_path / "home")}
        env.pop("HF_HUB_OFFLINE", None)
        done = subprocess.run([sys.executable, str(ROOT / "scripts" /
                                                   "publish_prosody_transfer_space.py"),
                               "--repo", "adept-lab/prosody_transfer"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        space = hub.repo("adept-lab/prosody_transfer", "space")
        assert {"prosody_transfer.py", "app.py", "README.md", "requirements.txt"} <= \
            set(space.files)
        compile(space.files["app.py"].decode(), "app.py", "exec")
        assert b'evaluate.load("adept-lab/prosody_transfer")' in space.files["README.md"]
        done = subprocess.run(
            [sys.executable, "-c", "import evaluate, numpy as np; "
             "m = evaluate.load('adept-lab/prosody_transfer'); "
             "t = np.arange(16000) / 16000; x = 0.3 * np.sin(2 * np.pi * 150 * t); "
             "a = {'array': x, 'sampling_rate': 16000}; "
             "print(type(m).__name__, m.compute(predictions=[a], references=[a])['vde'])"],
            capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.split() == ["ProsodyTransfer", "0.0"]


def test_evaluate_combine_and_add_batch(wavs):
    import evaluate

    from adept_eval.metrics.prosody_transfer import ProsodyTransfer

    m = evaluate.load("prosody_transfer")
    m.add_batch(predictions=[str(wavs["sys_a"])], references=[str(wavs["ref_a"])])
    m.add_batch(predictions=[str(wavs["ref_b"])], references=[str(wavs["ref_b"])])
    batched = m.compute(cache_dir="")
    direct = ProsodyTransfer().compute(predictions=[str(wavs["sys_a"]), str(wavs["ref_b"])],
                                       references=[str(wavs["ref_a"]), str(wavs["ref_b"])],
                                       cache_dir="")
    assert batched["n"] == direct["n"] == 2
    assert batched["ffe"] == pytest.approx(direct["ffe"])
    assert not math.isnan(batched["f0_corr"])
