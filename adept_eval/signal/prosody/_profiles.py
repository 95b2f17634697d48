"""Sentence-relative profiles: every rendition of a sentence as its deviation from the mean
rendition.

ADEPT records every subcategory of a sentence, and a system synthesises every one of them too.
Subtracting each side's *mean rendition of the sentence* from each rendition leaves what the
subcategory changes (an accent here, a pause there, a higher and faster voice) and cancels
what the voice or engine does to every rendition alike (its sentence melody, declination,
speaking rate, level). Renditions of one side are aligned to that side's first rendition
(same voice: reliable), and the two sides' first renditions to each other once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from adept_eval.signal.prosody._alignment import dtw_paths
from adept_eval.signal.prosody._features import HOP_S, JND_TEMPO, Features, above_noise


ALIGN_PENALTY = 2.0  # ``dtw_path`` diagonal penalty used for every alignment here
ENERGY_FLOOR_DB = 40.0  # frames more than this below a rendition's loudest count as this
PAUSE_BELOW_MAX_DB = 30.0  # a frame is silent when this far below the utterance's loudest
MIN_PAUSE_S = 0.15  # ... and a pause is at least this long (stop closures are shorter, even
# stretched by PSOLA or a slow rate; phrase breaks are longer)
SHORT_BREAK_FROM_S = 0.08  # silences from this long to ``MIN_PAUSE_S`` count as part of a break
PAUSE_SPREAD = 8  # a pause is heard between two words: spread over +-160 ms of speech
PAUSE_SCALE_FLOOR_S = 0.1  # candidates without pauses: a 100 ms pause is one unit
# Salience: where a rendition stands out from the sentence's other renditions, whatever the
# cue - its pitch leaves its own course (a rise or a fall alike), it is louder than its own
# average, slower, or pauses. One unit per cue (a clear accent or break), then summed:
SALIENCE_UNITS = {"f0": 2.0, "energy": 3.0, "tempo": 0.15, "pause": 0.05}
SALIENCE_SMOOTH = 5  # frames (100 ms): a syllable, not a frame
# Level: a system whose renditions all have one level (a pipeline that normalises loudness per
# file) says nothing about level; below this spread of their speech powers (dB, loudest minus
# quietest rendition: ``SentenceProfiles.level_spread``) its level term abstains for every
# candidate alike instead of favouring the flattest one.
LEVEL_VOTE_DB = 1.5
# Tempo, likewise: a system whose renditions of a sentence are timed alike - the 95th
# percentile, over every rendition's frames on the references' time axis, of how far its local
# tempo lies from the mean rendition's is under a just-noticeable 8%, as when a system moves
# only the pitch or the loudness of a focused word - says nothing about timing, and its tempo
# term (local tempo and total length alike) abstains instead of favouring the candidate whose
# references are timed most evenly (the reference of a final focus lengthens the last word, so
# an F0-only system's flat timing would point away from it). Every system of the validation
# bench's tuning and reserved rotations that lengthens anything lies above it (its least: 0.10,
# native phrase breaks; a third of every effect: 0.06 on 2 of 120 focus sentences).
TEMPO_VOTE = JND_TEMPO
TEMPO_SPREAD_PERCENTILE = 95.0
# Boundary: where a rendition marks a phrase boundary more than the sentence's other renditions
# do, by any of its cues - a pause, the lengthening of the stretch before it, the pitch
# starting higher after it than before (a reset) - each in the units a listener would weigh
# about alike, like the salience profile. Engines mark a comma their own way (flite with
# 60-80 ms of silence, festival at times with none; a system may lengthen and reset without
# pausing), so the pause alone does not say where the break is.
# The pause cue counts every silence inside the utterance from ``JUNCTURE_SILENCE_S`` on, in
# full seconds, at its place: spread over +-160 ms with its peak (not its sum) equal to its
# length, so that "0.03 s of pause is one unit" holds where the break is. A silence where the
# other reading has none is a juncture cue however short (flite marks commas with 60-80 ms); a
# stop closure is where every reading has it and cancels in the deviation from the mean
# rendition. A short silence kept in the alignment counts at its middle and a cut pause at the
# frame before it (which, with the pause cut, is where it was), so a silence stays at its place
# on either side of ``MIN_PAUSE_S``. The lengthening cue is how much slower the 200 ms before a
# point are (one-sided: comparing before with after would also put a negative boundary where a
# lengthened stretch starts). The pause unit of 0.03 s (a 60-80 ms comma is 2-2.7 units) is
# the best of 0.017-0.07 s on the tuning and reserved rotations' syntactic phrasing, with no
# task lower on any of their families; compressing long pauses (square root, log, a cap at
# 150 ms) scores lower there.
BOUNDARY_HALF_WINDOW = 10  # frames (200 ms) before (lengthening) or either side (reset)
BOUNDARY_VOTE_S = 2 * MIN_PAUSE_S  # a shortest pause moved from one place to another
BOUNDARY_UNITS = {"pause": 0.03, "lengthening": 0.15, "reset": 2.0}
JUNCTURE_SILENCE_S = 0.04  # two frames: the shortest silence that is a run, not a dip
PITCH_MOVEMENT_HALF_WINDOW = 5  # frames either side (+-100 ms: about a syllable)


@dataclass(frozen=True)
class SentenceProfiles:
    """Every rendition of one sentence by one voice, as deviations from their mean, on the
    time axis of the first rendition's speech (the anchor: pauses cut out). Rows are
    renditions."""

    anchor: Features
    f0: np.ndarray  # (R, N) semitones from the mean rendition; NaN where unvoiced
    energy: np.ndarray  # (R, N) dB from the mean rendition, each rendition's own level removed
    tempo: np.ndarray  # (R, N) log local duration from the mean rendition
    length: np.ndarray  # (R,) log total duration from the mean rendition
    pause: np.ndarray  # (R, N) seconds of pause around each frame, from the mean rendition
    level: np.ndarray  # (R,) dB: each rendition's speech level from the mean rendition
    # (R,) dB: each rendition's speech power from the mean rendition - what a per-file loudness
    # normaliser equalises, so what tells whether the system carries level at all
    power: np.ndarray
    salience: np.ndarray  # (R, N) how much more the rendition stands out here than the others
    boundary: np.ndarray  # (R, N) how much more the rendition marks a phrase boundary here

    def on(self, index: np.ndarray) -> SentenceProfiles:
        """The profiles read at anchor frames ``index`` (to move them onto another time axis).

        Args:
            index: The anchor frame to read at each new frame.

        Returns:
            The profiles on the new time axis.
        """
        return SentenceProfiles(self.anchor, self.f0[:, index], self.energy[:, index],
                                self.tempo[:, index], self.length, self.pause[:, index],
                                self.level, self.power, self.salience[:, index],
                                self.boundary[:, index])

    @property
    def level_spread(self) -> float:
        """How far apart the renditions' speech powers lie (dB): under ``LEVEL_VOTE_DB`` the
        system carries no level and the level term abstains. Power, not the mean of the frame
        decibels the term compares: a slow rendition has more quiet frames, so after per-file
        normalisation its mean decibel still reads 5-6 dB under the others'."""
        return float(np.ptp(self.power)) if self.power.size else 0.0

    @property
    def tempo_spread(self) -> float:
        """How differently the renditions are timed: the ``TEMPO_SPREAD_PERCENTILE``-th
        percentile of their local tempo's distance from the mean rendition's (log ratio)."""
        return (float(np.percentile(np.abs(self.tempo), TEMPO_SPREAD_PERCENTILE))
                if self.tempo.size else 0.0)


