import csv
import json
import shutil

import numpy as np
import pytest
import soundfile as sf

from adept_eval.cli import main
from adept_eval.corpora.manifest import build_manifest, check_folder


def _system_from_corpus(synthetic_root, dest):
    """A perfect 'system': ADEPT's own recordings copied into the manifest layout."""
    shutil.copytree(synthetic_root / "wav_44khz", dest)
    return dest


def test_manifest_lists_195_stimuli(corpus, tmp_path, monkeypatch, capsys):
    entries = build_manifest(corpus)
    assert len(entries) == 195
    assert entries[0].output_path == f"{entries[0].stimulus_id}.wav"
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    assert main(["manifest", "-q", "-o", str(tmp_path / "m")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "m.csv")))
    lines = [json.loads(x) for x in open(tmp_path / "m.jsonl")]
    assert len(rows) == len(lines) == 195
    assert set(rows[0]) == {"stimulus_id", "speaker", "speaker_id", "class", "subcategory",
                            "sentence_id", "text", "reference_audio", "output_path"}
    assert rows[0]["reference_audio"].endswith(".wav") and rows[0]["text"]


def test_check_accepts_complete_folder_in_any_format(corpus, synthetic_root, tmp_path,
                                                      monkeypatch, capsys):
    system = _system_from_corpus(synthetic_root, tmp_path / "sys")
    # one sample as flac, one as ogg, one at 24 kHz: all acceptable
    for stim, fmt in (("emotion/joy/ad00_0001", "FLAC"), ("emotion/joy/ad00_0002", "OGG")):
        data, rate = sf.read(system / f"{stim}.wav")
        (system / f"{stim}.wav").unlink()
        sf.write(system / f"{stim}.{fmt.lower()}", data, rate, format=fmt)
    # and one as Opus (WebRTC's and many TTS APIs' codec: 48, 24 or 16 kHz), named .opus
    from scipy.signal import resample_poly

    data, rate = sf.read(system / "emotion/joy/ad00_0003.wav")
    (system / "emotion/joy/ad00_0003.wav").unlink()
    sf.write(system / "emotion/joy/ad00_0003.opus", resample_poly(data, 80, 147), 24000,
             format="OGG", subtype="OPUS")
    assert rate == 44100
    result = check_folder(corpus, system, progress=False)
    assert result.ok and result.expected == 195 and not result.extra
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    assert main(["check", "-q", str(system)]) == 0
    assert "195/195 samples usable" in capsys.readouterr().out


def test_check_reports_every_kind_of_problem(corpus, synthetic_root, tmp_path, monkeypatch,
                                             capsys):
    system = _system_from_corpus(synthetic_root, tmp_path / "sys")
    rate = 44100
    (system / "emotion/fear/ad00_0000.wav").unlink()                          # missing
    (system / "emotion/fear/ad00_0000.m4a").write_bytes(b"\0\0\0\x20ftypM4A ")  # ... as AAC
    (system / "emotion/anger/ad00_0000.wav").rename(system / "emotion/anger/ad00_0000.WAV")
    (system / "emotion/fear/ad00_0001.wav").write_bytes(b"RIFF garbage")     # unreadable
    (system / "emotion/fear/ad00_0002.wav").write_bytes(b"")                 # empty file
    sf.write(system / "emotion/fear/ad00_0003.wav", np.zeros(rate * 2), rate)  # silent
    sf.write(system / "emotion/fear/ad00_0004.wav",
             np.sign(np.sin(np.arange(rate * 2) / 5.0)), rate)                # clipped
    sf.write(system / "emotion/joy/ad00_0000.wav", 0.3 * np.sin(np.arange(2000) / 5), rate)  # short
    sf.write(system / "emotion/joy/ad00_0001.wav", 0.3 * np.sin(np.arange(rate * 30) / 5), rate)
    sf.write(system / "emotion/joy/ad00_0002.wav", 0.3 * np.sin(np.arange(8000) / 5), 4000)  # rate
    speech, speech_rate = sf.read(system / "emotion/joy/ad00_0003.wav")
    stereo = np.stack([speech, speech], axis=1)  # speech in two channels: only a warning
    sf.write(system / "emotion/joy/ad00_0003.wav", stereo, speech_rate)              # channels
    sf.write(system / "emotion/joy/ad00_0099.wav", stereo, speech_rate)              # extra
    result = check_folder(corpus, system, progress=False)
    kinds = {(p.kind, p.severity) for p in result.problems}
    assert {("missing", "error"), ("unreadable", "error"), ("empty", "error"),
            ("silent", "error"), ("clipped", "error"), ("too_short", "error"),
            ("too_long", "error"), ("rate", "error"), ("channels", "warning"),
            ("extra", "warning")} <= kinds
    assert len(result.bad_stimuli()) == 9
    # every message names its file
    assert all(p.path in p.message for p in result.problems)
    aac, capitals = sorted((p for p in result.problems if p.kind == "missing"),
                           key=lambda p: "anger" in p.path)
    assert "ad00_0000.m4a is there, in a format not read here (.m4a)" in aac.message
    fear = system / "emotion/fear"
    assert f"ffmpeg -i {fear / 'ad00_0000.m4a'} {fear / 'ad00_0000.wav'}" in aac.message
    assert "ad00_0000.WAV is there: rename it to ad00_0000.wav" in capitals.message
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    capsys.readouterr()
    assert main(["check", "-q", "--all", str(system)]) == 1
    out = capsys.readouterr().out
    assert "186/195 samples usable" in out and "ad00_0099" in out


