"""Graded prosody-transfer figures: how far a system's rendition is from its reference.

Recognition accuracy saturates once a system's prosody is recognisable; these figures keep
separating systems beyond that point. Each is computed per stimulus, between a system sample and
the natural reference of the same sentence and subcategory, on the features the acoustic
listener already uses (``prosody.extract``: 20 ms frames, F0 in semitones, frame energy in dB,
MFCCs) and on the same alignment (dynamic time warping on the MFCCs, ``prosody.dtw_path``).
Every aligned pair of frames (one point of the warping path) counts once.

Figures (definitions in ``METRICS`` and the README):

- F0 RMSE in semitones, raw and after removing each voice's median F0, and the Pearson
  correlation of the two F0 contours, over frames voiced in both;
- gross pitch error (GPE), voicing decision error (VDE) and F0 frame error (FFE) as defined by
  Chu & Alwan (2009) and used for prosody transfer by Skerry-Ryan et al. (2018);
- energy-contour correlation, log duration ratio, pause agreement;
- prosody distance: the listener's own distance to the correct reference relative to the other
  subcategories' references of the same sentence (0 = indistinguishable, 1 = as far as the
  wrong ones).

A sample that cannot be read, is silent or has too little speech to align is a *failed*
stimulus: counted in ``n_failed``, never given a score. A figure that is undefined for a usable
sample (F0 figures of a sample with no frames voiced in both) is NaN and counted in
``n_undefined`` of that figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable

import numpy as np

from adept_eval.signal import prosody, speech_presence
from adept_eval.errors import AudioError
from adept_eval.signal.audio import Audio, read_audio
from adept_eval.signal.prosody import Features, FeatureStore, VoiceNorm
from adept_eval.scoring.stats import cluster_t_interval, within

# --------------------------------------------------------------------------- definitions
GROSS_PITCH_ERROR = 0.20  # a voiced frame's F0 is grossly wrong when off by more than 20%
MIN_VOICED = 5  # fewer frames voiced in both leave the F0 figures undefined
PAUSE_BELOW_MAX_DB = prosody.PAUSE_BELOW_MAX_DB  # silent: 30 dB below the loudest frame
MIN_PAUSE_S = prosody.MIN_PAUSE_S  # ... and a pause is >= 150 ms of consecutive silent frames
PAUSE_TOLERANCE_S = 0.06  # two pauses agree when they meet on the warping path within 60 ms
ENERGY_FLOOR_DB = 40.0  # energies more than 40 dB below the voice's speech level count as -40

CITATIONS: dict[str, str] = {
    "skerry-ryan2018": """@inproceedings{skerryryan2018towards,
  title     = {Towards End-to-End Prosody Transfer for Expressive Speech Synthesis with Tacotron},
  author    = {Skerry-Ryan, RJ and Battenberg, Eric and Xiao, Ying and Wang, Yuxuan and
               Stanton, Daisy and Shor, Joel and Weiss, Ron J. and Clark, Rob and Saurous, Rif A.},
  booktitle = {Proc. ICML},
  pages     = {4693--4702},
  year      = {2018}
}""",
    "chu2009": """@inproceedings{chu2009reducing,
  title     = {Reducing {F0} Frame Error of {F0} Tracking Algorithms under Noisy Conditions
               with an Unvoiced/Voiced Classification Frontend},
  author    = {Chu, Wei and Alwan, Abeer},
  booktitle = {Proc. ICASSP},
  pages     = {3969--3972},
  year      = {2009}
}""",
    "nakatani2008": """@article{nakatani2008method,
  title   = {A Method for Fundamental Frequency Estimation and Voicing Decision: Application to
             Infant Utterances Recorded in Real Acoustical Environments},
  author  = {Nakatani, Tomohiro and Amano, Shigeaki and Irino, Toshio and Ishizuka, Kentaro and
             Kondo, Tadahisa},
  journal = {Speech Communication},
  volume  = {50},
  number  = {3},
  year    = {2008}
}""",
    "versa2025": """@inproceedings{shi2025versa,
  title     = {{VERSA}: A Versatile Evaluation of Speech and Audio Toolkit},
  author    = {Shi, Jiatong and others},
  booktitle = {Proc. NAACL (System Demonstrations)},
  year      = {2025}
}""",
    "hermes1998": """@article{hermes1998measuring,
  title   = {Measuring the Perceptual Similarity of Pitch Contours},
  author  = {Hermes, Dik J.},
  journal = {Journal of Speech, Language, and Hearing Research},
  volume  = {41},
  number  = {1},
  pages   = {73--82},
  year    = {1998}
}""",
    "torresquintero2021": """@inproceedings{torresquintero21_interspeech,
  title     = {{ADEPT}: A Dataset for Evaluating Prosody Transfer},
  author    = {Torresquintero, Alexandra and Teh, Tian Huey and Wallis, Christopher G. R. and
               Staib, Marlene and Mohan, Devang S. Ram and Hu, Vivian and Foglianti, Lorenzo and
               Gao, Jiameng and King, Simon},
  booktitle = {Proc. Interspeech 2021},
  year      = {2021}
}""",
}


@dataclass(frozen=True)
class MetricInfo:
    """What one figure means (the metadata VERSA and evaluate cards carry)."""

    name: str
    description: str
    unit: str
    higher_is_better: bool | None  # None: signed, 0 is best
    range: tuple[float, float]
    best: float
    citations: tuple[str, ...]  # keys of CITATIONS; () = defined by adept-eval
    # False: the direction holds for one stimulus (closer to its reference) but does not
    # order systems, so no "better" is stated for a mean (a diagnostic)
    ranks_systems: bool = True


_INF = math.inf
METRICS: tuple[MetricInfo, ...] = (
    MetricInfo("f0_rmse_st", "root mean square F0 difference over frames voiced in both",
               "semitones", False, (0.0, _INF), 0.0, ("versa2025",)),
    MetricInfo("f0_rmse_norm_st", "F0 RMSE after subtracting each voice's median F0 "
               "(speaker-normalised: only the contour's shape counts)",
               "semitones", False, (0.0, _INF), 0.0, ("versa2025",)),
    MetricInfo("f0_corr", "Pearson correlation of the F0 contours (semitones) over frames "
               "voiced in both", "correlation", True, (-1.0, 1.0), 1.0,
               ("hermes1998", "versa2025")),
    MetricInfo("gpe", "gross pitch error: share of frames voiced in both whose F0 differs by "
               "more than 20% of the reference's", "proportion", False, (0.0, 1.0), 0.0,
               ("nakatani2008", "skerry-ryan2018")),
    MetricInfo("vde", "voicing decision error: share of frames voiced in one and unvoiced in "
               "the other", "proportion", False, (0.0, 1.0), 0.0,
               ("nakatani2008", "skerry-ryan2018")),
    MetricInfo("ffe", "F0 frame error: share of frames with a voicing error or a gross pitch "
               "error", "proportion", False, (0.0, 1.0), 0.0, ("chu2009", "skerry-ryan2018")),
    MetricInfo("energy_corr", "Pearson correlation of the frame-energy contours (dB, floored "
               "40 dB below the voice's speech level) over frames that are speech in either",
               "correlation", True, (-1.0, 1.0), 1.0, ()),
    MetricInfo("log_duration_ratio", "natural log of the sample's speech duration over the "
               "reference's (leading and trailing silence excluded); > 0: slower",
               "log ratio", None, (-_INF, _INF), 0.0, ()),
    MetricInfo("pause_agreement", "pauses (>= 150 ms, 30 dB below the loudest frame) found in "
               "both over pauses found in either (Dice: 2 x matched / (sample + reference)); "
               "1 when neither pauses", "proportion", True, (0.0, 1.0), 1.0, ()),
    MetricInfo("pause_mismatches", "pauses present in one and not the other",
               "count", False, (0.0, _INF), 0.0, ()),
    MetricInfo("listener_distance", "the acoustic listener's distance to the correct "
               "reference: in the ADEPT tasks its sentence-relative comparison "
               "(prosody.compare_sentence: the weighted sum of its F0, energy, level, tempo, "
               "pause, salience and boundary terms, each in units of how far the natural "
               "candidates lie apart); for pairs scored on their own, "
               "prosody.distance (F0, energy, tempo and timing beyond just-noticeable "
               "differences). Not comparable across systems: its units are how far the "
               "natural candidates lie apart, and a flat rendition can lie nearer all of "
               "them than a rendition that carries the right prosody; compare systems by "
               "prosody_distance", "listener units", False, (0.0, _INF), 0.0,
               ("torresquintero2021",), ranks_systems=False),
    MetricInfo("prosody_distance", "listener distance to the correct reference over its mean "
               "distance to the other subcategories' references of the same sentence: 0 = "
               "indistinguishable from the reference, 1 = as far as the wrong ones",
               "ratio", False, (0.0, _INF), 0.0, ("torresquintero2021",)),
)
METRIC_BY_NAME: dict[str, MetricInfo] = {m.name: m for m in METRICS}
METRIC_NAMES: tuple[str, ...] = tuple(METRIC_BY_NAME)


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class StimulusScores:
    """The figures of one stimulus; NaN where a figure is undefined or the stimulus failed."""

    id: str
    status: str  # "ok" or "failed"
    detail: str = ""
    f0_rmse_st: float = math.nan
    f0_rmse_norm_st: float = math.nan
    f0_corr: float = math.nan
    gpe: float = math.nan
    vde: float = math.nan
    ffe: float = math.nan
    energy_corr: float = math.nan
    log_duration_ratio: float = math.nan
    pause_agreement: float = math.nan
    pause_mismatches: float = math.nan
    listener_distance: float = math.nan
    prosody_distance: float = math.nan
    n_frames: int = 0  # aligned frame pairs (points of the warping path)
    n_voiced_both: int = 0

    @property
    def ok(self) -> bool:
        """Whether the stimulus was scored."""
        return self.status == "ok"

    def values(self) -> dict[str, float]:
        """The figures by name (``METRIC_NAMES``).

        Returns:
            Name -> value (NaN where undefined).
        """
        return {name: getattr(self, name) for name in METRIC_NAMES}

    def to_dict(self) -> dict:
        """The record as JSON-ready data.

        Returns:
            Field name -> value, NaN as None.
        """
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> StimulusScores:
        """``to_dict``'s inverse (None is NaN again; keys of another version are ignored), for
        the records read back from lm-eval's aggregation items and logged samples.

        Args:
            data: A ``to_dict`` result.

        Returns:
            The record.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: (math.nan if v is None and k in METRIC_BY_NAME else v)
                      for k, v in data.items() if k in names})


