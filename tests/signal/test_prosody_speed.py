"""Speed refactors that must not change a bit: resampling, the DTW recurrence, the frames of
the analysis, and the graded summary computed once per task."""

from __future__ import annotations

from math import gcd

import numpy as np
import pytest

from adept_eval.harness import adept as harness
from adept_eval.signal import prosody
from adept_eval.signal.prosody import _cache_files, _features, _store
from adept_eval.signal.audio import Audio, resample


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rate,target", [(24000, 16000), (44100, 16000), (22050, 16000),
                                         (48000, 16000), (8000, 16000), (16000, 24000)])
def test_resample_is_scipys_resample_poly_bit_for_bit(rate, target, dtype):
    from scipy.signal import resample_poly

    rng = np.random.default_rng(rate + target)
    for n in (3, 1000, 24001):
        x = rng.standard_normal(n).astype(dtype)
        audio = Audio(x, rate, 1, None, ())
        g = gcd(rate, target)
        expected = resample_poly(x, target // g, rate // g).astype(np.float32)
        got = resample(audio, target).samples
        assert got.dtype == expected.dtype and np.array_equal(got, expected), (rate, n)


def _plain_dtw(a, b, diagonal_penalty=0.0):
    """dtw_path as it was written first: each row from a fresh running sum."""
    cost = np.sqrt(np.maximum(
        (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T, 0.0))
    n, m = cost.shape
    if diagonal_penalty and n > 1 and m > 1:
        off = np.abs(np.arange(n)[:, None] / (n - 1) - np.arange(m)[None, :] / (m - 1))
        cost = cost + diagonal_penalty * float(np.median(cost)) * off
    acc = np.empty((n, m))
    acc[0] = np.cumsum(cost[0])
    for i in range(1, n):
        prev = acc[i - 1]
        a_j = np.minimum(prev, np.concatenate(([np.inf], prev[:-1])))
        c = np.cumsum(cost[i])
        acc[i] = c + np.minimum.accumulate(a_j - (c - cost[i]))
    i, j = n - 1, m - 1
    ia, ib = [i], [j]
    while i > 0 or j > 0:
        if i == 0:
            j -= 1
        elif j == 0:
            i -= 1
        else:
            diag, up, left = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
            if diag <= up and diag <= left:
                i, j = i - 1, j - 1
            elif up <= left:
                i -= 1
            else:
                j -= 1
        ia.append(i)
        ib.append(j)
    return np.array(ia[::-1]), np.array(ib[::-1]), acc


def test_dtw_path_is_the_plain_recurrence():
    rng = np.random.default_rng(7)
    for trial in range(300):
        n, m = rng.integers(1, 60, size=2)
        a = rng.standard_normal((n, 12)) * rng.uniform(0.1, 10)
        # b partly a warped copy of a, so that paths hold ties and long runs
        b = np.repeat(a, rng.integers(1, 3, size=n), axis=0)[:m] if trial % 2 else \
            rng.standard_normal((m, 12))
        penalty = (0.0, prosody.ALIGN_PENALTY)[trial % 3 == 0]
        ia, ib = prosody.dtw_path(a, b, penalty)
        ja, jb, _ = _plain_dtw(a, b, penalty)
        assert np.array_equal(ia, ja) and np.array_equal(ib, jb), trial


def test_dtw_paths_together_are_each_pair_alone():
    """Aligned side by side (a sentence's renditions at once), every pair gets the path it
    gets alone, whatever the other pairs' sizes: padding never reaches a pair's cells."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        pairs = []
        for _ in range(int(rng.integers(2, 6))):
            n, m = rng.integers(1, 50, size=2)
            a = rng.standard_normal((n, 12))
            b = np.repeat(a, rng.integers(1, 3, size=n), axis=0)[:m] if trial % 2 else \
                rng.standard_normal((m, 12))
            pairs.append((a, b))
        penalty = (0.0, prosody.ALIGN_PENALTY)[trial % 2]
        together = prosody.dtw_paths(pairs, penalty)
        assert len(together) == len(pairs)
        for (a, b), (ia, ib) in zip(pairs, together):
            ja, jb, _ = _plain_dtw(a, b, penalty)
            assert np.array_equal(ia, ja) and np.array_equal(ib, jb), trial
    assert prosody.dtw_paths([], 0.0) == []


def test_frames_are_the_indexed_frames():
    x = np.random.default_rng(3).standard_normal(16000 + 123)
    frames, times = _features._frames(x)
    win, hop = len(_features._WINDOW), int(prosody.HOP_S * prosody.ANALYSIS_RATE)
    idx = np.arange(len(times))[:, None] * hop + np.arange(win)[None, :]
    assert np.array_equal(frames, x[idx])
    assert np.array_equal(np.mean(frames ** 2, axis=1), np.mean(x[idx] ** 2, axis=1))
    assert np.array_equal(np.fft.rfft(frames * _features._WINDOW, 512),
                          np.fft.rfft(x[idx] * _features._WINDOW, 512))
    short, _ = _features._frames(np.ones(10))  # shorter than a window: padded, one frame
    assert short.shape == (1, win)


def _records(shift: float) -> list[dict]:
    from adept_eval.scoring.graded import StimulusScores

    out = []
    for q in range(6):
        graded = [StimulusScores(f"emotion/{s}/ad00_000{q % 3}", "ok",
                                 prosody_distance=q + i * 0.5 + shift, f0_rmse_st=1.0 + q,
                                 listener_distance=0.1 * q).to_dict()
                  for i, s in enumerate(("neutral", "joy"))]
        out.append({"question_id": f"q{q}", "graded": graded})
    return out


def test_graded_summary_is_computed_once_per_records_and_never_stale(monkeypatch):
    from adept_eval.scoring import graded
    from adept_eval.scoring.metric_items import SameRecord

    calls = []
    real = graded.aggregate
    monkeypatch.setattr(graded, "aggregate", lambda *a, **k: calls.append(1) or real(*a, **k))
    first, second = _records(0.0), _records(1.0)
    items = [SameRecord(r, "acc") for r in first]
    a = harness.graded_summary(first)
    assert harness.graded_summary(items) is a and len(calls) == 1  # the same records
    b = harness.graded_summary(second)
    assert len(calls) == 2 and b["prosody_distance"].mean == a["prosody_distance"].mean + 1.0
    # changed in place, the same objects: recomputed
    second[0]["graded"] = _records(5.0)[0]["graded"]
    c = harness.graded_summary(second)
    assert len(calls) == 3 and c["prosody_distance"].mean != b["prosody_distance"].mean
    # and every figure is the one computed afresh
    from adept_eval.harness import run_context

    run_context.reset()
    fresh = harness.graded_summary(first)
    assert {k: repr(v) for k, v in fresh.items()} == {k: repr(v) for k, v in a.items()}


def _profile_equal(a: prosody.SentenceProfiles, b: prosody.SentenceProfiles) -> bool:
    same = all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
               for f in _cache_files.PROFILE_ARRAYS)
    return same and all(np.array_equal(getattr(a.anchor, f), getattr(b.anchor, f), equal_nan=True)
                        for f in ("f0", "energy", "mfcc", "speech")) \
        and a.anchor.noise_floor == b.anchor.noise_floor


def _emotion_renditions(folder, seed: int) -> list[str]:
    """One sentence said neutrally, angrily and sadly (synthetic speech: plumbing only)."""
    import soundfile as sf

    from adept_eval.corpora.synthetic import PROFILES, RATE, render

    paths = []
    for sub in ("neutral", "anger", "sadness"):
        path = folder / f"{sub}.wav"
        sf.write(str(path), render("Sailors carry lanterns at night.", "female",
                                   PROFILES[("emotion", sub)], seed=seed), RATE)
        paths.append(str(path))
    return paths


def test_cached_reference_profiles_are_the_built_ones_bit_for_bit(tmp_path):
    """A reference sentence's profiles read back from the disk cache (a new process: a fresh
    store) are exactly ``sentence_profiles`` of its features, every field of them; a damaged
    entry is rebuilt, not trusted."""
    from dataclasses import fields

    assert {f.name for f in fields(prosody.SentenceProfiles)} \
        == {"anchor", *_cache_files.PROFILE_ARRAYS}  # a new field must be cached too
    paths = _emotion_renditions(tmp_path, seed=3)
    built = prosody.sentence_profiles([prosody.FeatureStore(tmp_path / "f").get(p)
                                       for p in paths])
    first = prosody.FeatureStore(tmp_path / "f").profiles(paths)
    read = prosody.FeatureStore(tmp_path / "f").profiles(paths)
    assert _profile_equal(first, built) and _profile_equal(read, built)
    (entry,) = (tmp_path / "f" / "profiles").glob("*.npy")
    entry.write_bytes(b"not a profile")
    assert _profile_equal(prosody.FeatureStore(tmp_path / "f").profiles(paths), built)
    # another order of the same recordings is another sentence's profiles, not this one's
    other = prosody.FeatureStore(tmp_path / "f").profiles(paths[::-1])
    assert not _profile_equal(other, built)


def test_cached_reference_spread_is_the_computed_one(tmp_path):
    """The natural candidates' spread (each term's unit, the boundary vote) read back from the
    disk cache is ``reference_spread`` of their profiles, and a comparison given it is the
    comparison that works it out itself; a damaged entry is rebuilt."""
    paths = _emotion_renditions(tmp_path, seed=5)
    natural, spread = prosody.FeatureStore(tmp_path / "f").reference(paths)
    expected = prosody.reference_spread(natural)
    assert spread == expected
    with pytest.MonkeyPatch.context() as mp:  # from disk: not worked out again
        mp.setattr(_store, "reference_spread", None)
        _, read = prosody.FeatureStore(tmp_path / "f").reference(paths)
    assert read == expected and set(read.scale) == set(prosody.TERMS)
    (entry,) = (tmp_path / "f" / "profiles").glob("*.spread.npy")
    entry.write_bytes(b"damaged")
    assert prosody.FeatureStore(tmp_path / "f").reference(paths)[1] == expected
    system = prosody.onto(prosody.sentence_profiles(
        [prosody.FeatureStore(tmp_path / "f").get(p) for p in paths[::-1]]), natural)
    given, worked_out = (prosody.compare_sentence(system, natural, read),
                         prosody.compare_sentence(system, natural))
    assert given.scale == worked_out.scale
    assert all(np.array_equal(given.terms[t], worked_out.terms[t]) for t in prosody.TERMS)
