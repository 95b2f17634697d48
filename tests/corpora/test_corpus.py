"""adept_eval.corpora.corpus: the layout, parsing and validation of ADEPT, and its faults
(parallel first runs, broken metadata, undecodable recordings, flaky links, no network), each
ending in one clear error or a working corpus, never a crash."""

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import zipfile

import pytest

from adept_eval.cli import main
from adept_eval.corpora import spec, zenodo
from adept_eval.corpora.corpus import (
    PROMPTS_FILE,
    Corpus,
    cache_home,
    expected_stimuli,
    load_corpus,
    open_path,
)
from adept_eval.errors import CorpusError, DownloadError
from testing.zenodo_server import ZenodoServer


def test_expected_layout_matches_tutorial_counts():
    stimuli = expected_stimuli()
    assert len(stimuli) == 195
    per_speaker = {s: sum(1 for x in stimuli if x[0] == s) for s in spec.SPEAKERS}
    assert per_speaker == {"female": 95, "male": 100}
    # the tutorial's step-2 table, class by class
    table = {"emotion": (25, 25), "interpersonal_attitude": (20, 20),
             "propositional_attitude": (15, 20), "topical_emphasis": (15, 15),
             "syntactic_phrasing": (10, 10), "marked_tonicity": (10, 10)}
    for cls, (female, male) in table.items():
        assert sum(1 for x in stimuli if x[1] == cls and x[0] == "female") == female
        assert sum(1 for x in stimuli if x[1] == cls and x[0] == "male") == male


def test_corpus_parses_synthetic_layout(corpus):
    assert len(corpus) == 195
    rec = corpus.find("female", "syntactic_phrasing", "interpretation_1", "0400")
    assert rec.key == "ad00_0400"
    assert rec.audio_path.endswith("wav_44khz/syntactic_phrasing/interpretation_1/ad00_0400.wav")
    assert rec.text
    # the same id is the same sentence in every subcategory of its class
    other = corpus.find("female", "syntactic_phrasing", "interpretation_2", "0400")
    assert other.text == rec.text
    assert "sarcasm" not in {r.subcategory for r in corpus.recordings if r.speaker == "female"}
    assert len(corpus.fingerprint) == 64


def _copy(root, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(root, dst)
    return dst


def test_missing_and_unexpected_files_are_all_listed(synthetic_root, tmp_path):
    root = _copy(synthetic_root, tmp_path)
    (root / "wav_44khz/emotion/fear/ad00_0001.wav").unlink()
    (root / "txt/marked_tonicity/interpretation_2/ad01_0504.txt").unlink()
    (root / "wav_44khz/emotion/fear/ad00_0009.wav").write_bytes(b"x")
    with pytest.raises(CorpusError) as info:
        Corpus(root)
    msg = str(info.value)
    assert "3 problems" in msg
    assert "missing: wav_44khz/emotion/fear/ad00_0001.wav" in msg
    assert "missing: txt/marked_tonicity/interpretation_2/ad01_0504.txt" in msg
    assert "unexpected: wav_44khz/emotion/fear/ad00_0009.wav" in msg


def test_missing_answer_options_and_empty_transcripts(synthetic_root, tmp_path):
    root = _copy(synthetic_root, tmp_path)
    prompts = json.loads((root / "adept_prompts.json").read_text())
    del prompts["topical_emphasis"]["ad01_0102"]["middle"]
    del prompts["marked_tonicity"]
    (root / "adept_prompts.json").write_text(json.dumps(prompts))
    (root / "txt/emotion/joy/ad01_0003.txt").write_text("  \n")
    with pytest.raises(CorpusError) as info:
        Corpus(root)
    msg = str(info.value)
    assert "topical_emphasis/ad01_0102: no option 'middle'" in msg
    assert "no entry for class 'marked_tonicity'" in msg
    assert "empty: txt/emotion/joy/ad01_0003.txt" in msg


def test_not_a_corpus_folder(tmp_path):
    with pytest.raises(CorpusError, match="no adept_prompts.json"):
        open_path(tmp_path)


def test_env_var_points_at_zip_or_folder(synthetic_zip, synthetic_root, monkeypatch):
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(synthetic_zip))
    from_zip = load_corpus()
    assert len(from_zip) == 195 and from_zip.source == str(synthetic_zip)
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(synthetic_root))
    from_dir = load_corpus()
    assert from_dir.fingerprint == from_zip.fingerprint


def test_unwrapped_zip_is_found_too(synthetic_root, tmp_path):
    zpath = tmp_path / "flat.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for p in synthetic_root.rglob("*"):
            if p.is_file():
                zf.write(p, p.relative_to(synthetic_root).as_posix())
    assert len(open_path(zpath)) == 195