def failed(id: str, detail: str) -> StimulusScores:
    """The record of a stimulus that could not be scored.

    Args:
        id: The stimulus.
        detail: Why.

    Returns:
        A failed record (every figure NaN).
    """
    return StimulusScores(id=id, status="failed", detail=detail)


@dataclass(frozen=True)
class FrameErrors:
    """GPE, VDE and FFE of two frame-aligned F0 tracks, with the counts they come from."""

    gpe: float
    vde: float
    ffe: float
    n_frames: int
    n_voiced_both: int
    n_gross: int
    n_voicing: int


@dataclass(frozen=True)
class Alignment:
    """A warping path: frame ``sample[k]`` of the sample is paired with ``reference[k]``."""

    sample: np.ndarray
    reference: np.ndarray

    def __len__(self) -> int:
        return len(self.sample)


@dataclass(frozen=True)
class Pause:
    """A silent stretch inside an utterance, in frames."""

    start: int  # first silent frame
    stop: int  # one past the last


# --------------------------------------------------------------------------- building blocks
def align(sample: Features, reference: Features) -> Alignment:
    """The listener's alignment: DTW on the MFCCs (``prosody.dtw_path``).

    Args:
        sample: The sample's features.
        reference: The reference's features.

    Returns:
        The warping path.
    """
    ia, ib = prosody.dtw_path(sample.mfcc, reference.mfcc, prosody.ALIGN_PENALTY)
    return Alignment(ia, ib)


