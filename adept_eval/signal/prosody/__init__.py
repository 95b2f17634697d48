"""Prosodic features of one utterance, time alignment, and prosodic distances between
renditions.

Features (20 ms frames, audio resampled to 16 kHz): F0 in semitones (Praat's autocorrelation
pitch tracker via praat-parselmouth; NaN where unvoiced), frame energy in dB, and MFCCs used
only to align two renditions of the same sentence in time (dynamic time warping). Distances are
computed after speaker normalisation (F0 relative to the voice's median, energy relative to its
median speech level), so a system whose voice is higher or louder than ADEPT's is not penalised
for that, only for the shape of its prosody. Features are cached on disk by audio content
(sha256), so ADEPT's natural recordings are analysed once per machine, not once per run.

The work lives in private modules by section: ``_features`` (extraction), ``_alignment``
(dynamic time warping), ``_distance`` (one rendition against another), ``_profiles`` (a
sentence's renditions relative to their mean), ``_comparison`` (a system's profiles against the
natural candidates'), ``_cache_files`` and ``_store`` (the content-keyed feature store) and
``_pools`` (the processes and threads extraction runs on). This package is their public face:
import from ``adept_eval.signal.prosody``.
"""

from __future__ import annotations

from adept_eval.signal.prosody._features import (
    ABOVE_NOISE_DB,
    ANALYSIS_RATE,
    F0_CEILING,
    F0_FLOOR,
    FEATURE_VERSION,
    HOP_S,
    JND_ENERGY_DB,
    JND_F0_ST,
    JND_TEMPO,
    JND_TIMING,
    MAX_ANALYSIS_S,
    MISSING_F0_ST,
    NOISE_FLOOR_PERCENTILE,
    NOISE_RULE_MAX_DB,
    RUMBLE_CUTOFF_HZ,
    SPEECH_DB_BELOW_MAX,
    Features,
    above_noise,
    analysable,
    extract,
)
from adept_eval.signal.prosody._cues import (
    CUE_UNITS,
    CUES,
    category_distance,
    cue_votes,
    global_cues,
    sentence_cues,
)
from adept_eval.signal.prosody._alignment import (
    dtw_path,
    dtw_paths,
)
from adept_eval.signal.prosody._distance import (
    VoiceNorm,
    distance,
    distance_terms,
)
from adept_eval.signal.prosody._profiles import (
    ALIGN_PENALTY,
    BOUNDARY_HALF_WINDOW,
    BOUNDARY_UNITS,
    BOUNDARY_VOTE_S,
    ENERGY_FLOOR_DB,
    JUNCTURE_SILENCE_S,
    LEVEL_VOTE_DB,
    MIN_PAUSE_S,
    PAUSE_BELOW_MAX_DB,
    PAUSE_SCALE_FLOOR_S,
    PAUSE_SPREAD,
    PITCH_MOVEMENT_HALF_WINDOW,
    SALIENCE_SMOOTH,
    SALIENCE_UNITS,
    SHORT_BREAK_FROM_S,
    TEMPO_SPREAD_PERCENTILE,
    TEMPO_VOTE,
    SentenceProfiles,
    onto,
    pause_runs,
    pitch_excursion,
    pitch_reset,
    power_db,
    sentence_profiles,
)
from adept_eval.signal.prosody._comparison import (
    SCALE_FLOORS,
    TERMS,
    Comparison,
    ReferenceSpread,
    compare_sentence,
    reference_spread,
)
from adept_eval.signal.prosody._pools import (
    THREADS_PER_EXTRACTION,
    available_cores,
    background_workers,
    default_workers,
    one_blas_thread,
    stop_background,
)
from adept_eval.signal.prosody._store import (
    MIN_PARALLEL_FILES,
    FeatureStore,
)

__all__ = [
    "ABOVE_NOISE_DB", "ALIGN_PENALTY", "ANALYSIS_RATE", "BOUNDARY_HALF_WINDOW", "BOUNDARY_UNITS",
    "BOUNDARY_VOTE_S", "Comparison", "ENERGY_FLOOR_DB", "F0_CEILING", "F0_FLOOR",
    "FEATURE_VERSION", "FeatureStore", "Features", "HOP_S", "JND_ENERGY_DB", "JND_F0_ST",
    "CUE_UNITS", "CUES", "category_distance", "cue_votes", "global_cues", "sentence_cues",
    "JND_TEMPO", "JND_TIMING", "JUNCTURE_SILENCE_S", "LEVEL_VOTE_DB", "MAX_ANALYSIS_S",
    "MIN_PARALLEL_FILES", "MIN_PAUSE_S", "MISSING_F0_ST", "NOISE_FLOOR_PERCENTILE",
    "NOISE_RULE_MAX_DB", "PAUSE_BELOW_MAX_DB", "PAUSE_SCALE_FLOOR_S", "PAUSE_SPREAD",
    "PITCH_MOVEMENT_HALF_WINDOW", "RUMBLE_CUTOFF_HZ", "ReferenceSpread", "SALIENCE_SMOOTH",
    "SALIENCE_UNITS", "SCALE_FLOORS", "SHORT_BREAK_FROM_S", "SPEECH_DB_BELOW_MAX",
    "SentenceProfiles", "TEMPO_SPREAD_PERCENTILE", "TEMPO_VOTE", "TERMS",
    "THREADS_PER_EXTRACTION", "VoiceNorm", "above_noise", "analysable", "available_cores",
    "background_workers", "compare_sentence", "default_workers", "distance", "distance_terms",
    "dtw_path", "dtw_paths", "extract", "one_blas_thread", "onto", "pause_runs",
    "pitch_excursion", "pitch_reset", "power_db", "reference_spread", "sentence_profiles",
    "stop_background",
]