def test_no_download_without_cache_is_a_clear_error():
    with pytest.raises(CorpusError, match="ADEPT_EVAL_CORPUS"):
        load_corpus(download=False)


def test_the_corpus_digest_is_remembered_until_a_file_changes(corpus, tmp_path, monkeypatch):
    """The corpus sha256 is computed once per machine for unchanged files, and again as soon
    as one recording changes; the remembered value is the one hashing gives."""
    import os

    from adept_eval.corpora import corpus as corpus_module

    monkeypatch.setenv("ADEPT_EVAL_HOME", str(tmp_path / "home"))
    root = _copy(corpus.root, tmp_path)
    hashed = []
    real = Corpus._content_sha256

    def counting(self):
        hashed.append(1)
        return real(self)

    monkeypatch.setattr(Corpus, "_content_sha256", counting)
    first = Corpus(root).fingerprint
    assert first == real(Corpus(root)) and len(hashed) == 1
    assert Corpus(root).fingerprint == first and len(hashed) == 1  # remembered
    victim = Corpus(root).recordings[0].audio_path
    with open(victim, "r+b") as fh:  # one byte of one recording changes (and its mtime)
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 1]))
    os.utime(victim, ns=(os.stat(victim).st_atime_ns, os.stat(victim).st_mtime_ns + 10**9))
    changed = Corpus(root).fingerprint
    assert changed != first and len(hashed) == 2
    # rewritten in place with its size and modification time restored (as an archive
    # extracted over it would): still noticed, by the change time
    stat = os.stat(victim)
    with open(victim, "r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        fh.write(last)
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(victim).st_size == stat.st_size
    assert Corpus(root).fingerprint == first and len(hashed) == 3
    with open(victim, "r+b") as fh:  # and back to the changed bytes, mtime kept again
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 1]))
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    # a cache that cannot be written: hashed every time, same value
    monkeypatch.setattr(corpus_module, "cache_home", lambda: tmp_path / "file-not-folder")
    (tmp_path / "file-not-folder").write_text("x")
    assert Corpus(root).fingerprint == changed and len(hashed) == 4


# ----------------------------------------------------------------------- faults
# Corpus and download faults: parallel first runs, broken metadata, undecodable recordings,
# flaky links and no network. Each ends in one clear error or a working corpus, never a crash.


def _linked_copy(src, dst):
    """A copy of the corpus that shares the audio bytes (hard links) but not the prompts file."""
    shutil.copytree(src, dst, copy_function=os.link)
    prompts = dst / PROMPTS_FILE
    data = prompts.read_text(encoding="utf-8")
    prompts.unlink()
    prompts.write_text(data, encoding="utf-8")
    return dst