def align_many(pairs: Mapping[str, tuple[Features, Features]]) -> dict[str, Alignment]:
    """``align(sample, reference)`` of each named pair, the same alignments computed together
    (``prosody.dtw_paths``: a sentence's renditions share the per-row work).

    Args:
        pairs: Name -> (sample features, reference features).

    Returns:
        Name -> warping path.
    """
    paths = prosody.dtw_paths([(a.mfcc, b.mfcc) for a, b in pairs.values()],
                              prosody.ALIGN_PENALTY)
    return {name: Alignment(ia, ib) for name, (ia, ib) in zip(pairs, paths)}


def semitones_to_hz(st: np.ndarray) -> np.ndarray:
    """F0 in Hz: ``prosody`` keeps F0 as semitones re 100 Hz; gross errors are defined on Hz.

    Args:
        st: F0 in semitones re 100 Hz.

    Returns:
        F0 in Hz.
    """
    return 100.0 * np.power(2.0, np.asarray(st, dtype=float) / 12.0)


def frame_errors(sample_f0: np.ndarray, reference_f0: np.ndarray,
                 threshold: float = GROSS_PITCH_ERROR) -> FrameErrors:
    """GPE, VDE and FFE of frame-aligned F0 tracks in semitones (NaN = unvoiced).

    Chu & Alwan (2009): with N frames, V the frames voiced in both, G those of V whose F0
    differs from the reference's by more than 20% of it, and U the frames voiced in exactly
    one track: GPE = |G| / |V|, VDE = |U| / N, FFE = (|G| + |U|) / N.

    Args:
        sample_f0: The sample's F0 per aligned frame.
        reference_f0: The reference's F0 per aligned frame.
        threshold: The relative F0 difference above which a frame is a gross error.

    Returns:
        The errors and the counts they come from (NaN rates without frames).

    Raises:
        ValueError: The tracks differ in length.
    """
    sample = np.asarray(sample_f0, dtype=float)
    reference = np.asarray(reference_f0, dtype=float)
    if sample.shape != reference.shape:
        raise ValueError(f"tracks differ in length ({sample.shape} vs {reference.shape}); "
                         "align them first")
    voiced_sample, voiced_reference = ~np.isnan(sample), ~np.isnan(reference)
    both = voiced_sample & voiced_reference
    n, n_both = len(sample), int(both.sum())
    n_voicing = int((voiced_sample != voiced_reference).sum())
    ratio = semitones_to_hz(sample[both]) / semitones_to_hz(reference[both])
    n_gross = int((np.abs(ratio - 1.0) > threshold).sum())
    gpe = n_gross / n_both if n_both else math.nan
    vde = n_voicing / n if n else math.nan
    ffe = (n_gross + n_voicing) / n if n else math.nan
    return FrameErrors(gpe, vde, ffe, n, n_both, n_gross, n_voicing)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's correlation.

    Args:
        x: One series.
        y: The other, as long.

    Returns:
        r; NaN when either side is (nearly) constant or shorter than ``MIN_VOICED``.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < MIN_VOICED:
        return math.nan
    dx, dy = x - x.mean(), y - y.mean()
    den = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    if den < 1e-12:
        return math.nan
    return float(np.clip((dx * dy).sum() / den, -1.0, 1.0))


def pauses(feats: Features, below_max_db: float = PAUSE_BELOW_MAX_DB,
           min_pause_s: float = MIN_PAUSE_S) -> list[Pause]:
    """Silent stretches inside the utterance (``prosody.pause_runs``, which says what counts).

    Args:
        feats: The utterance's features.
        below_max_db: How far under the loudest frame a frame is silent.
        min_pause_s: The shortest pause (seconds).

    Returns:
        The pauses, in order.
    """
    return [Pause(a, b) for a, b in prosody.pause_runs(feats, below_max_db, min_pause_s)]


