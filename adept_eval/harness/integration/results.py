"""What lm-eval writes for our runs: results and Hub uploads named after the system, no value
of a secret environment variable in results or samples, and no crash on the Hub dataset card
of a run that pushes results only."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from adept_eval.errors import ResultsNotSaved
from adept_eval.harness.integration.fallback import fell_back, mark, patched


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
            from adept_eval.names import MODELS

            if model_source in MODELS:
                from lm_eval.api.registry import get_model
                from lm_eval.utils import sanitize_model_name

                from adept_eval.options import parse_model_args

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
    lm-eval writes (or pushes) them, the output path is checked before any scoring starts
    (``check_output_path``), and a results or samples file lm-eval could not write is fatal
    (``_require_written``): lm-eval 0.4.13 catches every exception of its save - a full disk,
    ``--output_path`` a regular file - logs only "Could not save results aggregated" and exits 0,
    leaving no results or a truncated file that looks like a finished run."""
    init = tracker.__init__
    if not patched(init):
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            check_output_path(getattr(self, "output_path", None))

        tracker.__init__ = mark(__init__)
    save = tracker.save_results_aggregated
    if not patched(save):
        def save_results_aggregated(self, results, samples=None, *args, **kwargs):
            refuse_leaks(results, samples)
            with _reasons(self) as reasons:
                done = save(self, results, samples, *args, **kwargs)
            if getattr(self, "output_path", None):
                _require_written(_folder(self) / f"results_{self.date_id}.json"
                                 if Path(self.output_path).suffix != ".json" else
                                 Path(self.output_path).with_name(
                                     f"{Path(self.output_path).stem}_{self.date_id}.json"),
                                 reasons, lines=None)
            return done

        tracker.save_results_aggregated = mark(save_results_aggregated)
    save_samples = getattr(tracker, "save_results_samples", None)
    if save_samples is not None and not patched(save_samples):
        def save_results_samples(self, task_name, samples, *args, **kwargs):
            refuse_leaks(None, samples)
            with _reasons(self) as reasons:
                done = save_samples(self, task_name, samples, *args, **kwargs)
            if getattr(self, "output_path", None):
                _require_written(_folder(self) / f"samples_{task_name}_{self.date_id}.jsonl",
                                 reasons, lines=len(samples))
            return done

        tracker.save_results_samples = mark(save_results_samples)


def check_output_path(output_path) -> None:
    """Before anything is scored: ``--output_path`` must be a folder that can be written (or
    not exist yet under one that can), or a ``.json`` file name in such a folder. Found only
    when saving, after the whole evaluation, a bad path would cost the run.

    Args:
        output_path: the ``--output_path`` value (nothing to check when empty).

    Raises:
        ResultsNotSaved: the path, or its nearest existing parent, is a file or cannot be
            written.
    """
    if not output_path:
        return
    path = Path(output_path)
    folder = path.parent if path.suffix == ".json" else path
    if folder.exists() and not folder.is_dir():
        raise ResultsNotSaved(f"--output_path {output_path}: {folder} is a file, not a folder; "
                              "give a folder for the results (lm-eval makes it if need be)")
    _check_nearest_existing(output_path, folder)


def _check_nearest_existing(output_path, folder: Path) -> None:
    """Refuse an output folder whose nearest existing ancestor (itself included) is a file or
    cannot be written.

    Args:
        output_path: the ``--output_path`` value, for the message.
        folder: the folder the results go to.

    Raises:
        ResultsNotSaved: that ancestor is a file or not writable.
    """
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is None:
        return
    if not existing.is_dir():
        raise ResultsNotSaved(f"--output_path {output_path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ResultsNotSaved(f"--output_path {output_path}: {existing} cannot be written "
                              "(no permission)")


def _folder(self) -> Path:
    """Where lm-eval 0.4.13 writes a run's files (``save_results_*``'s own rule)."""
    path = Path(self.output_path)
    if path.suffix == ".json":
        return path.parent
    return path / str(self.general_config_tracker.model_name_sanitized)


@contextmanager
def _reasons(self):
    """What lm-eval logs when its save fails (``repr`` of the exception it caught), gathered by
    standing in for its module's logger during the call.

    Args:
        self: lm-eval's ``EvaluationTracker`` (its defining module holds ``eval_logger``).

    Yields:
        The list the failure reasons are appended to while the call runs.
    """
    import inspect

    module = inspect.getmodule(type(self))
    logger = getattr(module, "eval_logger", None)
    reasons: list[str] = []
    if logger is None:
        yield reasons
        return

    class Recording:
        def __getattr__(self, name):
            return getattr(logger, name)

        def info(self, msg, *args, **kwargs):
            if isinstance(msg, str) and msg.endswith(")") and "(" in msg and not args:
                reasons.append(msg)
            return logger.info(msg, *args, **kwargs)

    module.eval_logger = Recording()
    try:
        yield reasons
    finally:
        module.eval_logger = logger


def _require_written(path: Path, reasons: list[str], *, lines: int | None) -> None:
    """``ResultsNotSaved`` naming ``path`` unless it holds what was to be written: a whole JSON
    document (results), or ``lines`` whole JSON lines (samples). A file cut short is removed:
    left behind, it would pass for a finished run's results."""
    import json

    try:
        text = path.read_text(encoding="utf-8")
        if lines is None:
            json.loads(text)
            return
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        if len(records) >= lines:
            return
        problem = f"only {len(records)} of its {lines} samples were written"
    except FileNotFoundError:
        problem = "it was not written"
    except (OSError, ValueError) as exc:
        problem = f"it is incomplete ({exc})"
    if path.exists():
        try:
            path.unlink()
            problem += "; the incomplete file was removed"
        except OSError:
            pass
    why = f": {reasons[-1]}" if reasons else ""
    raise ResultsNotSaved(f"could not save the results to {path}{why} - {problem}. Check the "
                          "--output_path folder (space left, permissions) and run again")


def refuse_leaks(results, samples) -> None:
    """``SettingsError`` when results or samples hold the value of a secret environment
    variable (an option or a system's output echoing it); the scan itself falls back."""
    try:
        import json

        from adept_eval.secrecy import environment_secrets

        secrets = environment_secrets()
        if not secrets:
            return
        text = json.dumps([results, samples], default=str, ensure_ascii=False)
        leaked = sorted(name for name, value in secrets.items() if value in text)
    except Exception as exc:
        fell_back("secret scan", exc)
        return
    if leaked:
        from adept_eval.errors import SettingsError

        raise SettingsError("refusing to write results or samples that contain the value of "
                            f"${', $'.join(leaked)}; an option or a system's output echoes a "
                            "secret (pass secrets only through environment variables)")
