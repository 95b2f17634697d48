"""Audio a hostile or unlucky user hands in: each is an error that says what it is, never a score."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from adept_eval.signal.audio import (
    Audio,
    check_audio,
    from_array,
    read_audio,
    signal_problems,
)
from adept_eval.errors import AudioError, BadInput
from faults import console_script, open_up, public_dir, run_as_unprivileged

RATE = 16000


def _speech_like(seconds=1.0):
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)))


def _kinds(report):
    return {p.kind: p.message for p in report.problems if p.severity == "error"}


def test_pure_dc_is_no_signal(tmp_path):
    path = tmp_path / "dc.wav"
    sf.write(path, np.full(RATE, 0.5), RATE, subtype="PCM_16")
    errors = _kinds(check_audio(path))
    assert "silent" in errors and "constant offset" in errors["silent"], errors
    # a DC offset under real speech is still speech
    sf.write(path, 0.3 + _speech_like() * 0.5, RATE, subtype="FLOAT")
    assert check_audio(path).ok


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_samples_are_an_error_that_says_so(tmp_path, bad):
    x = _speech_like()
    x[100:110] = bad
    path = tmp_path / "nf.wav"
    sf.write(path, x, RATE, subtype="FLOAT")
    errors = _kinds(check_audio(path))
    assert list(errors) == ["unreadable"], errors
    assert "not finite" in errors["unreadable"] and str(path) in errors["unreadable"]
    assert "silent" not in errors["unreadable"] and "-inf" not in errors["unreadable"]
    with pytest.raises(AudioError, match="not finite"):
        from_array(x, RATE)


def test_anti_phase_stereo_is_reported_as_cancelling(tmp_path):
    x = _speech_like()
    path = tmp_path / "phase.wav"
    sf.write(path, np.stack([x, -x], axis=1), RATE, subtype="PCM_16")
    errors = _kinds(check_audio(path))
    assert "phase" in errors and "cancel" in errors["phase"], errors
    assert "silent" not in errors


def test_truly_silent_stereo_is_silent_not_phase(tmp_path):
    path = tmp_path / "quiet.wav"
    sf.write(path, np.zeros((RATE, 2)), RATE, subtype="PCM_16")
    errors = _kinds(check_audio(path))
    assert set(errors) == {"silent"}


def test_wav_truncated_to_half_its_data_is_an_error(tmp_path):
    path = tmp_path / "full.wav"
    sf.write(path, _speech_like(2.0), RATE, subtype="PCM_16")
    data = path.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[: len(data) // 2])
    assert check_audio(path).ok
    errors = _kinds(check_audio(cut))
    assert "unreadable" in errors and "truncated" in errors["unreadable"], errors
    with pytest.raises(AudioError, match="truncated"):
        read_audio(cut)


def test_signal_problems_is_the_one_check_for_in_memory_audio():
    assert signal_problems(from_array(_speech_like(), RATE)) == []
    kinds = [k for k, _ in signal_problems(from_array(np.full(RATE, -0.25), RATE))]
    assert kinds == ["silent"]
    x = _speech_like()
    kinds = [k for k, _ in signal_problems(from_array(np.stack([x, -x]), RATE))]
    assert kinds == ["phase"]


def test_signal_problems_refuses_non_finite_samples_in_a_hand_built_audio():
    """Decoders refuse NaN/Inf; an Audio built directly must not pass as "silent" either."""
    x = _speech_like().astype(np.float32)
    x[7] = np.nan
    assert [k for k, _ in signal_problems(Audio(x, RATE))] == ["non_finite"]


def test_llm_judge_audio_check_is_signal_problems(tmp_path):
    """The audio-LLM check says what audio.py says: anti-phase stereo is cancelling channels and
    pure DC a constant offset (not a bare "silent"), for files and in-memory audio alike."""
    from adept_eval.llm.audio import AudioChecks, AudioPolicy, inspect
    from adept_eval.errors import BadInput

    x = _speech_like()
    phase, dc = tmp_path / "phase.wav", tmp_path / "dc.wav"
    sf.write(phase, np.stack([x, -x], axis=1), RATE, subtype="PCM_16")
    sf.write(dc, np.full(RATE, 0.5), RATE, subtype="PCM_16")
    cases = [(phase, "anti-phase"), (dc, "constant offset"),
             ({"array": np.stack([x, -x]), "sampling_rate": RATE}, "anti-phase"),
             ({"array": np.full(RATE, -0.25), "sampling_rate": RATE}, "constant offset")]
    for value, says in cases:
        with pytest.raises(BadInput, match=says) as err:
            inspect(value, AudioChecks(), AudioPolicy(), "response")
        assert err.value.status == "bad_input"
    # the outcome is remembered by content, without the file name: a copy is named as itself
    checks = AudioChecks()
    with pytest.raises(BadInput):
        inspect(phase, checks, AudioPolicy(), "response")
    copy = tmp_path / "copy.wav"
    shutil.copy(phase, copy)
    with pytest.raises(BadInput, match="anti-phase") as err:
        inspect(copy, checks, AudioPolicy(), "response")
    assert str(phase) not in str(err.value) and str(copy) in str(err.value)
    assert checks.decodes == 1
    sf.write(tmp_path / "ok.wav", x, RATE)
    assert inspect(tmp_path / "ok.wav", AudioChecks(), AudioPolicy()).duration == pytest.approx(1.0)


def test_speech_judge_refuses_dc_inf_and_truncated_files(tmp_path):
    """The judge reads audio through audio.py, so the same files are its bad_input, not scores."""
    from adept_eval.judge.runner import BadInput, JudgeConfig, prepare_audio

    dc, inf, cut = tmp_path / "dc.wav", tmp_path / "inf.wav", tmp_path / "cut.wav"
    sf.write(dc, np.full(RATE, 0.5), RATE, subtype="PCM_16")
    x = _speech_like()
    x[5] = np.inf
    sf.write(inf, x, RATE, subtype="FLOAT")
    sf.write(cut, _speech_like(2.0), RATE, subtype="PCM_16")
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    for path in (dc, inf, cut):
        with pytest.raises(BadInput):
            prepare_audio(str(path), JudgeConfig(), "response")


# ------------------------------------------------------------------ unreadable files and folders
@pytest.fixture
def locked_system(synthetic_root):
    """ADEPT (readable) and a system folder with one unreadable sub-folder and one unreadable
    file, in a place an unprivileged user can reach."""
    base = public_dir()
    corpus = base / "adept"
    shutil.copytree(synthetic_root, corpus)
    system = base / "sys"
    shutil.copytree(synthetic_root / "wav_44khz", system)
    open_up(base)
    (system / "emotion/fear").chmod(0o000)
    (system / "emotion/joy/ad00_0001.wav").chmod(0o000)
    yield base, corpus, system
    (system / "emotion/fear").chmod(0o755)
    shutil.rmtree(base, ignore_errors=True)


def test_check_reports_unreadable_folder_and_file_per_file(locked_system):
    base, corpus, system = locked_system
    done = run_as_unprivileged([console_script("adept-eval"), "check", "-q", "--all",
                                str(system)], {"ADEPT_EVAL_CORPUS": str(corpus),
                                               "ADEPT_EVAL_HOME": str(base / "home"),
                                               "COLUMNS": "400"}, base)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    out = done.stdout
    assert "permission denied" in out
    assert "emotion/fear/ad00_0001.wav" in out and "emotion/joy/ad00_0001.wav" in out
    # fear has 5 sentences x 1 speaker in the female task, joy's one file: 1 + the fear folder
    n_fear = sum(1 for line in out.splitlines() if "emotion/fear/" in line and "denied" in line)
    assert n_fear >= 5
    assert f"{195 - n_fear - 1}/195 samples usable" in out


def test_lm_eval_survives_unreadable_folder_with_on_missing_wrong(locked_system):
    base, corpus, system = locked_system
    out = base / "out"
    done = run_as_unprivileged(
        [console_script("lm_eval"), "--model", "audio-dir", "--model_args",
         f"path={system},on_missing=wrong", "--tasks", "adept_emotion_female",
         "--output_path", str(out), "--log_samples"],
        {"ADEPT_EVAL_CORPUS": str(corpus), "ADEPT_EVAL_HOME": str(base / "home")}, base)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    r = results["results"]["adept_emotion_female"]
    assert r["failed,none"] > 0
    samples = [json.loads(x) for f in out.rglob("samples_*.jsonl") for x in f.read_text().splitlines()]
    details = " ".join(json.dumps(s) for s in samples)
    assert "permission denied" in details


def test_hub_audio_cells_get_the_same_checks():
    """Audio bytes from a dataset cell are decoded through audio.py too: NaN is an error."""
    import io

    from adept_eval.corpora.dataset import decode

    x = _speech_like()
    x[3] = np.nan
    buf = io.BytesIO()
    sf.write(buf, x, RATE, format="WAV", subtype="FLOAT")
    with pytest.raises(AudioError, match="ad00_0001.wav: 1 samples are not finite"):
        decode({"path": "ad00_0001.wav", "bytes": buf.getvalue()})


def test_the_llm_check_stops_decoding_once_the_file_is_proven_not_silent(tmp_path, monkeypatch):
    """A judged response that is loud in its first second is accepted without decoding the rest
    (a cold item's main cost); every other file gets the full check, and the verdicts agree
    with it - including a loud blip in a long silent file, which is silent over the whole file."""
    import adept_eval.llm.audio as llm_audio
    from adept_eval.signal.audio import read_audio, signal_problems

    x = _speech_like()  # 1 s
    files = {
        "speech-then-silence.wav": np.concatenate([x, np.zeros(9 * RATE)]),
        "silence-then-speech.wav": np.concatenate([np.zeros(9 * RATE), x]),
        "blip-in-silence.wav": np.concatenate([0.05 * x[: RATE // 20], np.zeros(20 * RATE)]),
        "quiet-throughout.wav": 0.03 * np.tile(x, 3),  # about -47 dBFS
        "silent.wav": np.zeros(3 * RATE),
    }
    for name, signal in files.items():
        sf.write(tmp_path / name, signal, RATE, subtype="PCM_16")
    full = {name: bool(signal_problems(read_audio(tmp_path / name))) for name in files}
    assert full == {"speech-then-silence.wav": False, "silence-then-speech.wav": False,
                    "blip-in-silence.wav": True, "quiet-throughout.wav": False,
                    "silent.wav": True}

    decoded_whole = []
    real_read = llm_audio.read_audio
    monkeypatch.setattr(llm_audio, "read_audio",
                        lambda p: decoded_whole.append(Path(p).name) or real_read(p))
    for name in files:
        try:
            src = llm_audio.inspect(tmp_path / name, llm_audio.AudioChecks(),
                                    llm_audio.AudioPolicy())
            refused = False
            assert src.duration == pytest.approx(len(files[name]) / RATE)
        except BadInput:
            refused = True
        assert refused == full[name], name
    assert "speech-then-silence.wav" not in decoded_whole
    assert {"blip-in-silence.wav", "silent.wav"} <= set(decoded_whole)


@pytest.mark.parametrize("make, expected", [
    (lambda x: np.zeros(RATE), "silent (digital silence: every sample is the same value)"),
    (lambda x: np.full(RATE, 0.5), "no signal, only a constant offset (DC +0.500); no variation "
                                   "around it at all"),
    (lambda x: np.stack([x, -x], axis=1), "its channels cancel when downmixed to mono "
                                          "(anti-phase stereo): channels at -17.0, -17.0 dBFS "
                                          "cancel exactly (the mono mix is digital silence)"),
])
def test_silence_messages_read_as_sentences(tmp_path, make, expected):
    """A level of -inf dB was printed as "RMS no variation at all < -55 dBFS" and "the mono mix
    at no variation at all": every silence message says what was measured, in words."""
    path = tmp_path / "s.wav"
    sf.write(path, make(_speech_like()), RATE, subtype="FLOAT")
    message, = [p.message for p in check_audio(path).problems if p.severity == "error"]
    assert message == f"{path}: {expected}"


def test_integer_pcm_arrays_are_scaled_by_their_full_scale():
    """Every in-memory array (an in-process TTS model's, a judge's or a metric's
    ``{"array": ...}``) goes through ``audio.from_array``: int16/int32/uint8 PCM is scaled as a
    WAV reader would (int16 full scale read as 32767x too loud was 98% clipped); floats and
    Python ints are taken as they are."""
    import numpy as np

    from adept_eval.signal.audio import from_array

    tone = np.sin(np.linspace(0, 200, 8000))
    for pcm, step in ((np.round(tone * 32767).astype(np.int16), 1e-4),
                      (np.round(tone * 2147483647).astype(np.int32), 1e-4),
                      (np.round(tone * 127.5 + 127.5).astype(np.uint8), 0.02)):  # 8 bits
        got = from_array(pcm, 16000).samples
        assert abs(float(np.max(np.abs(got))) - 1.0) < step, pcm.dtype
        assert np.allclose(got, tone, atol=step), pcm.dtype
    floats = from_array(tone * 0.5, 16000).samples
    assert np.allclose(floats, tone * 0.5, atol=1e-6)


@pytest.mark.parametrize("rate, seconds", [(1, 2000), (24, 100), (4000, 1.0)])
def test_the_prosody_analysis_refuses_a_rate_it_cannot_use(rate, seconds):
    """A header claiming a few Hz would be resampled to 16 kHz, thousands of times its size (a
    1 Hz file took 230 s and 21 GB): the analysis refuses it first, naming the file, below the
    audio check's MIN_RATE (the check refuses such files too)."""
    from adept_eval.signal import prosody
    from adept_eval.signal.audio import MIN_RATE

    noise = np.random.default_rng(0).normal(0, 0.1, int(rate * seconds)).astype(np.float32)
    with pytest.raises(AudioError, match=rf"odd\.wav: sampling rate {rate} Hz is below {MIN_RATE}"):
        prosody.extract(Audio(noise, rate, 1, "/x/odd.wav"))


def test_the_prosody_analysis_refuses_more_than_one_utterance():
    from adept_eval.signal import prosody

    rate = 8000
    long = np.zeros(rate * 61, dtype=np.float32)  # the cap, MAX_ANALYSIS_S, is 60 s
    with pytest.raises(AudioError, match=r"long\.wav: 61\.0 s is longer than the 60 s"):
        prosody.extract(Audio(long, rate, 1, "/x/long.wav"))
    prosody.extract(Audio(long[: rate * 5], rate, 1, "/x/short.wav"))  # what it can use: analysed


def test_samples_that_fail_the_check_are_not_handed_to_the_listener(use_corpus, systems, tmp_path,
                                                                    monkeypatch):
    """A refused sample is scored as failed and never analysed: the listener's head start
    (``harness.SamplesToListener.samples_produced``) gets only the samples that passed the
    audio check."""
    from adept_eval.harness import adept as harness
    from conftest import run_lm_eval

    task = "adept_marked_tonicity_female"
    system = tmp_path / "sys"
    shutil.copytree(systems["copy"] / "marked_tonicity", system / "marked_tonicity")
    bad = system / "marked_tonicity" / "interpretation_2" / "ad00_0501.wav"
    sf.write(bad, np.random.default_rng(0).normal(0, 0.1, 96).astype(np.float32), 24)
    handed = {}
    real = harness.SamplesToListener.samples_produced

    def spy(self, requests, produced):
        handed.update(produced)
        return real(self, requests, produced)

    monkeypatch.setattr(harness.SamplesToListener, "samples_produced", spy)
    res = run_lm_eval("audio-dir", [task], model_args={
        "path": str(system), "name": "x", "on_missing": "wrong"})
    assert res["results"][task]["failed,none"] == 1
    sid = "marked_tonicity/interpretation_2/ad00_0501"
    assert handed[sid].status == "failed" and "24 Hz" in handed[sid].problem
    assert all(p.status == "ok" for s, p in handed.items() if s != sid)


# ------------------------------------------------------------ quiet takes: judged by their floor
def _quiet_files(tmp_path):
    """Quiet takes of speech (synthetic and espeak-ng's sad voice) as 16-bit files, and what
    a recording at their level holds when nobody spoke: steady noise, a tone, a click."""
    from sounds import quiet_take, sad_takes, steady_noise, synthetic_speech, tone

    speech = {"synthetic": (synthetic_speech(), RATE)}
    speech.update({f"espeak-{i}": (a.samples, a.rate) for i, a in enumerate(sad_takes())})
    takes, refused = {}, {}
    for name, (x, rate) in speech.items():
        takes[f"{name}-58"] = (quiet_take(x, rate), rate)
        takes[f"{name}-58-noise50"] = (quiet_take(x, rate, noise_below_peak_db=50.0), rate)
        takes[f"{name}-70"] = (quiet_take(x, rate, rms_dbfs=-70.0), rate)
    click = np.zeros(3 * RATE)  # 20 ms of 1 kHz at -40 dBFS in digital silence
    click[RATE:RATE + RATE // 50] = 0.014 * np.sin(2 * np.pi * 1000 * np.arange(RATE // 50) / RATE)
    for level in (-58.0, -70.0):
        refused[f"white{level:.0f}"] = steady_noise(3.0, level)
        refused[f"pink{level:.0f}"] = steady_noise(3.0, level, "pink")
        refused[f"tone{level:.0f}"] = tone(3.0) * 10 ** ((level + 17.0) / 20)
    refused["floor-only"] = steady_noise(3.0, -100.0)
    refused["click"] = click
    paths = {}
    for name, (x, rate) in {**takes, **{k: (v, RATE) for k, v in refused.items()}}.items():
        paths[name] = tmp_path / f"{name}.wav"
        sf.write(paths[name], x, rate, subtype="PCM_16")
    return {k: paths[k] for k in takes}, {k: paths[k] for k in refused}


def test_a_quiet_take_of_speech_is_sound_and_steady_noise_at_its_level_is_not(tmp_path):
    """A sad take recorded at -58 dBFS RMS (peaks near -36 dBFS, far above its own noise) was
    "silent (RMS < -55 dBFS)": a file is silent when nothing in it rises above its own floor
    (or it is under 16-bit audio's own noise), whatever its level."""
    from adept_eval.signal.audio import rms_dbfs

    takes, refused = _quiet_files(tmp_path)
    for name, path in takes.items():
        audio = read_audio(path)
        assert rms_dbfs(audio.samples) < -55, name
        assert signal_problems(audio) == [], name
        assert check_audio(path).ok, (name, check_audio(path).problems)
    for name, path in refused.items():
        problems = signal_problems(read_audio(path))
        assert [k for k, _ in problems] == ["silent"], (name, problems)
        message = problems[0][1]
        assert message.startswith(f"{path}: silent (RMS "), message
        assert ("dB above its own floor" in message or "dB above digital silence" in message
                or "16-bit audio's own noise" in message), message
    # the speech judge's audio check is the same rule
    from adept_eval.llm.audio import AudioChecks, AudioPolicy, inspect

    for name, path in takes.items():
        assert inspect(path, AudioChecks(), AudioPolicy()).duration > 1.0, name
    for name, path in refused.items():
        with pytest.raises(BadInput, match="silent"):
            inspect(path, AudioChecks(), AudioPolicy())


def test_the_silence_messages_say_what_was_measured(tmp_path):
    """A quiet file refused as silent says its level, its own floor, how much of it rises above
    that and its loudest 20 ms; one under 16-bit audio's own noise says that."""
    from sounds import steady_noise

    path = tmp_path / "hiss.wav"
    sf.write(path, steady_noise(2.0, -60.0), RATE, subtype="PCM_16")
    message, = [m for _, m in signal_problems(read_audio(path))]
    assert re.fullmatch(rf"{re.escape(str(path))}: silent \(RMS -60\.0 dBFS; only 0\.00 s of it "
                        r"rises 15 dB above its own floor of -6\d\.\d dBFS, under the 0\.1 s a "
                        r"sound needs; its loudest 20 ms is at -(59|60)\.\d dBFS\)", message), \
        message
    sf.write(path, steady_noise(2.0, -100.0), RATE, subtype="FLOAT")
    message, = [m for _, m in signal_problems(read_audio(path))]
    assert "its loudest 20 ms is at -9" in message and "below -90 dBFS" in message, message


def test_quiet_stereo_is_judged_by_its_channels_as_a_listener_hears_them(tmp_path):
    """A quiet take in one channel of a stereo file (the other empty) or in both is speech;
    channels that cancel in the mono mix are still "phase", however quiet."""
    from sounds import quiet_take, synthetic_speech

    x = quiet_take(synthetic_speech(), RATE)
    other = quiet_take(synthetic_speech(), RATE, seed=1)
    for name, stereo in (("one-sided", np.stack([x, np.zeros_like(x)], axis=1)),
                         ("two-mics", np.stack([x, other], axis=1))):
        path = tmp_path / f"{name}.wav"
        sf.write(path, stereo, RATE, subtype="FLOAT")
        assert signal_problems(read_audio(path)) == [], name
    path = tmp_path / "anti.wav"
    sf.write(path, np.stack([x, -x], axis=1), RATE, subtype="FLOAT")
    kinds = [k for k, _ in signal_problems(read_audio(path))]
    assert kinds == ["phase"], kinds