def match_pauses(a: list[Pause], b: list[Pause], alignment: Alignment,
                 tolerance_s: float = PAUSE_TOLERANCE_S) -> int:
    """How many pauses of ``a`` (sample) and ``b`` (reference) pair up one-to-one.

    Two pauses pair when some point of the warping path falls in both (each widened by
    ``tolerance_s`` on either side): the alignment puts them at the same place in the
    sentence. Pairs are taken greedily by how many path points they share.

    Args:
        a: The sample's pauses.
        b: The reference's pauses.
        alignment: The warping path between them.
        tolerance_s: How far (seconds) each pause is widened on either side.

    Returns:
        The number of pairs.
    """
    if not a or not b:
        return 0
    tol = int(round(tolerance_s / prosody.HOP_S))
    ia, ib = alignment.sample, alignment.reference
    overlaps = []
    for i, pa in enumerate(a):
        in_a = (ia >= pa.start - tol) & (ia < pa.stop + tol)
        for j, pb in enumerate(b):
            shared = int((in_a & (ib >= pb.start - tol) & (ib < pb.stop + tol)).sum())
            if shared:
                overlaps.append((shared, i, j))
    used_a, used_b, matched = set(), set(), 0
    for _, i, j in sorted(overlaps, reverse=True):
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            matched += 1
    return matched


# --------------------------------------------------------------------------- distance adapter
DistanceFn = Callable[[Features, VoiceNorm, Features, VoiceNorm], float]


def listener_distance(sample: Features, sample_norm: VoiceNorm, reference: Features,
                      reference_norm: VoiceNorm) -> float:
    """The acoustic listener's pairwise distance, looked up at call time so that the graded
    score follows whatever ``prosody.distance`` currently is.

    Args:
        sample: The sample's features.
        sample_norm: The sample voice's norm.
        reference: The reference's features.
        reference_norm: The reference voice's norm.

    Returns:
        The distance.
    """
    return float(prosody.distance(sample, sample_norm, reference, reference_norm))


def relative_distance(correct: float, wrong: Sequence[float]) -> float:
    """The distance to the correct reference relative to the wrong ones'.

    Args:
        correct: The distance to the correct reference.
        wrong: The distances to the wrong ones.

    Returns:
        ``correct`` over the mean of the finite ``wrong``: 0 = at the reference, 1 = as far
        as the wrong ones; NaN when no wrong distance is finite or their mean is not above 0.
    """
    finite_wrong = np.asarray([x for x in wrong if np.isfinite(x)], dtype=float)
    if not np.isfinite(correct) or finite_wrong.size == 0 or finite_wrong.mean() <= 0:
        return math.nan
    return float(correct / finite_wrong.mean())


# --------------------------------------------------------------------------- one stimulus
def unusable(feats: Features) -> str | None:
    """Why a sample's features cannot be scored.

    Args:
        feats: The sample's features.

    Returns:
        The reason (silent, too short), or None when they can be.
    """
    if feats.n < 3:
        return f"too little speech to align ({feats.n} frames)"
    return speech_presence.silence_reason(feats)


def _energy(feats: Features, norm: VoiceNorm) -> np.ndarray:
    """Frame energy relative to the voice's speech level, floored at -``ENERGY_FLOOR_DB``."""
    return np.maximum(feats.energy - norm.energy, -ENERGY_FLOOR_DB)


def _refuse_unusable(stimulus_id: str, sample: Features,
                     reference: Features) -> StimulusScores | None:
    """A failed record naming the first of sample and reference that cannot be scored
    (``unusable``), or None when both can."""
    for who, feats in (("sample", sample), ("reference", reference)):
        problem = unusable(feats)
        if problem:
            return failed(stimulus_id, f"{who}: {problem}")
    return None


def _f0_figures(fa: np.ndarray, fb: np.ndarray, both: np.ndarray,
                offset: float) -> tuple[float, float, float]:
    """F0 RMSE, RMSE after removing the voices' median ``offset``, and correlation over the
    aligned frames voiced on both sides (``both``); all nan with fewer than ``MIN_VOICED``
    such frames."""
    if both.sum() < MIN_VOICED:
        return math.nan, math.nan, math.nan
    diff = fa[both] - fb[both]
    rmse = float(np.sqrt(np.mean(diff ** 2)))
    diff_norm = diff - offset
    rmse_norm = float(np.sqrt(np.mean(diff_norm ** 2)))
    return rmse, rmse_norm, pearson(fa[both], fb[both])


def _pause_figures(sample: Features, reference: Features, path: Alignment) -> tuple[float, float]:
    """The pause agreement (matched pauses over all, 1 when neither side pauses) and the
    number of unmatched pauses."""
    pa, pb = pauses(sample), pauses(reference)
    matched = match_pauses(pa, pb, path)
    pause_agreement = 2 * matched / (len(pa) + len(pb)) if (pa or pb) else 1.0
    return pause_agreement, float(len(pa) + len(pb) - 2 * matched)


def _norms(others: Sequence[Features], other_norms: Sequence[VoiceNorm] | None) -> list:
    """``other_norms``, or each of ``others``' own norm when None."""
    if other_norms is not None:
        return list(other_norms)
    return [VoiceNorm.of([other]) for other in others]


def _distances_to(sample: Features, sample_norm: VoiceNorm, references: list[Features],
                  norms: list[VoiceNorm], distance: DistanceFn) -> list[float]:
    """``distance`` from the sample to each reference, each with its norm (the shorter list
    decides how many)."""
    return [distance(sample, sample_norm, reference, norm)
            for reference, norm in zip(references, norms)]


