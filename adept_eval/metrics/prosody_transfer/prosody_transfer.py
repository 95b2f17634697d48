"""prosody_transfer: reference-aligned prosody errors of synthetic speech against its reference.

A Hugging Face ``evaluate`` module; the work is done by ``adept_eval.scoring.graded``.
"""

import datasets
import evaluate

from adept_eval.scoring import graded
from adept_eval.metrics import refuse_empty

_CITATION = "\n".join(graded.CITATIONS[k] for k in ("skerry-ryan2018", "chu2009", "nakatani2008"))

_DESCRIPTION = """\
Graded prosody-transfer figures between each synthesised utterance and the reference utterance
whose prosody it should reproduce (same sentence), after aligning the two in time by dynamic time
warping on MFCCs: F0 RMSE in semitones (raw and speaker-normalised), F0 correlation, gross pitch
error (GPE), voicing decision error (VDE), F0 frame error (FFE), energy-contour correlation, log
duration ratio, pause agreement and, when the other candidate references of the same sentence
are given, a relative prosody distance (0 = indistinguishable from the reference, 1 = as far as
the wrong ones). Means come with seeded 95% bootstrap intervals; unreadable or silent audio is a
counted failure, never a score.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: synthesised utterances: file paths, or {"array": [...], "sampling_rate": int}.
    references: the reference utterance of each prediction (paths or arrays, likewise).
    others: optional, per prediction a list of the *other* candidate references of the same
        sentence (e.g. the other emotions' recordings), for `prosody_distance`.
    ids: optional item ids (default "0", "1", ...).
    clusters: optional list, the cluster of each item (e.g. its sentence) for a clustered
        bootstrap; items of one cluster are resampled together.
    voice_norm: "utterance" (default: each utterance's own median F0 and level are removed for
        the normalised figures) or "corpus" (one median over all predictions, one over all
        references: keeps differences of level between utterances).
    confidence: interval level (default 0.95); n_resamples (default 2000); seed (default 0).
    cache_dir: feature cache for file inputs ("" disables; default under $ADEPT_EVAL_HOME).
    progress: show a progress bar (default False).
Returns:
    for each figure (f0_rmse_st, f0_rmse_norm_st, f0_corr, gpe, vde, ffe, energy_corr,
    log_duration_ratio, pause_agreement, pause_mismatches, listener_distance, prosody_distance):
    its mean, and `<figure>_ci95` [low, high]; n, n_scored, n_failed, failure_rate;
    `summary` (per figure: mean, ci_low, ci_high, n, n_failed, n_undefined), `metrics`
    (name, unit, higher_is_better, range, best, citation key of each figure) and `items`
    (per item: every figure, status, detail, n_frames, n_voiced_both). Undefined values are None.
Examples:
    >>> metric = evaluate.load("prosody_transfer")
    >>> out = metric.compute(predictions=["tts/happy_01.wav"], references=["ref/happy_01.wav"],
    ...                      others=[["ref/sad_01.wav", "ref/angry_01.wav"]])
    >>> out["ffe"], out["prosody_distance"]
"""

_PATH = datasets.Value("string")
_ARRAY = {"array": datasets.Sequence(datasets.Value("float32")),
          "sampling_rate": datasets.Value("int32")}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ProsodyTransfer(evaluate.Metric):
    """The ``prosody_transfer`` evaluate module (see the module's description)."""
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": _PATH, "references": _PATH}),
                datasets.Features({"predictions": _ARRAY, "references": _ARRAY}),
                datasets.Features({"predictions": _ARRAY, "references": _PATH}),
                datasets.Features({"predictions": _PATH, "references": _ARRAY}),
            ],
            reference_urls=["https://proceedings.mlr.press/v80/skerry-ryan18a.html",
                            "https://doi.org/10.1109/ICASSP.2009.4960497"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """As evaluate's, with empty lists one clear error (``refuse_empty``)."""
        refuse_empty("prosody_transfer", predictions)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, others=None, ids=None, clusters=None,
                 voice_norm="utterance", confidence=0.95, n_resamples=2000, seed=0,
                 cache_dir=None, progress=False):
        return graded.evaluate_pairs(
            predictions, references, others=others, ids=ids, clusters=clusters,
            voice_norm=voice_norm, confidence=confidence, n_resamples=n_resamples, seed=seed,
            cache_dir=cache_dir, progress=progress)
