"""Feature extraction on all cores gives the single-process features, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from adept_eval.prosody import FeatureStore


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
               for f in ("f0", "energy", "mfcc", "speech"))


def test_pool_features_equal_single_process(corpus, tmp_path):
    paths = [r.audio_path for r in corpus.recordings[:12]]
    single = FeatureStore(tmp_path / "single")
    pooled = FeatureStore(tmp_path / "pooled")
    assert pooled.prefetch(paths, workers=2, progress=False) == len(paths)
    assert pooled.computed == len(paths) and pooled.audio_seconds > 0
    assert len(list((tmp_path / "pooled").glob("*.npy"))) == len(paths)  # cached on disk too
    for p in paths:
        assert _same(single.get(p), pooled.get(p)), p
    assert pooled.computed == len(paths)  # every later get was a hit
    # nothing left to do: a second prefetch starts no pool
    assert FeatureStore(tmp_path / "pooled").prefetch(paths, workers=2, progress=False) == 0


def test_pool_skips_small_batches_and_one_worker(corpus, tmp_path):
    paths = [r.audio_path for r in corpus.recordings[:12]]
    store = FeatureStore(tmp_path / "f")
    assert store.prefetch(paths[:3], workers=2, progress=False) == 0
    assert store.prefetch(paths, workers=1, progress=False) == 0
    assert store.computed == 0


def test_a_bad_file_does_not_stop_the_others(corpus, tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF not really a wav")
    paths = [r.audio_path for r in corpus.recordings[:10]] + [str(bad)]
    store = FeatureStore(tmp_path / "f")
    store.prefetch(paths, workers=2, progress=False)
    assert store.computed == 10
    with pytest.raises(Exception):
        store.get(bad)


def test_listener_results_identical_with_one_and_two_workers(use_corpus, systems, tmp_path):
    from adept_eval.harness import load_questions, question_of
    from adept_eval.listeners.acoustic import AcousticListener

    docs = load_questions("adept_topical_emphasis_female", str(use_corpus.root))["test"]
    samples = {f"{p.parent.parent.name}/{p.parent.name}/{p.stem}": str(p)
               for p in systems["partial"].rglob("*.wav")}
    asked = [(question_of(d), samples) for d in docs]
    answers = {}
    for workers in (1, 2):
        listener = AcousticListener(corpus=use_corpus, cache_dir=str(tmp_path / f"w{workers}"),
                                    workers=workers, progress=False)
        answers[workers] = listener.answer_many(asked)
        assert listener.store.computed > 0
    assert [(a.responses, a.scores, a.detail) for a in answers[1]] == \
        [(a.responses, a.scores, a.detail) for a in answers[2]]


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_workers_option_rejects_nonsense(corpus, value):
    from adept_eval.listeners.acoustic import AcousticListener

    with pytest.raises(ValueError, match="workers="):
        AcousticListener(corpus=corpus, workers=value)


def test_default_workers_leave_two_cores_to_each_extraction(monkeypatch):
    """One extraction keeps two cores busy (Praat's pitch tracker, the BLAS product): by
    default a worker per two cores, and no pool at all on a 2-core machine."""
    from adept_eval import prosody

    for cores, expected in ((1, 1), (2, 1), (3, 1), (4, 2), (8, 4)):
        monkeypatch.setattr(prosody, "available_cores", lambda c=cores: c)
        assert prosody.default_workers() == expected, cores