# ------------------------------------------------------------------ parallel first extraction
def test_four_parallel_prepares_share_one_extraction(synthetic_zip, tmp_path):
    home = tmp_path / "shared_home"
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_zip), "ADEPT_EVAL_HOME": str(home),
           "TQDM_DISABLE": "1"}
    exe = shutil.which("adept-eval") or str(os.path.join(os.path.dirname(sys.executable),
                                                         "adept-eval"))
    procs = [subprocess.Popen([exe, "prepare", "-q"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = [p.returncode for p in procs]
    assert codes == [0, 0, 0, 0], [o[1][-2000:] for o in outs]
    extracted = [p for p in (home / "extracted").iterdir() if p.is_dir()]
    assert len(extracted) == 1 and (extracted[0] / ".complete").exists()
    assert not list((home / "extracted").glob(".extract-*"))  # no temporary folders left


def test_a_damaged_extracted_copy_of_a_users_zip_is_extracted_again(synthetic_zip, tmp_path):
    """ADEPT_EVAL_CORPUS=ADEPT.zip, a recording then deleted from the cache's extracted copy:
    the next run said the (intact) zip was "incomplete or malformed" and `prepare --refetch`
    refused the zip as not its own, since the copy's .complete marker was trusted. The zip is
    the source of truth: the copy is extracted again from it, with one warning line naming the
    folder, and the run goes on. The real executable; a zip that is itself incomplete is still
    reported as the zip's (test_download.py)."""
    home = tmp_path / "home"
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_zip), "ADEPT_EVAL_HOME": str(home),
           "TQDM_DISABLE": "1", "COLUMNS": "400"}
    exe = shutil.which("adept-eval") or str(os.path.join(os.path.dirname(sys.executable),
                                                         "adept-eval"))

    def prepare():
        return subprocess.run([exe, "prepare", "-q"], env=env, capture_output=True, text=True,
                              cwd=tmp_path, timeout=600)

    first = prepare()
    assert first.returncode == 0 and first.stderr == "", first.stderr
    (copy,) = [p for p in (home / "extracted").iterdir() if p.is_dir()]
    victim = next(copy.rglob("ad00_0301.wav"))
    victim.unlink()
    again = prepare()
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout  # the same corpus, the same summary
    rel = victim.relative_to(next(copy.rglob(PROMPTS_FILE)).parent).as_posix()
    assert again.stderr.splitlines() == [
        f"{copy}: the cache's copy extracted from {synthetic_zip} was damaged since it was "
        f"verified (missing: {rel}); extracting it again from the zip"], again.stderr
    assert victim.is_file() and (copy / ".complete").exists()
    assert prepare().stderr == ""  # whole again: nothing more to say
    refetch = subprocess.run([exe, "prepare", "-q", "--refetch"], env=env, capture_output=True,
                             text=True, cwd=tmp_path, timeout=600)
    assert refetch.returncode == 2  # nothing of the user's to download; it says why not needed
    assert refetch.stderr.strip().endswith("the copy it extracts from that zip into the cache "
                                           "is extracted again by itself when found damaged")


def test_extracted_folder_follows_the_umask(synthetic_zip):
    old = os.umask(0o022)
    try:
        corpus = open_path(synthetic_zip)
    finally:
        os.umask(old)
    top = next(p for p in (cache_home() / "extracted").iterdir() if p.is_dir())
    assert stat.S_IMODE(top.stat().st_mode) == 0o755
    assert stat.S_IMODE(corpus.root.stat().st_mode) == 0o755


# ------------------------------------------------------------------ malformed adept_prompts.json
@pytest.mark.parametrize("content, expected", [
    ("[]", "should be a JSON object of classes, got a list"),
    ("null", "should be a JSON object of classes, got null"),
])
def test_prompts_file_of_the_wrong_shape_is_one_corpus_error(synthetic_root, tmp_path, content,
                                                             expected):
    root = _linked_copy(synthetic_root, tmp_path / "adept")
    (root / PROMPTS_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError) as info:
        Corpus(root)
    assert expected in str(info.value)


def test_every_bad_answer_option_is_listed_in_one_error(synthetic_root, tmp_path):
    root = _linked_copy(synthetic_root, tmp_path / "adept")
    prompts = json.loads((root / PROMPTS_FILE).read_text(encoding="utf-8"))
    block = prompts["topical_emphasis"]
    k1, k2, k3 = sorted(block)[:3]
    subs = sorted(block[k1])
    block[k1][subs[0]] = {"text": "nested"}                  # nested dict
    block[k2][subs[1]] = block[k2][subs[0]]                   # duplicated option text
    block[k3] = ["not", "an", "object"]                       # options as a list
    text = json.dumps(prompts)
    # the same option key twice in one object: JSON parsers keep the last one silently
    dup = json.dumps(block[k1][subs[2]])
    text = text.replace(f'"{subs[2]}": {dup}', f'"{subs[2]}": {dup}, "{subs[2]}": {dup}', 1)
    (root / PROMPTS_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError) as info:
        Corpus(root)
    msg = str(info.value)
    assert f"topical_emphasis/{k1}/{subs[0]}: should be the option's text, got an object" in msg
    assert f"topical_emphasis/{k2}/{subs[1]}: same text as option {subs[0]!r}" in msg
    assert f"topical_emphasis/{k3}: answer options should be an object, got a list" in msg
    assert f"key {subs[2]!r} appears more than once" in msg
    assert "(4 problems)" in msg


# ------------------------------------------------------------------ undecodable recordings
def test_prepare_decodes_every_recording_and_names_the_bad_one(synthetic_root, tmp_path,
                                                               monkeypatch, capsys):
    root = _linked_copy(synthetic_root, tmp_path / "adept")
    bad = root / "wav_44khz/emotion/fear/ad00_0001.wav"
    bad.unlink()
    bad.write_bytes(b"RIFF\x00\x10\x00\x00WAVEthis is not audio at all" * 10)
    assert main(["prepare", "-q", "--corpus", str(root)]) == 2
    err = capsys.readouterr().err
    assert "undecodable: wav_44khz/emotion/fear/ad00_0001.wav" in err
    assert "Traceback" not in err
    # an evaluation never starts on it either (the corpus' fault is not charged to a system)
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(root))
    from adept_eval.corpora.corpus import load_corpus

    with pytest.raises(CorpusError, match="ad00_0001.wav"):
        load_corpus()


def _recorded_again(path, make):
    """Replace a (hard-linked) recording with ``make(samples, rate)``, in 16-bit PCM."""
    import soundfile as sf

    x, rate = sf.read(path, dtype="float64")
    path.unlink()
    sf.write(path, make(x, rate), rate, subtype="PCM_16")