def score(sample: Features, reference: Features, *, id: str = "",
          sample_norm: VoiceNorm | None = None, reference_norm: VoiceNorm | None = None,
          others: Sequence[Features] = (), other_norms: Sequence[VoiceNorm] | None = None,
          alignment: Alignment | None = None, distances: Sequence[float] | None = None,
          distance: DistanceFn = listener_distance) -> StimulusScores:
    """All figures of one sample against its reference.

    ``sample_norm`` / ``reference_norm``: each voice's median F0 and speech level (default: of
    the utterance itself; ADEPT passes the level over all renditions of the sentence, as the
    listener does). ``others``: references of the other subcategories of the same sentence,
    for ``prosody_distance``. ``alignment`` and ``distances`` (correct reference first, then
    ``others`` in order) reuse work the listener has already done.

    Args:
        sample: The sample's features.
        reference: The reference's features.
        id: The stimulus.
        sample_norm: The sample voice's norm, or None.
        reference_norm: The reference voice's norm, or None.
        others: The other subcategories' references.
        other_norms: Their norms, or None (each its own).
        alignment: The sample-reference warping path, or None to align here.
        distances: The listener's distances, or None to compute them with ``distance``.
        distance: The pairwise distance.

    Returns:
        The stimulus's figures (a failed record when either side cannot be scored).
    """
    refused = _refuse_unusable(id, sample, reference)
    if refused is not None:
        return refused
    sample_norm = sample_norm or VoiceNorm.of([sample])
    reference_norm = reference_norm or VoiceNorm.of([reference])
    path = alignment or align(sample, reference)
    ia, ib = path.sample, path.reference

    fa, fb = sample.f0[ia], reference.f0[ib]
    errors = frame_errors(fa, fb)
    both = ~np.isnan(fa) & ~np.isnan(fb)
    rmse, rmse_norm, corr = _f0_figures(fa, fb, both, sample_norm.f0 - reference_norm.f0)
    gpe = errors.gpe if both.sum() >= MIN_VOICED else math.nan

    speech = sample.speech[ia] | reference.speech[ib]
    energy_corr = pearson(_energy(sample, sample_norm)[ia][speech],
                          _energy(reference, reference_norm)[ib][speech])

    pause_agreement, mismatches = _pause_figures(sample, reference, path)

    if distances is not None:
        found = [float(x) for x in distances]
    else:
        found = _distances_to(sample, sample_norm, [reference, *others],
                              [reference_norm, *_norms(others, other_norms)], distance)
    correct = found[0] if found else math.nan

    return StimulusScores(
        id=id, status="ok",
        f0_rmse_st=rmse, f0_rmse_norm_st=rmse_norm, f0_corr=corr,
        gpe=gpe, vde=errors.vde, ffe=errors.ffe,
        energy_corr=energy_corr,
        log_duration_ratio=float(np.log(sample.n / reference.n)),
        pause_agreement=float(pause_agreement), pause_mismatches=mismatches,
        listener_distance=float(correct) if np.isfinite(correct) else math.nan,
        prosody_distance=relative_distance(correct, found[1:]),
        n_frames=len(path), n_voiced_both=int(both.sum()))


# --------------------------------------------------------------------------- many stimuli
@dataclass(frozen=True)
class Summary:
    """A figure over stimuli: mean and cluster-robust t interval over the scored ones."""

    metric: str
    mean: float
    ci_low: float
    ci_high: float
    n: int  # stimuli with a value
    n_failed: int  # stimuli that could not be scored at all
    n_undefined: int  # scored stimuli for which this figure is undefined
    confidence: float = 0.95

    def to_dict(self) -> dict:
        """Give the summary as JSON-ready data.

        Returns:
            Its fields by name, NaN as None.
        """
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in asdict(self).items()}


def _unique_records(scores: Sequence[StimulusScores]) -> list[StimulusScores]:
    """``scores`` with each non-empty id kept once (its first record), in order."""
    unique: list[StimulusScores] = []
    seen: set[str] = set()
    for record in scores:
        if record.id and record.id in seen:
            continue
        seen.add(record.id)
        unique.append(record)
    return unique


def aggregate(scores: Sequence[StimulusScores], *, clusters: Mapping[str, str] | None = None,
              confidence: float = 0.95, n_resamples: int = 2000,
              seed: int = 0) -> dict[str, Summary]:
    """Mean, interval, n, failures of every figure.

    Records with the same non-empty ``id`` count once (several ADEPT questions share one
    stimulus). ``clusters`` maps stimulus id to its cluster (its sentence): the interval is the
    cluster-robust t interval over the clusters (``stats.cluster_t_interval``, G - 1 df), which
    keeps its level with one task's 5 sentences where a percentile bootstrap of sentences does
    not (it covers 81-88% at a nominal 95%).

    Args:
        scores: The stimuli's records.
        clusters: Stimulus id -> its cluster, or None (each stimulus its own).
        confidence: The intervals' level.
        n_resamples: Accepted for the ``prosody_transfer`` metric's callers; the interval
            does not resample.
        seed: Accepted likewise.

    Returns:
        Figure name -> its summary.
    """
    unique = _unique_records(scores)
    ok = [record for record in unique if record.ok]
    n_failed = len(unique) - len(ok)
    out = {}
    for metric in METRIC_NAMES:
        vals = np.array([getattr(record, metric) for record in ok], dtype=float)
        keep = ~np.isnan(vals)
        cluster_of = None
        if clusters is not None:
            cluster_of = np.array([clusters.get(record.id, record.id) for record in ok],
                                  dtype=object)[keep].astype(str)
        # cut to the figure's range: a t interval on a few sentences' degrees of freedom
        # reaches past it (a prosody distance's below 0), where no mean can lie
        lo, hi = within(*cluster_t_interval(vals[keep], cluster_of, level=confidence),
                        METRIC_BY_NAME[metric].range)
        mean = float(vals[keep].mean()) if keep.any() else math.nan
        out[metric] = Summary(metric, mean, lo, hi, int(keep.sum()), n_failed,
                              int((~keep).sum()), confidence)
    return out


