import json
import shutil
import zipfile

import pytest

from adept_eval.corpora import spec
from adept_eval.corpora.corpus import Corpus, expected_stimuli, load_corpus, open_path
from adept_eval.errors import CorpusError


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