def _prepare(root, tmp_path):
    from faults import console_script

    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home"), "TQDM_DISABLE": "1"}
    return subprocess.run([console_script("adept-eval"), "prepare", "-q", "--corpus", str(root)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_quiet_takes_are_recordings_and_steady_noise_at_their_level_is_no_signal(
        synthetic_root, tmp_path):
    """A sad take recorded at -58 dBFS RMS (50 dB above its own noise) was "no signal: silent
    (RMS < -55 dBFS)" to `adept-eval prepare`: recordings are judged against their own floor,
    as recorded, so quiet takes load and steady noise at their level does not."""
    from sounds import quiet_take, steady_noise

    root = _linked_copy(synthetic_root, tmp_path / "adept")
    sadness = root / "wav_44khz/emotion/sadness"
    _recorded_again(sadness / "ad00_0001.wav", lambda x, rate: quiet_take(x, rate))
    _recorded_again(sadness / "ad00_0002.wav", lambda x, rate: quiet_take(
        x, rate, -58.0, noise_below_peak_db=50.0))
    _recorded_again(sadness / "ad00_0003.wav", lambda x, rate: quiet_take(x, rate, -70.0))
    done = _prepare(root, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert Corpus(root).verify_audio() is None

    noisy = _linked_copy(synthetic_root, tmp_path / "noisy")
    bad = noisy / "wav_44khz/emotion/sadness/ad00_0004.wav"
    _recorded_again(bad, lambda x, rate: steady_noise(len(x) / rate, -58.0, rate=rate))
    done = _prepare(noisy, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no signal: wav_44khz/emotion/sadness/ad00_0004.wav: silent (RMS -58" in done.stderr
    assert "rises 15 dB above its own floor" in done.stderr and "Traceback" not in done.stderr


def test_a_good_corpus_is_decoded_only_once(synthetic_root, monkeypatch):
    calls = []
    original = Corpus.verify_audio
    monkeypatch.setattr(Corpus, "verify_audio",
                        lambda self, progress=False: calls.append(1) or original(self, progress))
    open_path(synthetic_root)
    open_path(synthetic_root)
    assert calls == [1]


# ------------------------------------------------------------------ records API and downloads
@pytest.fixture
def zenodo_server(synthetic_zip, monkeypatch):
    with ZenodoServer(spec.ZENODO_RECORD_ID, {"ADEPT.zip": synthetic_zip}) as server:
        monkeypatch.setenv("ADEPT_EVAL_ZENODO_URL", server.url)
        yield server


def _drop_size(record):
    del record["files"][0]["size"]
    return record


def _files_as_object(record):
    record["files"] = {f["key"]: f for f in record["files"]}
    return record


@pytest.mark.parametrize("patch, expected", [
    (_drop_size, "no valid size (got None)"),
    (_files_as_object, "'files' should be a list of file entries, got dict"),
    (lambda r: [r], "expected a JSON object, got list"),
])
def test_broken_records_api_is_one_clear_error(zenodo_server, capsys, patch, expected):
    zenodo_server.record_patch = patch
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_a_link_dropping_every_100kb_still_completes(tmp_path):
    payload = tmp_path / "big.bin"
    payload.write_bytes(os.urandom(1_000_000))
    with ZenodoServer("1", {"big.bin": payload}) as server:
        server.drop_after = 100_000
        server.drops_left = 1000
        remote = zenodo.describe("1", "big.bin", base_url=server.url)
        dest = zenodo.download(remote, tmp_path / "got.bin", retries=2, backoff=0,
                               progress=False)
        assert dest.read_bytes() == payload.read_bytes()
        assert len(server.range_requests) >= 9  # it resumed after each drop


def test_back_off_is_bounded_and_documented(zenodo_server, tmp_path, monkeypatch):
    waits = []
    monkeypatch.setattr(zenodo.time, "sleep", waits.append)
    zenodo_server.drop_after = 0
    zenodo_server.drops_left = 1000
    remote = zenodo.describe(spec.ZENODO_RECORD_ID, "ADEPT.zip")
    with pytest.raises(DownloadError, match="6 attempts in a row made no progress"):
        zenodo.download(remote, tmp_path / "ADEPT.zip", progress=False)
    assert waits == [1, 2, 4, 8, 10]  # the module docstring's figures; none after the last try
    assert "1+2+4+8+10 = 25 s" in zenodo.__doc__


def test_offline_prepare_says_how_to_proceed(monkeypatch, capsys):
    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ADEPT_EVAL_ZENODO_URL", f"http://127.0.0.1:{port}")
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert "could not reach Zenodo" in err
    assert "ADEPT_EVAL_CORPUS" in err and "adept-eval make-synthetic" in err
    assert "Traceback" not in err


def test_corrupt_saved_zenodo_record_is_left_out(synthetic_root, tmp_path):
    root = _linked_copy(synthetic_root, tmp_path / "adept")
    (root / "zenodo_record.json").write_text("{not json")
    assert Corpus(root).zenodo_record is None