# --------------------------------------------------------------------------- sources
def features_of(source, store: FeatureStore | None = None) -> Features:
    """Features of an audio source.

    Args:
        source: Features (returned as they are), a path (through ``store``'s cache when
            given), an ``Audio``, or a mapping ``{"array": ..., "sampling_rate": ...}`` /
            ``{"path": ...}``.
        store: The feature store for paths, or None.

    Returns:
        The features.

    Raises:
        AudioError: The source is of another kind, or its audio cannot be used.
        OSError: The file cannot be read.
    """
    if isinstance(source, Features):
        return source
    if isinstance(source, Audio):
        return prosody.extract(source)
    if isinstance(source, Mapping):
        if source.get("array") is not None:
            from adept_eval.signal.audio import from_array

            return prosody.extract(from_array(np.asarray(source["array"]),
                                              source.get("sampling_rate") or 0))
        if source.get("path"):
            source = source["path"]
        else:
            raise AudioError("audio given as a mapping needs 'array' + 'sampling_rate' or 'path'")
    if isinstance(source, (str, Path)):
        if store is not None:
            return store.get(source)
        return prosody.extract(read_audio(source))
    raise AudioError(f"cannot read audio from a {type(source).__name__}")


def score_pairs(samples: Sequence, references: Sequence, *,
                others: Sequence[Sequence] | None = None, ids: Sequence[str] | None = None,
                store: FeatureStore | None = None, voice_norm: str = "utterance",
                progress: bool = False) -> list[StimulusScores]:
    """Score each sample against its reference (any prosody-transfer evaluation, not only ADEPT).

    ``others[i]``: the other candidate references of item i (for ``prosody_distance``).
    ``voice_norm``: ``"utterance"`` removes each utterance's own median F0 and level;
    ``"corpus"`` removes the median over all samples (one voice) and over all references.
    A sample or reference that cannot be read or is silent gives a failed record.

    Args:
        samples: The system's samples (any ``features_of`` source).
        references: Each sample's reference.
        others: Each item's other candidate references, or None.
        ids: Each item's id, or None for "0", "1", ...
        store: The feature store for paths, or None.
        voice_norm: "utterance" or "corpus".
        progress: Whether to show a progress bar.

    Returns:
        One record per item, in order.

    Raises:
        ValueError: The lists differ in length, or ``voice_norm`` is neither.
    """
    _check_pair_lists(samples, references, others, voice_norm)
    ids = list(ids) if ids is not None else [str(i) for i in range(len(samples))]
    loaded = [(_load_features(sample, store), _load_features(reference, store),
               [_load_features(other, store) for other in (others[i] if others else ())])
              for i, (sample, reference) in enumerate(zip(samples, references))]
    sys_norm, ref_norm = _corpus_norms(loaded) if voice_norm == "corpus" else (None, None)
    iterator = enumerate(loaded)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, total=len(loaded), desc="prosody_transfer", unit="item")
    return [_score_loaded(ids[i], item, sys_norm, ref_norm) for i, item in iterator]


def _check_pair_lists(samples: Sequence, references: Sequence,
                      others: Sequence[Sequence] | None, voice_norm: str) -> None:
    """Check ``score_pairs``' arguments.

    Raises:
        ValueError: The lists differ in length, or ``voice_norm`` is neither "utterance" nor
            "corpus".
    """
    if len(samples) != len(references):
        raise ValueError(f"{len(samples)} samples but {len(references)} references")
    if others is not None and len(others) != len(samples):
        raise ValueError("others must have one list of references per sample")
    if voice_norm not in ("utterance", "corpus"):
        raise ValueError(f"voice_norm must be 'utterance' or 'corpus', not {voice_norm!r}")


def _load_features(source, store: FeatureStore | None) -> tuple[Features | None, str | None]:
    """``source``'s features and None, or None and why they cannot be read (a failed record,
    not an exception, so one bad file does not stop the others)."""
    try:
        return features_of(source, store), None
    except (AudioError, OSError, ValueError) as exc:
        return None, str(exc)


def _corpus_norms(loaded: list) -> tuple[VoiceNorm | None, VoiceNorm | None]:
    """The voice norms over all usable samples and over all usable references of ``loaded``
    (``score_pairs``' items), each None when there is none."""
    usable_samples = [feats for (feats, _), _, _ in loaded
                      if feats is not None and not unusable(feats)]
    usable_references = [feats for _, (feats, _), _ in loaded
                         if feats is not None and not unusable(feats)]
    return (VoiceNorm.of(usable_samples) if usable_samples else None,
            VoiceNorm.of(usable_references) if usable_references else None)


def _score_loaded(item_id: str, item: tuple, sys_norm: VoiceNorm | None,
                  ref_norm: VoiceNorm | None) -> StimulusScores:
    """Score one loaded item of ``score_pairs`` (sample, reference, other references, each as
    features and error), or a failed record when the sample or reference cannot be read."""
    (sample, sample_error), (reference, reference_error), loaded_others = item
    if sample is None:
        return failed(item_id, f"sample: {sample_error}")
    if reference is None:
        return failed(item_id, f"reference: {reference_error}")
    usable_others = [other for other, _ in loaded_others
                     if other is not None and not unusable(other)]
    other_norms = [ref_norm or VoiceNorm.of([other]) for other in usable_others]
    return score(sample, reference, id=item_id, sample_norm=sys_norm, reference_norm=ref_norm,
                 others=usable_others, other_norms=other_norms)


