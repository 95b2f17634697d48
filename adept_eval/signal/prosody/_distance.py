"""A prosodic distance between two renditions of one sentence, after speaker normalisation.

F0 is taken relative to the voice's median and energy relative to its median speech level, so
a system whose voice is higher or louder than ADEPT's is not penalised for that, only for the
shape of its prosody.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adept_eval.signal.prosody._alignment import dtw_path
from adept_eval.signal.prosody._features import (
    JND_ENERGY_DB,
    JND_F0_ST,
    JND_TEMPO,
    JND_TIMING,
    MISSING_F0_ST,
    Features,
)


@dataclass(frozen=True)
class VoiceNorm:
    """A voice's reference levels: median F0 (semitones) and median speech energy (dB)."""

    f0: float
    energy: float

    @classmethod
    def of(cls, feats: list[Features]) -> "VoiceNorm":
        """The norm of a voice: the medians over all its renditions' voiced and speech frames.

        Args:
            feats: The voice's renditions.

        Returns:
            The voice's norm (0.0 for a level with no frame to go on).
        """
        f0 = np.concatenate([f.f0 for f in feats])
        en = np.concatenate([f.energy[f.speech] for f in feats])
        f0 = f0[~np.isnan(f0)]
        return cls(float(np.median(f0)) if f0.size else 0.0,
                   float(np.median(en)) if en.size else 0.0)


def _beyond(x: np.ndarray, jnd: float) -> np.ndarray:
    """How far each deviation lies beyond the just-noticeable difference (0 within it)."""
    return np.maximum(np.abs(x) - jnd, 0.0)


def distance(sys: Features, sys_norm: VoiceNorm, nat: Features, nat_norm: VoiceNorm) -> float:
    """How differently two renditions of the same sentence are spoken (0 = indistinguishable).

    Sum of four terms, each in units of roughly one just-noticeable difference:
    F0 contour (semitones), energy contour (dB / 3), overall tempo (log duration ratio) and
    local timing (where along the sentence time is spent: pauses, lengthening).

    Args:
        sys: The system's rendition.
        sys_norm: The system voice's norm.
        nat: The natural rendition.
        nat_norm: The natural voice's norm.

    Returns:
        The distance; inf when either rendition has fewer than 3 frames.
    """
    if sys.n < 3 or nat.n < 3:
        return float("inf")
    ia, ib = dtw_path(sys.mfcc, nat.mfcc)
    f0_s = sys.f0[ia] - sys_norm.f0
    f0_n = nat.f0[ib] - nat_norm.f0
    both = ~np.isnan(f0_s) & ~np.isnan(f0_n)
    # where the natural rendition is voiced and the system's is not, the deviation is large
    missing = np.isnan(f0_s) & ~np.isnan(f0_n)
    dev = np.where(missing, MISSING_F0_ST, _beyond(np.nan_to_num(f0_s - f0_n), JND_F0_ST))
    judged = both | missing
    f0_term = float(np.mean(dev[judged])) if judged.any() else MISSING_F0_ST
    e_s = sys.energy[ia] - sys_norm.energy
    e_n = nat.energy[ib] - nat_norm.energy
    speech = sys.speech[ia] | nat.speech[ib]
    e_term = float(np.mean(_beyond(np.maximum(e_s, -40) - np.maximum(e_n, -40),
                                   JND_ENERGY_DB)[speech])) / 3.0 if speech.any() else 0.0
    tempo = float(_beyond(np.array([np.log(sys.n / nat.n)]), JND_TEMPO)[0]) * 10.0
    timing = float(np.mean(_beyond(ia / (sys.n - 1) - ib / (nat.n - 1), JND_TIMING))) * 20.0
    return f0_term + e_term + tempo + timing


def distance_terms(sys: Features, sys_norm: VoiceNorm, nat: Features, nat_norm: VoiceNorm
                   ) -> dict[str, float]:
    """``distance`` split into its terms (f0, energy, tempo, timing); they sum to ``distance``.

    Args:
        sys: The system's rendition.
        sys_norm: The system voice's norm.
        nat: The natural rendition.
        nat_norm: The natural voice's norm.

    Returns:
        Each term's share; all inf when either rendition has fewer than 3 frames.
    """
    if sys.n < 3 or nat.n < 3:
        return {"f0": float("inf"), "energy": float("inf"), "tempo": float("inf"),
                "timing": float("inf")}
    ia, ib = dtw_path(sys.mfcc, nat.mfcc)
    f0_s, f0_n = sys.f0[ia] - sys_norm.f0, nat.f0[ib] - nat_norm.f0
    both = ~np.isnan(f0_s) & ~np.isnan(f0_n)
    missing = np.isnan(f0_s) & ~np.isnan(f0_n)
    dev = np.where(missing, MISSING_F0_ST, _beyond(np.nan_to_num(f0_s - f0_n), JND_F0_ST))
    judged = both | missing
    e_s, e_n = sys.energy[ia] - sys_norm.energy, nat.energy[ib] - nat_norm.energy
    speech = sys.speech[ia] | nat.speech[ib]
    return {
        "f0": float(np.mean(dev[judged])) if judged.any() else MISSING_F0_ST,
        "energy": float(np.mean(_beyond(np.maximum(e_s, -40) - np.maximum(e_n, -40),
                                        JND_ENERGY_DB)[speech])) / 3.0 if speech.any() else 0.0,
        "tempo": float(_beyond(np.array([np.log(sys.n / nat.n)]), JND_TEMPO)[0]) * 10.0,
        "timing": float(np.mean(_beyond(ia / (sys.n - 1) - ib / (nat.n - 1), JND_TIMING))) * 20.0,
    }
