"""What lm-eval writes for our runs: results and Hub uploads named after the system, the value
of a secret environment variable redacted from results and samples, a save that failed made
fatal, and no crash on the Hub dataset card of a run that pushes results only. A tracker
saving anyone else's run (neither model nor tasks ours) is lm-eval's own, untouched."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from adept_eval.errors import ResultsNotSaved
from adept_eval.harness.integration.fallback import fell_back, mark, ours, patched


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
        if _saves_ours(self) and not getattr(self, "push_samples_to_hub", False):
            import logging

            logging.getLogger("adept_eval").warning(
                "lm-eval's Hub dataset card needs pushed samples (--log_samples with "
                "push_samples_to_hub=True); results were pushed, the card was skipped")
            return None
        return card(self, *args, **kwargs)

    tracker.recreate_metadata_card = mark(recreate_metadata_card)


def _saves_ours(tracker, tasks=()) -> bool:
    """Does this tracker save a run of adept-eval's model or tasks?

    Args:
        tracker: lm-eval's ``EvaluationTracker`` (its general config names the model once
            ``simple_evaluate`` has logged the run's arguments).
        tasks: the task names being saved.

    Returns:
        True for a run of ours; False for anyone else's, or when it cannot be told (an error
        of ours then costs the feature, not lm-eval's own save).
    """
    try:
        model = getattr(getattr(tracker, "general_config_tracker", None), "model_source", None)
        return ours(model, [t for t in tasks if isinstance(t, str)])
    except Exception as exc:
        fell_back("results", exc)
        return False


def _tasks_of(results) -> list[str]:
    """The task and group names of lm-eval's results dict (none for anything else)."""
    if not isinstance(results, dict):
        return []
    return [*(results.get("configs") or {}), *(results.get("results") or {})]


def _patch_saving(tracker) -> None:
    """For a run of ours: the values of secret environment variables are redacted from results
    and samples before lm-eval writes (or pushes) them (``redact_leaks``), and a results or
    samples file lm-eval could not write is fatal (``_require_written``): lm-eval 0.4.13 catches
    every exception of its save - a full disk, ``--output_path`` a regular file - logs only
    "Could not save results aggregated" and exits 0, leaving no results or a truncated file that
    looks like a finished run. Anyone else's run is saved by lm-eval's own methods, unchanged.
    The output path of a run of ours is checked before any scoring (``check_output_path``,
    called by ``run.patch_evaluator``)."""
    save = tracker.save_results_aggregated
    if not patched(save):
        def save_results_aggregated(self, results, samples=None, *args, **kwargs):
            if not _saves_ours(self, _tasks_of(results)):
                return save(self, results, samples, *args, **kwargs)
            redact_leaks(results, samples, _config_of(self))
            with _reasons(self) as reasons:
                done = save(self, results, samples, *args, **kwargs)
            if getattr(self, "output_path", None):
                _require_written(_results_file(self), reasons, lines=None)
            return done

        tracker.save_results_aggregated = mark(save_results_aggregated, save)
    save_samples = getattr(tracker, "save_results_samples", None)
    if save_samples is not None and not patched(save_samples):
        def save_results_samples(self, task_name, samples, *args, **kwargs):
            if not _saves_ours(self, [task_name]):
                return save_samples(self, task_name, samples, *args, **kwargs)
            redact_leaks(None, samples)
            with _reasons(self) as reasons:
                done = save_samples(self, task_name, samples, *args, **kwargs)
            if getattr(self, "output_path", None):
                date_id = getattr(self, "date_id", None)
                _require_written(_folder(self) / f"samples_{task_name}_{date_id}.jsonl"
                                 if date_id else None, reasons, lines=len(samples))
            return done

        tracker.save_results_samples = mark(save_results_samples, save_samples)


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


def _config_of(tracker) -> dict | None:
    """The run's general config that lm-eval adds to the results as it saves them (model
    arguments, model name...), as the tracker's own attribute dict (redacted in place), without
    the sanitised model name that names the results folder.

    Args:
        tracker: lm-eval's ``EvaluationTracker``.

    Returns:
        A dict of the config's fields whose changes reach the tracker, or None.
    """
    config = getattr(tracker, "general_config_tracker", None)
    fields = getattr(config, "__dict__", None)
    if not isinstance(fields, dict):
        return None
    return _FieldsView(config, [k for k in fields if k != "model_name_sanitized"])


class _FieldsView(dict):
    """Some attributes of an object as a dict; setting an item sets the attribute."""

    def __init__(self, target, names):
        super().__init__((name, getattr(target, name)) for name in names)
        self._target = target

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        setattr(self._target, key, value)

    def __delitem__(self, key):  # a field's name is never a secret's value: keep the field
        super().__delitem__(key)


def _results_file(self) -> Path | None:
    """The results file lm-eval 0.4.13 writes (``save_results_aggregated``'s own rule), or None
    when it never got as far as naming one (``date_id`` is set just before writing)."""
    date_id = getattr(self, "date_id", None)
    if not date_id:
        return None
    path = Path(self.output_path)
    if path.suffix == ".json":
        return path.with_name(f"{path.stem}_{date_id}.json")
    return _folder(self) / f"results_{date_id}.json"