def _item_ids(ids: Sequence | None, n_items: int,
              clusters: Sequence[str] | None) -> list[str]:
    """The items' ids as text ("0", "1", ... when None).

    Raises:
        ValueError: The ids are not unique, or ``clusters`` has not one entry per item.
    """
    ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(n_items)]
    if len(set(ids)) != len(ids):
        raise ValueError("ids must be unique (each item is one stimulus)")
    if clusters is not None and len(clusters) != len(ids):
        raise ValueError(f"clusters must have one entry per item ({len(ids)}), "
                         f"not {len(clusters)}")
    return ids


def _figure_columns(summary: dict[str, Summary]) -> dict:
    """Each figure's mean under its name and its interval under ``<name>_ci95``."""
    out: dict = {}
    for name, figure in summary.items():
        plain = figure.to_dict()
        out[name] = plain["mean"]
        out[f"{name}_ci95"] = [plain["ci_low"], plain["ci_high"]]
    return out


def evaluate_pairs(samples: Sequence, references: Sequence, *,
                   others: Sequence[Sequence] | None = None, ids: Sequence[str] | None = None,
                   clusters: Sequence[str] | None = None, voice_norm: str = "utterance",
                   confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                   cache_dir: str | Path | None = None, progress: bool = False) -> dict:
    """The ``prosody_transfer`` metric's result: per-item records and summaries, JSON-ready.

    ``cache_dir``: where file features are cached (None: the default feature cache; "": no
    disk cache).

    Args:
        samples: The system's samples (any ``features_of`` source).
        references: Each sample's reference.
        others: Each item's other candidate references, or None.
        ids: Each item's unique id, or None for "0", "1", ...
        clusters: Each item's cluster (its sentence), or None.
        voice_norm: "utterance" or "corpus".
        confidence: The intervals' level.
        n_resamples: Passed to ``aggregate``.
        seed: Passed to ``aggregate``.
        cache_dir: Where file features are cached.
        progress: Whether to show a progress bar.

    Returns:
        Each figure's mean and interval, counts, summaries, the metric table and every item.

    Raises:
        ValueError: The ids are not unique, a list's length does not match, or
            ``voice_norm`` is neither.
    """
    ids = _item_ids(ids, len(samples), clusters)
    store = None if cache_dir == "" else FeatureStore(cache_dir)
    records = score_pairs(samples, references, others=others, ids=ids, store=store,
                          voice_norm=voice_norm, progress=progress)
    summary = aggregate(records, clusters=dict(zip(ids, map(str, clusters)))
                        if clusters is not None else None,
                        confidence=confidence, n_resamples=n_resamples, seed=seed)
    n_failed = sum(not r.ok for r in records)
    out = _figure_columns(summary)
    out.update(n=len(records), n_scored=len(records) - n_failed, n_failed=n_failed,
               failure_rate=n_failed / len(records) if records else None,
               confidence=confidence,
               summary={name: figure.to_dict() for name, figure in summary.items()},
               metrics=metric_table(), items=[r.to_dict() for r in records])
    return out


