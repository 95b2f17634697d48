"""Contract tests of two graded figures (adept_eval.scoring.graded) on hand-made features, with the
expected values worked out here from the definitions in ``graded.METRICS`` and the docstrings.

- energy_corr: "Pearson correlation of the frame-energy contours (dB, floored 40 dB below the
  voice's speech level) over frames that are speech in either";
- match_pauses: pauses pair one-to-one, "greedily by how many path points they share".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from adept_eval.scoring import graded
from adept_eval.scoring.graded import Alignment, Pause
from adept_eval.signal.prosody import Features, VoiceNorm

N = 40


def _features(energy: np.ndarray, speech: np.ndarray) -> Features:
    n = len(energy)
    rng = np.random.default_rng(n)
    return Features(np.full(n, np.nan), np.asarray(energy, dtype=float),
                    rng.normal(size=(n, 12)), np.asarray(speech, dtype=bool))


def _pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    dx, dy = x - x.mean(), y - y.mean()
    return float((dx * dy).sum() / math.sqrt((dx * dx).sum() * (dy * dy).sum()))


def _identity() -> Alignment:
    return Alignment(np.arange(N), np.arange(N))


# ----------------------------------------------------------------------------- energy_corr
def _speaking_where_the_other_is_silent():
    """Sample: speech in every frame, its syllables' level rising and falling, 6 dB quieter
    over the last quarter. Reference: the same syllables (a little out of phase) for three
    quarters, then digital silence (-100 dB), not speech."""
    k = np.arange(N)
    s = -20.0 + 6 * np.sin(2 * np.pi * k / 10) - 6.0 * (k >= 30)
    r = np.where(k < 30, -22.0 + 6 * np.sin(2 * np.pi * k / 10 + 0.4), -100.0)
    return (_features(s, np.ones(N, dtype=bool)), _features(r, k < 30),
            VoiceNorm(0.0, -20.0), VoiceNorm(0.0, -22.0))


def test_energy_correlation_counts_frames_that_are_speech_in_either_floored_at_40_db():
    sample, reference, s_norm, r_norm = _speaking_where_the_other_is_silent()
    got = graded.score(sample, reference, sample_norm=s_norm, reference_norm=r_norm,
                       alignment=_identity(), distances=[1.0, 2.0]).energy_corr

    # by the definition: every frame is speech in the sample, so all 40 count; the
    # reference's silence (-100 dB, 78 dB under its speech level of -22) counts as -40
    s_rel = sample.energy - (-20.0)
    r_rel = np.maximum(reference.energy - (-22.0), -40.0)
    expected = _pearson(s_rel, r_rel)
    assert got == pytest.approx(expected, abs=1e-9)

    # what the two misreadings would give instead differs well beyond the tolerance: only the
    # frames speech in both, or the silence at its raw level
    both = np.arange(N) < 30
    assert abs(expected - _pearson(s_rel[both], r_rel[both])) > 0.2
    assert abs(expected - _pearson(s_rel, reference.energy - (-22.0))) > 0.05


def test_energy_correlation_is_symmetric_in_who_is_silent():
    """The same with the roles swapped: the sample silent where the reference speaks."""
    sample, reference, s_norm, r_norm = _speaking_where_the_other_is_silent()
    got = graded.score(reference, sample, sample_norm=r_norm, reference_norm=s_norm,
                       alignment=_identity(), distances=[1.0, 2.0]).energy_corr
    expected = _pearson(np.maximum(reference.energy + 22.0, -40.0), sample.energy + 20.0)
    assert got == pytest.approx(expected, abs=1e-9)


def test_energy_floor_is_40_db_under_each_voices_own_speech_level():
    """The floor follows each voice's level (``VoiceNorm.energy``), not full scale: frames
    50 or 90 dB under the sample's level and 45 dB under the reference's all read as 40 dB
    under, so two contours that agree wherever either is above the floor correlate fully."""
    k = np.arange(N)
    pattern = 4 * np.sin(2 * np.pi * k / 8)
    quiet = (k % 8) >= 6  # two frames in eight, far under the voice's level
    s = np.where(quiet, np.where(k % 8 == 6, -50.0, -90.0), pattern) - 10.0
    r = np.where(quiet, -45.0, pattern) - 30.0
    speech = np.ones(N, dtype=bool)
    got = graded.score(_features(s, speech), _features(r, speech),
                       sample_norm=VoiceNorm(0.0, -10.0), reference_norm=VoiceNorm(0.0, -30.0),
                       alignment=_identity(), distances=[1.0, 2.0]).energy_corr
    # by the definition both read np.where(quiet, -40, pattern): the same contour
    assert got == pytest.approx(1.0, abs=1e-9)
    # unfloored, the quiet frames disagree (-50 / -90 against -45): far from 1
    assert _pearson(s + 10.0, r + 30.0) < 0.97


# ----------------------------------------------------------------------------- match_pauses
def test_pauses_pair_greedily_largest_shared_stretch_first():
    """Sample pauses A1 (frames 10-20) and A2 (36-46), reference pauses B1 (10-20) and B2
    (24-34); the path is the identity, each pause widened by 60 ms (3 frames) either side.
    Shared points: A1-B1 16 ([7, 23)), A2-B2 4 ([33, 37)), A1-B2 2 ([21, 23)). Taken largest
    first: A1-B1, then A2-B2 - two pairs. (Smallest first would take A1-B2 and leave A2 and
    B1 unpaired: one.)"""
    a = [Pause(10, 20), Pause(36, 46)]
    b = [Pause(10, 20), Pause(24, 34)]
    path = Alignment(np.arange(60), np.arange(60))
    assert graded.match_pauses(a, b, path) == 2
    assert graded.match_pauses(b, a, path) == 2


def test_a_pause_touching_two_pauses_pairs_once():
    """One-to-one: a sample pause whose widened stretch reaches two reference pauses (A1
    10-20 widened [7, 23); B1 10-20, B2 22-30 widened [19, 33)) is one pair, not two."""
    path = Alignment(np.arange(60), np.arange(60))
    assert graded.match_pauses([Pause(10, 20)], [Pause(10, 20), Pause(22, 30)], path) == 1
    assert graded.match_pauses([], [Pause(10, 20)], path) == 0
