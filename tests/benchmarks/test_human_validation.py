"""The real-human-speech bench: corpus file names read, sentences grouped into ADEPT emotion
tasks, and ``benchmarks/human_validation.py`` run end to end on a corpus laid out as TESS."""

from __future__ import annotations

import shutil

import pytest

from adept_eval.corpora import spec
from benchmarks.validation import human as H

from test_scripts import _one_message, _script

TESS_LABELS = {"anger": "angry", "fear": "fear", "joy": "happy", "sadness": "sad",
               "neutral": "neutral"}


def _touch(root, names):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    return root


def test_tess_and_emodb_names_are_read_into_adept_emotions(tmp_path):
    tess = H.read_tess(_touch(tmp_path / "tess", [
        "OAF_angry/OAF_back_angry.wav", "17testYAF_dog_sad8.wav", "YAF_dog_ps.wav",
        "YAF_dog_disgust.wav", "notes.wav"]))
    assert sorted((t.speaker, t.sentence, t.emotion) for t in tess) == [
        ("OAF", "back", "anger"), ("YAF", "dog", "sadness")]
    emodb = H.read_emodb(_touch(tmp_path / "emodb", [
        "03a01Wa.wav", "03a01Wb.wav", "03a01Ta.wav", "08b10La.wav"]))
    assert sorted((t.speaker, t.sentence, t.emotion, t.take) for t in emodb) == [
        ("03", "a01", "anger", 1), ("03", "a01", "anger", 2), ("03", "a01", "sadness", 1)]
    with pytest.raises(ValueError, match="no tess recordings"):
        H.read_corpus("tess", tmp_path / "emodb")


def test_units_ask_only_sentences_both_sides_said_in_every_emotion():
    def takes(speaker, sentences, take=1, skip=()):
        return [H.Take("tess", speaker, s, e, take, f"/{speaker}/{s}/{e}/{take}")
                for s in sentences for e in spec.CLASSES["emotion"].subcategories
                if (s, e) not in skip]

    everyone = [f"s{i}" for i in range(7)]
    pool = (takes("A", everyone) + takes("B", everyone, skip={("s6", "fear")})
            + takes("A", ["s0"], take=2))
    units = H.units(pool, "other-speaker", ("A", "B"))
    a_to_b = [u for u in units if u.reference == "A"]
    # A -> B: s0-s5 shared (B lacks fear in s6): one group of five, one of s5 + four fillers
    assert [u.sentences[:sum(s is not None for s in u.systems)] for u in a_to_b] == [
        ("s0", "s1", "s2", "s3", "s4"), ("s5",)]
    assert a_to_b[1].systems[1:] == (None,) * 4 and "s5" not in a_to_b[1].sentences[1:]
    assert H.units(pool, "second-take", ("A", "B"))[0].sentences[0] == "s0"
    with pytest.raises(ValueError, match="unknown family"):
        H.units(pool, "karaoke", ("A",))


def _as_tess(corpus, root):
    """The synthetic corpus's emotion references under TESS's names (female: OAF, male: YAF;
    a sentence id for a word)."""
    for rec in corpus.recordings:
        if rec.cls != "emotion":
            continue
        speaker = "OAF" if rec.speaker == "female" else "YAF"
        word = "word" + chr(ord("a") + int(rec.sentence_id) % 100)  # the same for both
        target = root / f"{speaker}_{word}_{TESS_LABELS[rec.subcategory]}.wav"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(rec.audio_path, target)
    return root


def test_the_bench_scores_each_family_with_its_n_interval_and_p(corpus, tmp_path):
    root = _as_tess(corpus, tmp_path / "tess")
    done = _script("benchmarks/human_validation.py", "--corpus", f"tess={root}",
                   "--family", "other-speaker", "--family", "second-take",
                   "--cache", str(tmp_path / "cache"), timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("tess")]
    assert [" ".join(r) for r in rows if r[1] == "second-take"] == [
        "tess second-take (no sentence has every emotion in this family)"]
    scored = {r[2]: r for r in rows if r[1] == "other-speaker"}
    assert set(scored) == {"acoustic", "naive"}
    for row in scored.values():  # 2 pairings x 5 sentences x 4 questions
        n, sentences, accuracy = int(row[3]), int(row[4]), float(row[5])
        assert (n, sentences) == (40, 10) and 0.0 <= accuracy <= 1.0
        low, high = map(float, row[6].split("-"))
        assert low <= accuracy <= high


def test_a_folder_without_the_corpus_is_one_message(tmp_path):
    _one_message(_script("benchmarks/human_validation.py", "--corpus", f"tess={tmp_path}"),
                 f"--corpus tess={tmp_path}", "no tess recordings")
    _one_message(_script("benchmarks/human_validation.py", "--corpus", f"savee={tmp_path}"),
                 "unknown corpus")
