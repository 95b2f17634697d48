"""Global cues of a rendition, and how far a sentence's renditions are from a class's
prototypes of them.

People asked which of five samples sounds angry judge the sample by what it conveys - higher,
wider or more moving pitch, louder, faster, sparser voicing - not by how like one particular
recording it is. These cues are each rendition's, taken relative to its own side's mean
rendition of the sentence (a speaker's voice, an engine's sentence melody cancel), and compared
with each subcategory's *prototype*: the mean of the natural renditions' cues over every sentence
of the class, so a system that conveys an emotion its own way is not held to how the reference
speaker said this one sentence.
"""

from __future__ import annotations

import numpy as np

from adept_eval.signal.prosody._features import HOP_S, JND_TEMPO, Features
from adept_eval.signal.prosody._profiles import LEVEL_VOTE_DB

#: the cues, in the order ``global_cues`` returns them
CUES = ("f0_median", "f0_range", "duration", "level", "level_dynamics", "f0_movement",
        "voicing")
#: each cue's unit of difference (semitones, semitones, log duration, dB, dB, semitones per
#: frame, share of speech frames voiced): about the least difference listeners hear
CUE_UNITS = np.array([0.5, 0.5, float(JND_TEMPO), 1.0, 0.5, 0.05, 0.03])
LEVEL = CUES.index("level")
DURATION = CUES.index("duration")


def global_cues(f: Features) -> np.ndarray:
    """One rendition's global cues.

    Args:
        f: The rendition's features.

    Returns:
        ``CUES`` in order: median and 10th-90th percentile range of F0 (semitones), log
        duration of its speech frames, speech level (dB, power mean over speech frames), the
        standard deviation of the speech frames' level (dB), the median frame-to-frame F0
        change (semitones) and the share of speech frames voiced.
    """
    speech = f.speech
    voiced = ~np.isnan(f.f0)
    f0 = f.f0[voiced]
    median = float(np.median(f0)) if f0.size else 0.0
    spread = float(np.subtract(*np.percentile(f0, [90, 10]))) if f0.size > 2 else 0.0
    duration = float(np.log(max(int(speech.sum()), 1) * HOP_S))
    level = float(10 * np.log10(np.mean(10 ** (f.energy[speech] / 10)))) if speech.any() \
        else -100.0
    dynamics = float(np.std(f.energy[speech])) if speech.sum() > 2 else 0.0
    steps = np.diff(f.f0)
    steps = steps[~np.isnan(steps)]
    movement = float(np.median(np.abs(steps))) if steps.size else 0.0
    voicing = float(voiced[speech].mean()) if speech.any() else 0.0
    return np.array([median, spread, duration, level, dynamics, movement, voicing])


def sentence_cues(renditions: list[Features]) -> np.ndarray:
    """The cues of a sentence's renditions relative to their mean, in ``CUE_UNITS``.

    Args:
        renditions: One side's renditions of a sentence (one per subcategory).

    Returns:
        (renditions, cues) deviations.
    """
    cues = np.array([global_cues(f) for f in renditions])
    return (cues - cues.mean(axis=0)) / CUE_UNITS


def cue_votes(system: np.ndarray) -> tuple[bool, bool]:
    """Whether the level and the duration cues vote, as the comparison's level and tempo terms
    do: not when the system's renditions lie within ``LEVEL_VOTE_DB`` of one another's level
    (per-file loudness normalisation), nor when their durations lie within ``JND_TEMPO``.

    Args:
        system: (renditions, cues) deviations (``sentence_cues``).

    Returns:
        (level votes, duration votes).
    """
    level = np.ptp(system[:, LEVEL]) * CUE_UNITS[LEVEL]
    duration = np.ptp(system[:, DURATION]) * CUE_UNITS[DURATION]
    return bool(level >= LEVEL_VOTE_DB), bool(duration >= JND_TEMPO)


def category_distance(system: np.ndarray, prototypes: np.ndarray, *, level_votes: bool,
                      tempo_votes: bool) -> np.ndarray:
    """Squared distance of each system rendition's cues to each subcategory's prototype.

    Args:
        system: (renditions, cues) deviations (``sentence_cues``).
        prototypes: (subcategories, cues) mean deviations of the natural renditions.
        level_votes: False when the system's renditions share one level (per-file loudness
            normalisation): the level cue then abstains.
        tempo_votes: False when the system's renditions are timed alike: the duration cue
            abstains.

    Returns:
        (renditions, subcategories) distances.
    """
    keep = np.ones(len(CUES), dtype=bool)
    keep[LEVEL] = level_votes
    keep[DURATION] = tempo_votes
    diff = system[:, None, keep] - prototypes[None, :, keep]
    return (diff ** 2).sum(axis=-1)