def test_check_missing_folder(corpus, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    assert main(["check", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err


def _check(folder, corpus, tmp_path):
    import os
    import subprocess

    from faults import console_script

    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "COLUMNS": "400",
           "ADEPT_EVAL_HOME": str(tmp_path / "home"), "TQDM_DISABLE": "1"}
    return subprocess.run([console_script("adept-eval"), "check", "-q", "--all", str(folder)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_check_of_a_file_says_it_is_a_file_and_what_check_takes(corpus, tmp_path):
    """`adept-eval check manifest.csv` (the manifest named instead of the samples' folder) said
    "no such folder" of a file that is there: it says it is a file and what check expects."""
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("stimulus_id,output_path\nemotion/fear/ad00_0000,emotion/fear/x.wav\n")
    done = _check(manifest, corpus, tmp_path)
    assert done.returncode == 2
    lines = [x for x in (done.stdout + done.stderr).splitlines() if x.strip()]
    assert lines == [f"{manifest}: a file, not a folder; check takes the folder of a system's "
                     "samples, each at <folder>/<output_path> as `adept-eval manifest` lists "
                     "them"], lines


def test_check_of_a_folder_without_audio_is_one_message(corpus, tmp_path):
    """Not 195 "missing" rows: the folder holds no audio file at all (a wrong folder, or the
    synthesis has not run)."""
    empty = tmp_path / "empty"
    (empty / "emotion").mkdir(parents=True)
    (empty / "notes.txt").write_text("to do")
    done = _check(empty, corpus, tmp_path)
    assert done.returncode == 1
    lines = [x for x in (done.stdout + done.stderr).splitlines() if x.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{empty}: contains no audio files (looked for .wav, .flac")
    assert "missing" not in lines[0]


def test_check_of_a_folder_in_another_layout_is_one_message(corpus, synthetic_root, tmp_path,
                                                           monkeypatch, capsys):
    """The samples one folder deeper (the parent named), or under names of one's own: one
    message saying where they are or what the layout must be, not a "missing" row per stimulus
    and an "extra" row per file (390 rows that never said why)."""
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    monkeypatch.setenv("COLUMNS", "1000")
    nested = tmp_path / "out"
    _system_from_corpus(synthetic_root, nested / "my-tts")
    assert main(["check", "-q", str(nested)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"195 follow the manifest's layout inside {nested / 'my-tts'}" in err
    assert f"adept-eval check {nested / 'my-tts'}" in err and "missing" not in err
    flat = tmp_path / "flat"
    flat.mkdir()
    for sid in ("emotion/fear/ad00_0001", "emotion/joy/ad00_0002"):
        shutil.copy(synthetic_root / "wav_44khz" / f"{sid}.wav", flat / f"{sid.replace('/', '_')}.wav")
    assert main(["check", "-q", str(flat)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "2 audio file(s) are elsewhere, e.g. emotion_fear_ad00_0001.wav" in err
    assert f"in ADEPT's layout: e.g. {flat}/emotion/" in err and "missing" not in err


def test_the_ffmpeg_command_check_suggests_works_from_where_check_was_run(
        corpus, synthetic_root, tmp_path):
    """The conversion suggested for a sample in a format not read here named bare files
    (`ffmpeg -i ad00_0004.m4a ad00_0004.wav`), which fail from anywhere but the sample's own
    folder: now its paths are the folder as the user named it, relative to where they ran
    check, and quoted for the shell (a folder name with a space). Through the real executable,
    from the folder holding the samples' folder."""
    import shlex

    system = _system_from_corpus(synthetic_root, tmp_path / "my tts")
    joy = system / "emotion/joy"
    (joy / "ad00_0004.wav").rename(joy / "ad00_0004.m4a")  # as a TTS API names its AAC
    done = _check("my tts", corpus, tmp_path)  # relative, as typed; cwd is tmp_path
    assert done.returncode == 1, done.stderr
    hint = [line for line in done.stdout.splitlines() if "ffmpeg -i" in line]
    assert len(hint) == 1, done.stdout
    command = hint[0].split("e.g. ", 1)[1].rstrip(" │")
    argv = shlex.split(command)
    assert argv == ["ffmpeg", "-i", "my tts/emotion/joy/ad00_0004.m4a",
                    "my tts/emotion/joy/ad00_0004.wav"], command
    assert (tmp_path / argv[2]).is_file() and (tmp_path / argv[3]).parent.is_dir()


def test_check_says_broken_link_and_what_silence_is(corpus, synthetic_root, tmp_path):
    """A dangling symlink is a broken link (with its target), not "missing"; a file of
    zeros and stereo that cancels exactly are said in words, not "RMS no variation at all"."""
    system = _system_from_corpus(synthetic_root, tmp_path / "sys")
    link = system / "emotion/fear/ad00_0000.wav"
    link.unlink()
    link.symlink_to(tmp_path / "gone" / "ad00_0000.wav")
    rate = 44100
    sf.write(system / "emotion/fear/ad00_0001.wav", np.zeros(rate * 2), rate)
    x = np.round(0.3 * np.sin(np.arange(rate * 2) / 5.0) * 32768) / 32768  # exact in PCM_16
    sf.write(system / "emotion/fear/ad00_0002.wav", np.stack([x, -x], axis=1), rate,
             subtype="PCM_16")
    done = _check(system, corpus, tmp_path)
    assert done.returncode == 1
    rows = {line.split("│")[2].strip(): line.split("│")[3].strip()
            for line in done.stdout.splitlines() if line.count("│") >= 4}
    assert rows.get("broken_link") == (f"{link}: broken link: it points to "
                                       f"{tmp_path / 'gone' / 'ad00_0000.wav'}, which does not "
                                       "exist"), done.stdout
    assert rows.get("silent") == (f"{system / 'emotion/fear/ad00_0001.wav'}: silent (digital "
                                  "silence: every sample is the same value)"), done.stdout
    assert rows.get("phase", "").endswith("dBFS cancel exactly (the mono mix is digital "
                                          "silence)"), done.stdout
    assert "no variation" not in done.stdout and "missing" not in done.stdout
    assert "192/195 samples usable; 3 errors" in done.stdout  # a silent file counted once
    assert "no_speech" not in done.stdout


def test_check_accepts_quiet_takes_and_refuses_steady_noise_at_their_level(corpus,
                                                                            synthetic_root,
                                                                            tmp_path):
    """`adept-eval check` refused a take recorded at -58 dBFS RMS (50 dB above its own noise)
    as "silent (RMS < -55 dBFS)": samples are judged against their own floor, so quiet takes of
    speech pass (the file check and the speech check alike) and steady noise at their level,
    or a tone, is still refused, named."""
    from sounds import quiet_take, steady_noise, tone

    system = _system_from_corpus(synthetic_root, tmp_path / "sys")
    sadness = system / "emotion/sadness"

    def again(name, make):
        x, rate = sf.read(sadness / name, dtype="float64")
        sf.write(sadness / name, make(x, rate), rate, subtype="PCM_16")

    again("ad00_0001.wav", lambda x, rate: quiet_take(x, rate))
    again("ad00_0002.wav", lambda x, rate: quiet_take(x, rate, noise_below_peak_db=50.0))
    again("ad00_0003.wav", lambda x, rate: quiet_take(x, rate, -70.0))
    again("ad00_0004.wav", lambda x, rate: steady_noise(len(x) / rate, -58.0, rate=rate))
    sf.write(sadness / "ad01_0001.wav", tone(2.0) * 10 ** (-41 / 20), 16000, subtype="PCM_16")
    done = _check(system, corpus, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    for name in ("ad00_0001", "ad00_0002", "ad00_0003"):
        assert f"sadness/{name}" not in done.stdout, done.stdout
    noise = [line for line in done.stdout.splitlines() if "sadness/ad00_0004.wav" in line]
    assert any("silent (RMS -58" in line and "rises 15 dB above its own floor" in line
               for line in noise), done.stdout
    assert any("sadness/ad01_0001.wav" in line and "silent" in line
               for line in done.stdout.splitlines()), done.stdout
    assert "193/195 samples usable" in done.stdout


@pytest.mark.parametrize("written, hint", [
    ("AD00_0000.wav", "AD00_0000.wav is there: rename it to ad00_0000.wav"),
    ("ad00_0000.wav.wav", "ad00_0000.wav.wav is there: rename it to ad00_0000.wav"),
    ("ad00_0000.WAV", "ad00_0000.WAV is there: rename it to ad00_0000.wav"),
    ("ad00_0000.m4a", "ad00_0000.m4a is there, in a format not read here (.m4a)"),
])
def test_a_sample_named_nearly_right_is_named_with_the_fix(tmp_path, written, hint):
    """A file whose name differs from the expected one only in letter case, or by an accepted
    extension written twice (a tool that appends one), was a bare "missing": the message names
    it and the name it should have."""
    from adept_eval.signal.audio import missing_audio_message

    (tmp_path / written).write_bytes(b"RIFF")
    assert hint in missing_audio_message(tmp_path / "ad00_0000")


def test_a_longer_name_is_not_taken_for_the_sample(tmp_path):
    """Ids may hold dots: item.10.wav is another sample's file, not a misnamed item.1."""
    from adept_eval.signal.audio import missing_audio_message

    (tmp_path / "item.10.wav").write_bytes(b"RIFF")
    message = missing_audio_message(tmp_path / "item.1")
    assert message.startswith("missing") and "item.10.wav" not in message
