"""``simple_evaluate`` for a run of our models or tasks: secret options, and keys the tasks set
themselves, refused before lm-eval logs or passes them, the keys that came from
``--model_args`` noted (``settings`` assigns every other key), and the run's identity
(``adept_eval.identity``) attached to the results lm-eval writes."""

from __future__ import annotations

import functools

from .fallback import fell_back, mark, ours, patched
from .task_index import REQUESTED


def patch_evaluator(evaluator_module) -> None:
    """Wraps ``lm_eval.evaluator.simple_evaluate(model, model_args, tasks, ...)`` (written
    against lm-eval 0.4.13's signature; positional or keyword arguments alike)."""
    original = evaluator_module.simple_evaluate
    if patched(original):
        return

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        from .. import identity, settings
        from ..options import parse_model_args

        model, model_args = kwargs.get("model", args[0] if args else None), \
            kwargs.get("model_args", args[1] if len(args) > 1 else None)
        is_ours = False
        try:
            is_ours = ours(model, kwargs.get("tasks"))
            if is_ours:
                settings.refuse_secrets(parse_model_args(model_args), "--model_args")
                settings.refuse_secrets(dict(kwargs.get("metadata") or {}), "--metadata")
                # before lm-eval's task loader call would be a TypeError (settings.TASK_KEYS)
                settings.refuse_task_keys(parse_model_args(model_args), "--model_args")
                settings.refuse_task_keys(dict(kwargs.get("metadata") or {}), "--metadata")
                settings.note_run(model, model_args)
                identity.reset()
        except settings.SettingsError:
            raise
        except Exception as exc:
            fell_back("settings", exc)
        requested = REQUESTED.set(kwargs.get("tasks", args[2] if len(args) > 2 else None)
                                  if kwargs.get("task_manager") is None else None)
        try:
            results = original(*args, **kwargs)
            if is_ours:
                try:
                    identity.attach(results, model, model_args)
                except Exception as exc:
                    fell_back("run identity", exc)
            return results
        finally:
            REQUESTED.reset(requested)
            if is_ours:
                try:
                    settings.forget_run()
                except Exception:
                    pass

    evaluator_module.simple_evaluate = mark(simple_evaluate)