def power_db(frames_db: np.ndarray) -> float:
    """A rendition's speech power: 10 log10 of the mean of its frames' powers (dB; frame levels
    lie between the -100 dB floor of ``extract`` and a few dB over full scale, far from where a
    power under- or overflows).

    Args:
        frames_db: The frames' levels (dB).

    Returns:
        The power (dB); NaN without frames.
    """
    if not frames_db.size:
        return float("nan")  # as the mean of no frames: a rendition with no speech has no level
    return float(10.0 * np.log10(np.mean(10.0 ** (frames_db / 10.0))))


def pitch_excursion(f: Features) -> np.ndarray:
    """Per frame, how much the rendition's pitch stands out there (semitones, >= 0): the
    larger of its distance from the rendition's own course (the straight line through its
    voiced pitch: register and declination) and how far it moves within about a syllable
    (the range of the pitch, bridged across unvoiced stretches, within +-100 ms).

    A raised accent, a falling one and a rise-fall all stand out; the voice's register, its
    declination and a global pitch shift do not. The distance from the course alone misses
    accents realised as a fall through the course (high at the word's onset, low at its end:
    at the word's middle it is *on* the line), which the movement within the syllable
    catches. The course is a straight line, not a running median: at the edges a median
    follows a final fall, and a focus on the last word would go unseen.

    Args:
        f: The rendition's features.

    Returns:
        The excursion per frame (zeros with fewer than 3 voiced frames).
    """
    filled = _bridged_pitch(f)
    if filled is None:
        return np.zeros(f.n)
    voiced, frames = ~np.isnan(f.f0), np.arange(f.n)
    slope, intercept = np.polyfit(frames[voiced], f.f0[voiced], 1)
    half = PITCH_MOVEMENT_HALF_WINDOW
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(filled, half, mode="edge"),
                                                       2 * half + 1)
    movement = windows.max(axis=1) - windows.min(axis=1)
    return np.maximum(np.abs(filled - (slope * frames + intercept)), movement)


