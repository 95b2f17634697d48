"""What lm-eval writes for our runs: results and Hub uploads named after the system, no value
of a secret environment variable in results or samples, and no crash on the Hub dataset card
of a run that pushes results only."""

from __future__ import annotations

from .fallback import fell_back, mark, patched


def patch_tracker(tracker_module) -> None:
    """Wraps three methods of lm-eval 0.4.13's ``lm_eval.loggers.evaluation_tracker``:
    ``GeneralConfigTracker.log_experiment_args`` (the run's name) and ``EvaluationTracker``'s
    ``recreate_metadata_card``, ``save_results_aggregated``/``save_results_samples``."""
    _patch_naming(tracker_module.GeneralConfigTracker)
    tracker = tracker_module.EvaluationTracker
    _patch_card(tracker)
    _patch_saving(tracker)


def _patch_naming(cls) -> None:
    """Results and Hub uploads are named after the *system* (``name=``, else its default),
    not after whatever ``path=`` happens to be, for adept-eval's models."""
    original = cls.log_experiment_args
    if patched(original):
        return

    def log_experiment_args(self, model_source, model_args, *args, **kwargs):
        original(self, model_source, model_args, *args, **kwargs)
        try:
            from ..names import MODELS

            if model_source in MODELS:
                from lm_eval.api.registry import get_model
                from lm_eval.utils import sanitize_model_name

                from ..options import parse_model_args

                self.model_name = get_model(model_source).name_from_args(
                    parse_model_args(model_args))
                self.model_name_sanitized = sanitize_model_name(self.model_name)
        except Exception as exc:
            fell_back("results naming", exc)

    cls.log_experiment_args = mark(log_experiment_args)


def _patch_card(tracker) -> None:
    """lm-eval 0.4.13 builds its Hub dataset card from pushed *sample* files and crashes (an
    empty max() or [0]) when a run pushes results only. Then skip the card, with a warning: the
    results themselves are already pushed by that point."""
    card = tracker.recreate_metadata_card
    if patched(card):
        return

    def recreate_metadata_card(self, *args, **kwargs):
        if not getattr(self, "push_samples_to_hub", False):  # plain attribute: cannot fail
            import logging

            logging.getLogger("adept_eval").warning(
                "lm-eval's Hub dataset card needs pushed samples (--log_samples with "
                "push_samples_to_hub=True); results were pushed, the card was skipped")
            return None
        return card(self, *args, **kwargs)

    tracker.recreate_metadata_card = mark(recreate_metadata_card)


def _patch_saving(tracker) -> None:
    """Results and samples are scanned for the values of secret environment variables before
    lm-eval writes (or pushes) them."""
    save = tracker.save_results_aggregated
    if not patched(save):
        def save_results_aggregated(self, results, samples=None, *args, **kwargs):
            refuse_leaks(results, samples)
            return save(self, results, samples, *args, **kwargs)

        tracker.save_results_aggregated = mark(save_results_aggregated)
    save_samples = getattr(tracker, "save_results_samples", None)
    if save_samples is not None and not patched(save_samples):
        def save_results_samples(self, task_name, samples, *args, **kwargs):
            refuse_leaks(None, samples)
            return save_samples(self, task_name, samples, *args, **kwargs)

        tracker.save_results_samples = mark(save_results_samples)


def refuse_leaks(results, samples) -> None:
    """``SettingsError`` when results or samples hold the value of a secret environment
    variable (an option or a system's output echoing it); the scan itself falls back."""
    try:
        import json

        from ..settings import environment_secrets

        secrets = environment_secrets()
        if not secrets:
            return
        text = json.dumps([results, samples], default=str, ensure_ascii=False)
        leaked = sorted(name for name, value in secrets.items() if value in text)
    except Exception as exc:
        fell_back("secret scan", exc)
        return
    if leaked:
        from ..settings import SettingsError

        raise SettingsError("refusing to write results or samples that contain the value of "
                            f"${', $'.join(leaked)}; an option or a system's output echoes a "
                            "secret (pass secrets only through environment variables)")
