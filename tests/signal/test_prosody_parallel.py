"""Feature extraction on all cores gives the single-process features, bit for bit."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

from adept_eval.errors import AudioError
from adept_eval.signal.prosody import FeatureStore, _pools


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
    with pytest.raises(AudioError, match=re.escape(f"{bad}: not decodable audio")):
        store.get(bad)


def _topical_emphasis_questions(corpus, system_dir):
    """Every question of adept_topical_emphasis_female, each with the map of the system's
    samples (as the harness hands them to a listener)."""
    from adept_eval.harness.adept import load_questions, question_of

    docs = load_questions("adept_topical_emphasis_female", str(corpus.root))["test"]
    samples = {f"{p.parent.parent.name}/{p.parent.name}/{p.stem}": str(p)
               for p in system_dir.rglob("*.wav")}
    return [(question_of(d), samples) for d in docs]


def test_listener_results_identical_with_one_and_two_workers(use_corpus, systems, tmp_path):
    from adept_eval.scoring.listeners.acoustic import AcousticListener

    asked = _topical_emphasis_questions(use_corpus, systems["partial"])
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
    from adept_eval.scoring.listeners.acoustic import AcousticListener

    with pytest.raises(ValueError, match="workers="):
        AcousticListener(corpus=corpus, workers=value)


def test_default_workers_leave_two_cores_to_each_extraction(monkeypatch):
    """One extraction keeps two cores busy (Praat's pitch tracker, the BLAS product): by
    default a worker per two cores, and no pool at all on a 2-core machine."""
    from adept_eval.signal import prosody

    for cores, expected in ((1, 1), (2, 1), (3, 1), (4, 2), (8, 4)):
        monkeypatch.setattr(_pools, "available_cores", lambda c=cores: c)
        assert prosody.default_workers() == expected, cores


# ------------------------------------------------------------------ background extraction
def test_background_features_equal_single_process(corpus, tmp_path):
    """Features queued with ``extract_ahead`` and collected by ``get`` or ``prefetch`` (which
    shares the queue with this process) are the single-process ones, bit for bit."""
    paths = [r.audio_path for r in corpus.recordings[:14]]
    single = FeatureStore(tmp_path / "single")
    ahead = FeatureStore(tmp_path / "ahead")
    assert ahead.extract_ahead(paths, workers=1) == len(paths)
    assert ahead.extract_ahead(paths, workers=1) == 0  # queued already: not twice
    ahead.get(paths[0])  # waits for the worker's result
    ahead.prefetch(paths, workers=1, progress=False)  # the rest, shared with this process
    assert not ahead._ahead
    assert ahead.computed == len(paths) and ahead.audio_seconds > 0
    assert len(list((tmp_path / "ahead").glob("*.npy"))) == len(paths)
    for p in paths:
        assert _same(single.get(p), ahead.get(p)), p
    assert ahead.computed == len(paths)  # every later get was a hit
    # cached on disk now: nothing is queued again
    assert FeatureStore(tmp_path / "ahead").extract_ahead(paths, workers=1) == 0


def test_background_failure_is_extracted_here(corpus, tmp_path):
    """A file the worker cannot extract is extracted (and its error raised) by ``get``."""
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF not really a wav")
    paths = [r.audio_path for r in corpus.recordings[:3]] + [str(bad)]
    store = FeatureStore(tmp_path / "f")
    assert store.extract_ahead(paths, workers=1) == 4
    store.prefetch(paths, progress=False)  # best effort: the bad file is left to its question
    assert store.computed == 3
    with pytest.raises(AudioError, match=re.escape(f"{bad}: not decodable audio")):
        store.get(bad)


def test_a_broken_background_pool_falls_back_to_this_process(corpus, tmp_path):
    import os
    import signal

    paths = [r.audio_path for r in corpus.recordings[:6]]
    store = FeatureStore(tmp_path / "f")
    assert store.extract_ahead(paths, workers=3) == len(paths)
    pool = _pools.POOLS[3]
    for pid in list(pool._processes):  # the pool breaks mid-run
        os.kill(pid, signal.SIGKILL)
    single = FeatureStore(tmp_path / "single")
    for p in paths:
        assert _same(store.get(p), single.get(p)), p
    assert not store._ahead
    # a broken pool is not used again: the next queue starts a fresh one
    later = FeatureStore(tmp_path / "later")
    n = later.extract_ahead(paths, workers=3)
    assert n in (0, len(paths))
    if not n:  # the broken pool was dropped on the way: the one after is new
        assert later.extract_ahead(paths, workers=3) == len(paths)
    for p in paths:
        assert _same(later.get(p), single.get(p)), p


def test_no_background_without_fork(corpus, tmp_path, monkeypatch):
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    store = FeatureStore(tmp_path / "f")
    assert store.extract_ahead([r.audio_path for r in corpus.recordings[:4]]) == 0
    assert not store._ahead


def test_run_hands_every_file_to_the_listener_in_scoring_order(use_corpus, systems, tmp_path,
                                                              monkeypatch):
    """``harness.SAMPLES_TO_LISTENER.samples_produced``: each question's samples then its
    references, in request order, once each, to the listener the documents name; junk
    requests are ignored."""
    from types import SimpleNamespace

    from adept_eval.harness import adept as harness
    from adept_eval.scoring.listeners.acoustic import AcousticListener
    from adept_eval.models.base import Produced

    docs = list(harness.load_questions("adept_topical_emphasis_female",
                                       str(use_corpus.root))["test"])
    seen = []
    monkeypatch.setattr(AcousticListener, "expect",
                        lambda self, paths: seen.append(list(paths)) or 0)
    produced = {s: Produced(s, f"/sys/{s}.wav", "ok") for d in docs for s in d["stimuli"]}
    first = docs[0]["stimuli"][0]
    produced[first] = Produced(first, None, "failed", "missing")
    requests = [SimpleNamespace(doc="not a doc"), SimpleNamespace()] + \
        [SimpleNamespace(doc=d) for d in docs]
    harness.SAMPLES_TO_LISTENER.samples_produced(requests, produced)
    expected = {}
    for d in docs:
        expected.update(dict.fromkeys(f"/sys/{s}.wav" for s in d["stimuli"] if s != first))
        expected.update(dict.fromkeys(d["stimulus_references"]))
    assert seen == [list(expected)]
    harness.SAMPLES_TO_LISTENER.samples_produced(None, produced)  # never raises


def test_listener_results_identical_with_background_extraction(use_corpus, systems, tmp_path):
    from adept_eval.scoring.listeners.acoustic import AcousticListener

    asked = _topical_emphasis_questions(use_corpus, systems["partial"])
    samples = asked[0][1]
    answers = {}
    for workers in (1, None):
        listener = AcousticListener(corpus=use_corpus, cache_dir=str(tmp_path / f"w{workers}"),
                                    workers=workers, progress=False)
        queued = listener.expect(sorted(samples.values()))
        assert queued == (0 if workers == 1 else len(samples))
        answers[workers] = listener.answer_many(asked)
        graded = listener.graded_scores(samples, [s for q, _ in asked for s in q.stimuli])
        answers[workers].append(sorted((k, repr(v)) for k, v in graded.items()))
        assert not listener.store._ahead
    assert [(a.responses, a.scores, a.detail) for a in answers[1][:-1]] == \
        [(a.responses, a.scores, a.detail) for a in answers[None][:-1]]
    assert answers[1][-1] == answers[None][-1]


def test_stopping_the_background_cancels_its_queue(corpus, tmp_path):
    """A run that stops before scoring cancels what the worker has not started (at exit,
    Python would otherwise let the pool finish its whole queue); what is still wanted is
    extracted here, the same features."""
    from adept_eval.signal import prosody

    paths = [r.audio_path for r in corpus.recordings[:20]]
    store = FeatureStore(tmp_path / "f")
    assert store.extract_ahead(paths, workers=1) == len(paths)
    prosody.stop_background()
    # the pool's manager thread cancels the queue just after shutdown() returns: wait for it
    deadline = time.monotonic() + 30
    while not any(f.cancelled() for f in store._ahead.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert any(f.cancelled() for f in store._ahead.values())
    assert 1 not in _pools.POOLS and not _pools.BACKGROUND
    single = FeatureStore(tmp_path / "single")
    for p in paths:
        assert _same(store.get(p), single.get(p)), p
    assert store.computed == len(paths) and not store._ahead
    # a later run starts a new pool
    again = FeatureStore(tmp_path / "again")
    assert again.extract_ahead(paths[:3], workers=1) == 3 and 1 in _pools.POOLS
    again.prefetch(paths[:3], progress=False)
    assert again.computed == 3


def test_a_run_that_fails_before_scoring_stops_the_background(use_corpus, tmp_path,
                                                              monkeypatch):
    from types import SimpleNamespace

    from adept_eval.harness import adept as harness
    from adept_eval.errors import SystemSetupError
    from adept_eval.models.base import Produced, SpeechSystem

    calls = []
    monkeypatch.setattr(harness.SamplesToListener, "samples_produced",
                        lambda self, *a: calls.append("produced"))
    monkeypatch.setattr(harness.SamplesToListener, "samples_abandoned",
                        lambda self: calls.append("abandoned"))
    test = harness.load_questions("adept_topical_emphasis_female", str(use_corpus.root))["test"]
    docs = [dict(test[0]), dict(test[1])]
    requests = [SimpleNamespace(doc=d) for d in docs]

    class Gappy(SpeechSystem):
        """Makes the first stimulus only (a real file: its reference recording)."""

        def produce(self, stimuli):
            return [Produced(s.stimulus_id, s.reference_audio, "ok") if i == 0 else
                    Produced(s.stimulus_id, None, "failed", "not made")
                    for i, s in enumerate(stimuli)]

    # refused (a sample missing, on_missing=error): before the harness hears of any sample,
    # so no background work is started
    with pytest.raises(SystemSetupError):
        Gappy(check_samples=False).generate_until(requests)
    assert calls == []
    out = Gappy(check_samples=False, on_missing="wrong").generate_until(requests)
    assert len(out) == 2 and calls == ["produced"]
    calls.clear()
    # anything failing after the harness was handed the samples stops its background work

    def broken(*_):
        raise RuntimeError("lost")

    monkeypatch.setattr(Gappy, "_answers", broken)
    with pytest.raises(RuntimeError, match="lost"):
        Gappy(check_samples=False, on_missing="wrong").generate_until(requests)
    assert calls == ["produced", "abandoned"]


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_listening_runs_blas_on_one_thread_here_and_in_workers(use_corpus, systems, tmp_path,
                                                               monkeypatch):
    """The listener's answers, its graded figures and the extraction workers run BLAS on one
    thread whatever the process was given (a user's default: one thread per core), and the
    process's own setting is back afterwards."""
    from threadpoolctl import threadpool_limits

    from adept_eval.scoring.listeners.acoustic import AcousticListener

    seen = []
    for name in ("answer", "_graded_scores"):
        real = getattr(AcousticListener, name)
        monkeypatch.setattr(AcousticListener, name,
                            lambda self, *a, _real=real: seen.append(_blas_threads())
                            or _real(self, *a))
    asked = _topical_emphasis_questions(use_corpus, systems["partial"])[:2]
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        listener = AcousticListener(corpus=use_corpus, cache_dir=str(tmp_path / "f"),
                                    workers=1, progress=False)
        answers = listener.answer_many(asked)
        question, samples = asked[0]
        listener.graded_scores(samples, [next(k for k in samples
                                              if k.startswith(f"{question.cls}/"))])
        assert _blas_threads() == {2}  # restored
        worker = _pools.process_pool(2).submit(_blas_threads).result(timeout=60)
    assert [a.status for a in answers] == ["ok", "ok"]
    assert len(seen) == 3 and all(s == {1} for s in seen), seen
    assert worker == {1}


def test_a_suite_none_of_whose_samples_is_usable_is_refused_beside_a_usable_one(use_corpus):
    """on_missing=wrong goes on without some samples, not without all of a suite's: with
    `--tasks adept,vstyle` a VStyle pattern= that matches nothing was scored (every
    instruction failed) because ADEPT's samples were there."""
    from types import SimpleNamespace

    from adept_eval.errors import SystemSetupError
    from adept_eval.models.base import Produced, SpeechSystem

    reference = str(next(iter(use_corpus.recordings)).audio_path)

    def doc(ids):
        return {"stimuli": ids, "stimulus_texts": ["a"] * len(ids),
                "stimulus_references": [reference] * len(ids)}

    adept = SimpleNamespace(task_name="adept_emotion_female", doc=doc(["e/1", "e/2"]))
    vstyle = SimpleNamespace(task_name="vstyle_en_empathy", doc=doc(["v-1", "v-2"]))

    class AdeptOnly(SpeechSystem):
        def produce(self, stimuli):
            return [Produced(s.stimulus_id, reference, "ok") if s.stimulus_id.startswith("e/")
                    else Produced(s.stimulus_id, None, "failed", "missing") for s in stimuli]

    system = AdeptOnly(check_samples=False, on_missing="wrong", name="mine")
    with pytest.raises(SystemSetupError, match="none of the 2 samples its vstyle tasks ask for "
                                               "is usable") as info:
        system.generate_until([adept, vstyle])
    assert "v-1: missing" in str(info.value)
    assert len(system.generate_until([adept])) == 1  # ADEPT alone: all there