def _folder(self) -> Path:
    """Where lm-eval 0.4.13 writes a run's files (``save_results_*``'s own rule)."""
    path = Path(self.output_path)
    if path.suffix == ".json":
        return path.parent
    return path / str(self.general_config_tracker.model_name_sanitized)


@contextmanager
def _reasons(self):
    """What lm-eval logs when its save fails (``eval_logger.info(repr(e))``), noted whatever
    the logger's level, by wrapping that logger's ``info`` for the call. The logger itself is
    lm-eval's (its log-once cache keys on it) and its records keep lm-eval's source lines
    (``stacklevel`` skips the wrapper).

    Args:
        self: lm-eval's ``EvaluationTracker`` (its defining module holds ``eval_logger``).

    Yields:
        The list the failure reasons are appended to while the call runs.
    """
    import inspect
    import logging

    logger = getattr(inspect.getmodule(type(self)), "eval_logger", None)
    reasons: list[str] = []
    if not isinstance(logger, logging.Logger):
        yield reasons
        return
    had = "info" in vars(logger)
    previous = logger.info

    def info(msg, *args, **kwargs):
        if isinstance(msg, str) and not args and msg.endswith(")") and "(" in msg:
            reasons.append(msg)
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        return previous(msg, *args, **kwargs)

    logger.info = info
    try:
        yield reasons
    finally:
        if had:
            logger.info = previous
        else:
            del logger.info


def _require_written(path: Path | None, reasons: list[str], *, lines: int | None) -> None:
    """``ResultsNotSaved`` naming ``path`` unless it holds what was to be written: a whole JSON
    document (results), or ``lines`` whole JSON lines (samples). A file cut short is removed:
    left behind, it would pass for a finished run's results. ``path`` None: lm-eval failed
    before naming the file."""
    import json

    if path is None:
        why = f": {reasons[-1]}" if reasons else ""
        raise ResultsNotSaved(f"lm-eval could not save the results{why}. Check the "
                              "--output_path folder (space left, permissions) and run again")

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


def redact_leaks(results, samples, config=None) -> list[str]:
    """Replace, in place, the value of every secret environment variable found in results or
    samples (an option or a system's output echoing it) by ``<redacted $NAME>``, and say so on
    the ``adept_eval`` logger: the run's results are written, never the secret. The scan
    itself falls back (an error of ours leaves lm-eval's save as it is).

    Args:
        results: lm-eval's results dict, or None.
        samples: task name -> its sample records (or one task's list), or None.
        config: the run's general config lm-eval adds to the results as it writes them
            (``_config_of``), or None.

    Returns:
        The names of the variables whose values were redacted.
    """
    try:
        import json

        from adept_eval.secrecy import environment_secrets

        secrets = environment_secrets()
        if not secrets:
            return []
        text = json.dumps([results, samples, config], default=str, ensure_ascii=False)
        leaked = {name: value for name, value in secrets.items() if value in text}
        if not leaked:
            return []
        # longest values first: a secret inside another is replaced as part of the longer one
        order = sorted(leaked.items(), key=lambda kv: len(kv[1]), reverse=True)
        for container in (results, samples, config):
            if container is not None:
                _redact_in(container, order)
    except Exception as exc:
        fell_back("secret scan", exc)
        return []
    import logging

    logging.getLogger("adept_eval").warning(
        "the value of $%s appeared in the results or samples (an option or a system's output "
        "echoes it) and is written as <redacted $NAME>; pass secrets only through environment "
        "variables", ", $".join(sorted(leaked)))
    return sorted(leaked)


def _redacted(text: str, order) -> str:
    """``text`` with each secret value replaced by ``<redacted $NAME>``."""
    for name, value in order:
        if value in text:
            text = text.replace(value, f"<redacted ${name}>")
    return text


def _redact_in(container, order) -> None:
    """Redact the secret values in a nested structure of dicts and lists, in place (keys,
    strings, and anything else whose text holds one: replaced by its redacted text).

    Args:
        container: a dict or list from lm-eval's results or samples.
        order: (name, value) of the secrets to replace, longest value first.
    """
    stack = [container]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in list(node):
                value = node[key]
                new_key = _redacted(key, order) if isinstance(key, str) else key
                if new_key != key:
                    del node[key]
                node[new_key] = _redacted_value(value, order, stack)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = _redacted_value(value, order, stack)


def _redacted_value(value, order, stack):
    """One value, redacted: containers are queued on ``stack``; numbers and None kept."""
    if isinstance(value, (dict, list)):
        stack.append(value)
        return value
    if isinstance(value, str):
        return _redacted(value, order)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, tuple):
        items = list(value)
        _redact_in(items, order)
        return tuple(items)
    text = str(value)
    shown = _redacted(text, order)
    return value if shown == text else shown