# --------------------------------------------------------------------------- ADEPT
@dataclass
class AdeptScorer:
    """Graded figures of a system's ADEPT samples, sentence by sentence.

    All renditions of one sentence by one speaker are scored together, with the voice
    normalised over them (as the listener's multi-stimulus comparisons do), against the
    natural recordings of every subcategory. Alignments and distances are memoised per
    sentence, so scoring the questions that share a sentence costs one scoring.
    """

    corpus: object
    store: FeatureStore = field(default_factory=FeatureStore)
    #: sample content key (``FeatureStore.key``) -> why it is not speech (None: it is); shared
    #: with the listener that heard the samples, so each sample is checked once a run
    no_speech: dict = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, init=False, repr=False)

    def _content_key(self, path: str | None) -> str | None:
        """A sample's content key (``FeatureStore.key``), or its path when it cannot be read
        (it then fails, and is reported by path)."""
        if not path:
            return None
        try:
            return self.store.key(path)
        except OSError:
            return path

    def sentence(self, cls: str, speaker: str, sentence_id: str,
                 samples: Mapping[str, str],
                 distances: np.ndarray | None = None) -> dict[str, StimulusScores]:
        """Every rendition of one sentence scored against the natural recordings.

        Args:
            cls: The class.
            speaker: "female" or "male".
            sentence_id: The sentence's id, e.g. "0100".
            samples: Subcategory -> sample path (missing ones are counted failures).
            distances: The listener's matrix for this sentence (rows: samples, columns:
                natural references, both in ``subcategories_for(speaker)`` order), or None.

        Returns:
            Subcategory -> its record, in ``subcategories_for(speaker)`` order.
        """
        from adept_eval.corpora import spec

        subs = spec.CLASSES[cls].subcategories_for(speaker)
        key = f"{spec.SPEAKERS[speaker]}_{sentence_id}"
        # by content, as the listener memoises: a sample rewritten in place is scored afresh
        memo_key = (cls, speaker, sentence_id,
                    tuple(self._content_key(samples.get(sub)) for sub in subs))
        if memo_key in self._memo:
            return self._memo[memo_key]
        ids = {sub: f"{cls}/{sub}/{key}" for sub in subs}
        nat = [self.store.get(self.corpus.get(ids[sub]).audio_path) for sub in subs]
        feats: dict[str, Features] = {}
        result: dict[str, StimulusScores] = {}
        for sub in subs:
            loaded = self._sample_features(ids[sub], samples.get(sub))
            if isinstance(loaded, StimulusScores):
                result[sub] = loaded
            else:
                feats[sub] = loaded
        result.update(self._score_renditions(subs, ids, feats, nat, distances))
        ordered = {sub: result[sub] for sub in subs}
        self._memo[memo_key] = ordered
        return ordered

    def _sample_features(self, stimulus_id: str, path: str | None) -> Features | StimulusScores:
        """One sample's features, or its failed record when it was not produced, cannot be
        read, or holds no usable speech.

        "No speech" (a tone, noise, DC) is the listener's rule: such a sample failed its
        question, so its graded figures are a counted failure too, never a score. The verdict
        is shared with the listener through ``no_speech``, keyed as it keys it: by content.
        """
        if not path:
            return failed(stimulus_id, "sample not produced")
        try:
            sample_feats = self.store.get(path)
        except (AudioError, OSError, ValueError) as exc:
            return failed(stimulus_id, f"sample: {exc}")
        content = self.store.key(path)
        if content not in self.no_speech:
            self.no_speech[content] = speech_presence.reason_from_features(sample_feats)
        problem = unusable(sample_feats) or self.no_speech[content]
        if problem:
            return failed(stimulus_id, f"sample: {problem}")
        return sample_feats

    @staticmethod
    def _score_renditions(subs: list[str], ids: dict[str, str], feats: dict[str, Features],
                          nat: list[Features],
                          distances: np.ndarray | None) -> dict[str, StimulusScores]:
        """Score each readable rendition ``feats`` of one sentence against its natural
        recording in ``nat`` (in ``subs`` order), the others being the remaining natural
        recordings."""
        sys_norm, nat_norm, alignments = _sentence_alignment(subs, feats, nat)
        result = {}
        for sub, sample_feats in feats.items():
            i = subs.index(sub)
            order = [i] + [j for j in range(len(subs)) if j != i]
            row = None
            if distances is not None:
                row = [float(distances[i][j]) for j in order]
            result[sub] = score(sample_feats, nat[i], id=ids[sub], sample_norm=sys_norm,
                                reference_norm=nat_norm,
                                others=[nat[j] for j in order[1:]],
                                other_norms=[nat_norm] * (len(order) - 1),
                                alignment=alignments.get(sub), distances=row)
        return result

    def stimulus(self, stimulus_id: str, samples: Mapping[str, str]) -> StimulusScores:
        """Scores of one stimulus (``class/subcategory/adXX_NNNN``) given the system's samples
        keyed by stimulus id (the sentence's other renditions set the voice's level).

        Args:
            stimulus_id: The stimulus.
            samples: Stimulus id -> sample path.

        Returns:
            Its record.
        """
        from adept_eval.corpora import spec

        cls, sub, key = stimulus_id.split("/")
        spk_id, sentence_id = key.split("_")
        speaker = spec.SPEAKER_BY_ID[spk_id]
        by_sub = {other: samples.get(f"{cls}/{other}/{key}")
                  for other in spec.CLASSES[cls].subcategories_for(speaker)}
        return self.sentence(cls, speaker, sentence_id,
                             {other: path for other, path in by_sub.items() if path})[sub]


def _sentence_alignment(subs: list[str], feats: dict[str, Features], nat: list[Features]):
    """The voice norms of one sentence's renditions and of its natural recordings, and each
    rendition's alignment with its own natural recording (none for an unusable recording).

    Returns:
        The renditions' norm (None without renditions), the natural recordings' norm (None
        when none is usable), and subcategory -> alignment.
    """
    usable_nat = [natural for natural in nat if not unusable(natural)]
    sys_norm = VoiceNorm.of(list(feats.values())) if feats else None
    nat_norm = VoiceNorm.of(usable_nat) if usable_nat else None
    alignments = align_many({sub: (sample_feats, nat[subs.index(sub)])
                             for sub, sample_feats in feats.items()
                             if not unusable(nat[subs.index(sub)])})
    return sys_norm, nat_norm, alignments


def adept_sentence_clusters(records: Sequence[StimulusScores]) -> dict[str, str]:
    """ADEPT stimulus id (``class/subcategory/adXX_NNNN``) -> its sentence (``class/adXX_NNNN``),
    for ``aggregate(clusters=...)``: the renditions of one sentence form one cluster.

    Args:
        records: The stimuli's records.

    Returns:
        Stimulus id -> sentence (an id of another form is its own cluster).
    """
    out = {}
    for record in records:
        parts = record.id.split("/")
        out[record.id] = f"{parts[0]}/{parts[-1]}" if len(parts) == 3 else record.id
    return out


def metric_table() -> list[dict]:
    """``METRICS`` as plain JSON-ready dicts, for cards and results.

    Returns:
        One dict per figure (infinite bounds as None).
    """
    def plain(name, v):
        if name == "range":
            return [None if math.isinf(x) else x for x in v]
        return list(v) if isinstance(v, tuple) else v

    return [{f.name: plain(f.name, getattr(m, f.name)) for f in fields(m)} for m in METRICS]