def pause_runs(feats: Features, below_max_db: float = PAUSE_BELOW_MAX_DB,
               min_pause_s: float = MIN_PAUSE_S) -> list[tuple[int, int]]:
    """Silent stretches inside the utterance, as (first, past-the-end) frame indices.

    A frame is silent when its energy is more than ``below_max_db`` below the utterance's
    loudest frame or less than ``ABOVE_NOISE_DB`` above its noise floor; a pause is a run of at
    least ``min_pause_s`` of silent frames that neither starts nor ends the (speech-trimmed)
    utterance. 150 ms is long enough to exclude stop closures and short enough to catch phrase
    breaks. (The listener's pause term and the graded pause figures both use this.)

    Args:
        feats: The utterance's features.
        below_max_db: How far under the loudest frame a frame is silent.
        min_pause_s: The shortest pause (seconds).

    Returns:
        (first, past-the-end) frame of each pause, in order.
    """
    if feats.n == 0:
        return []
    silent = feats.energy < above_noise(float(feats.energy.max()), feats.noise_floor, below_max_db)
    min_frames = max(1, int(np.ceil(min_pause_s / HOP_S - 1e-9)))
    edges = np.diff(np.concatenate(([0], silent.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(start), int(stop)) for start, stop in zip(starts, stops)
            if stop - start >= min_frames and start > 0 and stop < feats.n]


def _speech_and_silences(f: Features) -> tuple[Features, np.ndarray, np.ndarray]:
    """The rendition with its pauses cut out, the pause (seconds) that follows each kept frame,
    and every silence inside the utterance from ``JUNCTURE_SILENCE_S`` on, in full seconds (the
    boundary's pause cue: a pause that is cut out at the frame before it - with the pause cut,
    where it was - and a shorter silence at its middle, so that a silence sits at its place on
    either side of ``MIN_PAUSE_S``).

    Aligning spectra across a pause lets dynamic time warping match one rendition's pause with
    another's pause elsewhere, hiding *where* the phrase break is; words aligned to words, with
    the breaks between them as a feature of their own, keep it. Shorter silences
    (``SHORT_BREAK_FROM_S`` up to ``MIN_PAUSE_S``) stay in place for the alignment but count as
    part of a break at the frame where speech resumes, the more the longer they last (none at
    80 ms, all at 150 ms): an engine's own comma can be a 100-140 ms silence, while stop
    closures stretched by slow speech reach about 100 ms (counted at most a third)."""
    runs = pause_runs(f)
    keep = np.ones(f.n, dtype=bool)
    pause_after = np.zeros(f.n)
    for start, stop in runs:
        keep[start:stop] = False
        pause_after[start - 1] = (stop - start) * HOP_S
    if keep.sum() < 3 or not runs:
        keep, pause_after = np.ones(f.n, dtype=bool), np.zeros(f.n)
    silence_after = pause_after.copy()
    for start, stop in pause_runs(f, min_pause_s=JUNCTURE_SILENCE_S):
        seconds = (stop - start) * HOP_S
        if keep[start] and seconds < MIN_PAUSE_S:  # not cut out: a short break, partly counted
            share = (seconds - SHORT_BREAK_FROM_S) / (MIN_PAUSE_S - SHORT_BREAK_FROM_S)
            pause_after[stop] += seconds * float(np.clip(share, 0.0, 1.0))
            silence_after[(start + stop) // 2] += seconds
    if keep.all():
        return f, pause_after, silence_after
    return (Features(f.f0[keep], f.energy[keep], f.mfcc[keep], f.speech[keep], f.noise_floor),
            pause_after[keep], silence_after[keep])


def _positions(a: Features, b: Features) -> np.ndarray:
    """For every frame of ``a``, the matching (fractional) frame of ``b``. Aligned at 40 ms
    (every other frame: a quarter of the work; prosody needs no finer)."""
    return _positions_many(a, [b])[0]


def _positions_many(a: Features, others: list[Features]) -> list[np.ndarray]:
    """``_positions(a, b)`` for each ``b`` in ``others``, aligned together (``dtw_paths``).

    The alignment steps every other frame (frames 0, 2, 4, ...) and is read in between; its
    ends are pinned, as the alignment's own are: ``a``'s last frame to ``b``'s last. (Left to
    the 40 ms steps, a rendition of an even number of frames would never reach its last frame,
    and every rendition but the first - whose positions are the identity - would seem to slow
    down at its end.)"""
    a2 = a.mfcc[::2]
    out = []
    for b, (ia, ib) in zip(others, dtw_paths([(a2, b.mfcc[::2]) for b in others],
                                             ALIGN_PENALTY)):
        counts = np.bincount(ia, minlength=len(a2))
        frames_a = 2.0 * np.arange(len(a2))
        frames_b = 2.0 * np.bincount(ia, weights=ib, minlength=len(a2)) / np.maximum(counts, 1)
        if frames_a[-1] < a.n - 1:
            frames_a, frames_b = np.append(frames_a, a.n - 1), np.append(frames_b, b.n - 1)
        else:
            frames_b[-1] = b.n - 1
        out.append(np.clip(np.interp(np.arange(a.n), frames_a, frames_b), 0, b.n - 1))
    return out


def _smooth(x: np.ndarray, width: int) -> np.ndarray:
    """A moving average of ``width`` frames, edges held (the mean when shorter than that)."""
    if len(x) < width:
        return np.full_like(x, x.mean())
    pad = np.pad(x, width // 2, mode="edge")
    return np.convolve(pad, np.ones(width) / width, mode="valid")[: len(x)]


def sentence_profiles(renditions: list[Features]) -> SentenceProfiles:
    """Every rendition of one sentence by one voice as its deviation from their mean, on the
    time axis of the first rendition's speech (pauses cut out).

    Args:
        renditions: The renditions' features, the anchor first.

    Returns:
        The profiles, one row per rendition.
    """
    cut = [_speech_and_silences(rendition) for rendition in renditions]
    anchor = cut[0][0]
    kernel = np.bartlett(2 * PAUSE_SPREAD + 3)[1:-1]
    kernel = kernel / kernel.sum()
    f0, energy, tempo, length, pause, level, excursion = [], [], [], [], [], [], []
    reset, gap, power = [], [], []
    others = _positions_many(anchor, [speech for speech, _, _ in cut[1:]])
    positions = [np.arange(anchor.n, dtype=float), *others]
    for i, (speech, after, silences) in enumerate(cut):
        pos = positions[i]
        idx = np.clip(np.round(pos).astype(int), 0, speech.n - 1)
        f0.append(speech.f0[idx])
        floored = np.maximum(speech.energy, above_noise(float(speech.energy.max()),
                                                        speech.noise_floor, ENERGY_FLOOR_DB))
        level.append(float(np.mean(floored)))
        power.append(power_db(floored))
        energy.append(floored[idx] - np.mean(floored))
        excursion.append(pitch_excursion(speech)[idx])
        reset.append(pitch_reset(speech)[idx])
        slope = np.gradient(_smooth(pos, 9)) if anchor.n > 1 else np.ones(anchor.n)
        tempo.append(np.log(np.maximum(slope, 0.1)))
        length.append(np.log(max(renditions[i].n, 1)))
        pause.append(np.convolve(_on_anchor(after, pos), kernel, mode="same"))
        gap.append(np.convolve(_on_anchor(silences, pos), kernel / kernel.max(), mode="same"))
    f0, energy, tempo, length, pause, level, excursion, power = map(
        np.array, (f0, energy, tempo, length, pause, level, excursion, power))
    with warnings.catch_warnings():  # a frame no rendition voices has a NaN mean: intended
        warnings.simplefilter("ignore", RuntimeWarning)
        f0_mean = np.nanmean(f0, axis=0)
    energy, tempo, pause = energy - energy.mean(0), tempo - tempo.mean(0), pause - pause.mean(0)
    units = SALIENCE_UNITS
    salience = ((excursion - excursion.mean(0)) / units["f0"] + energy / units["energy"]
                + tempo / units["tempo"] + pause / units["pause"])
    salience = np.array([_smooth(row, SALIENCE_SMOOTH) for row in salience])
    units = BOUNDARY_UNITS
    reset = np.array(reset)
    gap = np.array(gap)
    gap = gap - gap.mean(0)
    boundary = (gap / units["pause"]
                + np.array([_slower_before(row) for row in tempo]) / units["lengthening"]
                + (reset - reset.mean(0)) / units["reset"])
    boundary = np.array([_smooth(row, SALIENCE_SMOOTH) for row in boundary])
    return SentenceProfiles(anchor, f0 - f0_mean, energy, tempo, length - length.mean(), pause,
                            level - level.mean(), power - power.mean(), salience, boundary)


def _on_anchor(seconds: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """A rendition's pauses (seconds at its frames) on the anchor's time axis (``pos``: the
    rendition frame matching each anchor frame): each lands once, on the anchor frame nearest
    to where it falls."""
    out = np.zeros(len(pos))
    for j in np.flatnonzero(seconds):
        out[int(np.argmin(np.abs(pos - j)))] += seconds[j]
    return out


def _step_down(x: np.ndarray, w: int = BOUNDARY_HALF_WINDOW) -> np.ndarray:
    """Per frame, the mean of ``x`` over the ``w`` frames before minus over the ``w`` after."""
    if len(x) < 2:
        return np.zeros(len(x))
    c = np.concatenate(([0.0], np.cumsum(np.pad(x, w, mode="edge"))))
    i = np.arange(len(x)) + w
    return (c[i] - c[i - w]) / w - (c[i + w] - c[i]) / w


def _slower_before(x: np.ndarray, w: int = BOUNDARY_HALF_WINDOW) -> np.ndarray:
    """Per frame, the mean of ``x`` (log local duration) over the ``w`` frames before it:
    the lengthening of the stretch a boundary there would end."""
    if len(x) < 2:
        return np.zeros(len(x))
    c = np.concatenate(([0.0], np.cumsum(np.pad(x, (w, 0), mode="edge"))))
    i = np.arange(len(x)) + w
    return (c[i] - c[i - w]) / w


def pitch_reset(f: Features) -> np.ndarray:
    """Per frame, how far the pitch (bridged across unvoiced stretches) rises from the 200 ms
    before it to the 200 ms after it (semitones): a phrase starting afresh after a boundary.

    Args:
        f: The rendition's features.

    Returns:
        The reset per frame (zeros with fewer than 3 voiced frames).
    """
    filled = _bridged_pitch(f)
    return np.zeros(f.n) if filled is None else -_step_down(filled)


def _bridged_pitch(f: Features) -> np.ndarray | None:
    """The pitch at every frame, unvoiced stretches bridged by straight lines between their
    voiced neighbours (None with fewer than 3 voiced frames: no course to speak of)."""
    voiced = ~np.isnan(f.f0)
    if voiced.sum() < 3:
        return None
    t = np.arange(f.n)
    return np.interp(t, t[voiced], f.f0[voiced])


def onto(system: SentenceProfiles, natural: SentenceProfiles) -> SentenceProfiles:
    """The system's profiles on the natural anchor's time axis (one cross-voice alignment, on
    variance-normalised cepstra: ``_standardised_cepstra``).

    Args:
        system: The system's profiles.
        natural: The natural candidates' profiles.

    Returns:
        The system's profiles read at the natural anchor's frames.
    """
    pos = _positions(_standardised_cepstra(natural.anchor), _standardised_cepstra(system.anchor))
    return system.on(np.clip(np.round(pos).astype(int), 0, system.anchor.n - 1))


def _standardised_cepstra(f: Features) -> Features:
    """``f`` with each cepstral coefficient centred and scaled to unit variance over its frames
    (cepstral mean and variance normalisation; Viikki & Laurila 1998): two voices spread their
    coefficients differently, and without it the frame cost of a cross-voice alignment is
    dominated by whichever coefficients one voice happens to move most."""
    centred = f.mfcc - f.mfcc.mean(axis=0, keepdims=True)
    sd = centred.std(axis=0, keepdims=True)
    return replace(f, mfcc=centred / np.where(sd > 0, sd, 1.0))
