"""Comparing a system's sentence profiles with the natural candidates', term by term, in units of
how far the candidates lie from one another.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from adept_eval.signal.prosody._features import MISSING_F0_ST
from adept_eval.signal.prosody._profiles import (
    BOUNDARY_VOTE_S,
    LEVEL_VOTE_DB,
    PAUSE_SCALE_FLOOR_S,
    TEMPO_VOTE,
    SentenceProfiles,
)


TERMS = ("f0", "energy", "level", "tempo", "pause", "salience", "boundary")


def _discriminative_weights(natural: SentenceProfiles) -> dict[str, np.ndarray]:
    """Per frame, how much the natural candidates differ there: where listening pays off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f0_sd = np.nan_to_num(np.nanstd(natural.f0, axis=0))
    return {"f0": f0_sd + 0.3, "energy": natural.energy.std(0) + 1.0,
            "tempo": natural.tempo.std(0) + 0.05}


def _correlation_distance(a: np.ndarray, b: np.ndarray) -> float:
    """(1 - Pearson r) / 2: 0 when two profiles rise and fall together, 1 when opposed, 0.5
    when unrelated or when either is flat. Scale-free: a weaker accent in the right place is
    still in the right place."""
    a, b = a - a.mean(), b - b.mean()
    den = float(np.sqrt(np.sum(a * a) * np.sum(b * b)))
    return 0.5 if den <= 1e-12 else float(1.0 - np.sum(a * b) / den) / 2.0


def _term_distances(sys: SentenceProfiles, i: int, nat: SentenceProfiles, j: int, w,
                    level_votes: bool = True, boundary_votes: bool = True,
                    tempo_votes: bool = True) -> dict[str, float]:
    """Each term's distance between rendition ``i`` of ``sys`` and candidate ``j`` of ``nat``
    (``w``: the natural candidates' weights per frame; a term that does not vote is 0)."""
    nat_f0, sys_f0 = nat.f0[j], sys.f0[i]
    judged = ~np.isnan(nat_f0)
    f0_dev = np.where(np.isnan(sys_f0), MISSING_F0_ST, np.abs(np.nan_to_num(sys_f0 - nat_f0)))
    f0 = float(np.sum((w["f0"] * f0_dev)[judged]) / max(np.sum(w["f0"][judged]), 1e-9)) \
        if judged.any() else MISSING_F0_ST
    energy = float(np.sum(w["energy"] * np.abs(sys.energy[i] - nat.energy[j]))
                   / np.sum(w["energy"]))
    tempo = (float(np.sum(w["tempo"] * np.abs(sys.tempo[i] - nat.tempo[j])) / np.sum(w["tempo"]))
             + abs(float(sys.length[i] - nat.length[j]))) if tempo_votes else 0.0
    level = abs(float(sys.level[i] - nat.level[j])) if level_votes else 0.0
    # pauses are events, not levels: summed (seconds), not averaged over the sentence
    return {"f0": f0, "energy": energy, "level": level, "tempo": tempo,
            "pause": float(np.sum(np.abs(sys.pause[i] - nat.pause[j]))),
            "salience": _correlation_distance(sys.salience[i], nat.salience[j]),
            "boundary": (_correlation_distance(sys.boundary[i], nat.boundary[j])
                         if boundary_votes else 0.0)}


@dataclass(frozen=True)
class Comparison:
    """Sentence-relative distances of system renditions (rows) to natural candidates (columns),
    per term, each in units of how far the natural candidates lie from one another."""

    terms: dict[str, np.ndarray]  # term -> (S, K) raw distance
    scale: dict[str, float]  # term -> mean distance between distinct natural candidates

    def total(self, weights: dict[str, float]) -> np.ndarray:
        """The weighted sum of the terms, each in its scale's units.

        Args:
            weights: Each term's weight.

        Returns:
            (S, K) total distances.
        """
        return sum(weights[t] * self.terms[t] / self.scale[t] for t in TERMS)


SCALE_FLOORS = {"pause": PAUSE_SCALE_FLOOR_S, "level": 1.0, "salience": 0.05, "boundary": 0.05}


@dataclass(frozen=True)
class ReferenceSpread:
    """How far a sentence's natural candidates lie from one another, a property of the
    references alone (``FeatureStore.reference`` caches it with their profiles): per term,
    the mean distance between two distinct candidates (at least ``SCALE_FLOORS``), the unit
    every distance to them is expressed in; and whether they place their breaks differently
    (only then does the boundary term vote)."""

    scale: dict[str, float]
    boundary_votes: bool


def reference_spread(natural: SentenceProfiles, w: dict[str, np.ndarray] | None = None
                     ) -> ReferenceSpread:
    """How far a sentence's natural candidates lie from one another, term by term.

    Args:
        natural: The natural candidates' profiles.
        w: Their ``_discriminative_weights``, or None to work them out.

    Returns:
        The spread: per term the mean distance between two distinct candidates (at least
        ``SCALE_FLOORS``), and whether the boundary term votes.
    """
    w = _discriminative_weights(natural) if w is None else w
    candidates = natural.f0.shape[0]
    pairs = [_term_distances(natural, a, natural, b, w) for a in range(candidates)
             for b in range(candidates) if a != b]
    # the references place their breaks differently: only then is "where are the boundaries"
    # a question (elsewhere the boundary profiles hold timing noise and would only add it)
    boundary_votes = bool(pairs) and float(np.mean([pair["pause"] for pair in pairs])) \
        >= BOUNDARY_VOTE_S
    scale = {t: max(float(np.mean([pair[t] for pair in pairs])) if pairs else 1.0,
                    SCALE_FLOORS.get(t, 1e-3)) for t in TERMS}
    return ReferenceSpread(scale, boundary_votes)


def compare_sentence(system: SentenceProfiles, natural: SentenceProfiles,
                     spread: ReferenceSpread | None = None) -> Comparison:
    """Every system rendition against every natural candidate, term by term.

    Args:
        system: The system's profiles, already ``onto`` the natural anchor.
        natural: The natural candidates' profiles.
        spread: The candidates' ``reference_spread``, or None to work it out.

    Returns:
        Each term's (renditions, candidates) distances and the scale of each term.
    """
    w = _discriminative_weights(natural)
    spread = reference_spread(natural, w) if spread is None else spread
    candidates, renditions = natural.f0.shape[0], system.f0.shape[0]
    level_votes = system.level_spread >= LEVEL_VOTE_DB
    tempo_votes = system.tempo_spread >= TEMPO_VOTE
    terms = {t: np.zeros((renditions, candidates)) for t in TERMS}
    for i in range(renditions):
        for j in range(candidates):
            for t, value in _term_distances(system, i, natural, j, w, level_votes,
                                            spread.boundary_votes, tempo_votes).items():
                terms[t][i, j] = value
    return Comparison(terms, dict(spread.scale))
