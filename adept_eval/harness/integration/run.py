"""``simple_evaluate`` for a run of our models or tasks: secret options, and keys the tasks set
themselves, refused before lm-eval logs or passes them, the keys that came from
``--model_args`` noted (``settings`` assigns every other key), and the run's identity
(``adept_eval.identity``) attached to the results lm-eval writes."""

from __future__ import annotations

import functools

from adept_eval.errors import OptionError
from adept_eval.harness.integration.fallback import fell_back, mark, ours, patched
from adept_eval.harness.integration.task_index import REQUESTED


def patch_evaluator(evaluator_module) -> None:
    """Wraps ``lm_eval.evaluator.simple_evaluate(model, model_args, tasks, ...)`` (written
    against lm-eval 0.4.13's signature; positional or keyword arguments alike)."""
    original = evaluator_module.simple_evaluate
    if patched(original):
        return

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        from adept_eval import identity
        from adept_eval.harness import settings
        from adept_eval.options import parse_model_args
        from adept_eval.secrecy import refuse_secrets

        model, model_args = kwargs.get("model", args[0] if args else None), \
            kwargs.get("model_args", args[1] if len(args) > 1 else None)
        is_ours = False
        try:
            is_ours = ours(model, kwargs.get("tasks"))
            if is_ours:
                refuse_options(original, args, kwargs)
                refuse_secrets(parse_model_args(model_args), "--model_args")
                refuse_secrets(dict(kwargs.get("metadata") or {}), "--metadata")
                # before lm-eval's task loader call would be a TypeError (settings.TASK_KEYS)
                settings.refuse_task_keys(parse_model_args(model_args), "--model_args")
                settings.refuse_task_keys(dict(kwargs.get("metadata") or {}), "--metadata")
                settings.note_run(model, model_args)
                identity.reset()
        except (settings.SettingsError, OptionError):
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


#: lm-eval options a run of ours refuses, and why (lm-eval 0.4.13's ``simple_evaluate`` keywords)
REFUSED = {
    "use_cache": "lm-eval's response cache keys each answer by its prompt alone, not by the "
                 "system or its files, so a later run would score the samples an earlier run "
                 "recorded (another system's, or files replaced since); leave it out "
                 "(tts-command caches its outputs by content itself)",
    "cache_requests": "lm-eval's request cache keys a task's questions by the task name alone, "
                      "but each question carries the run's corpus, listener and listener "
                      "options, so a later run with other --metadata would be scored with the "
                      "cached ones while its results record the new; leave it out (the "
                      "questions take well under a second to build)",
    "apply_chat_template": "adept-eval's systems turn each question's stimuli into audio; "
                           "there is no chat prompt to apply a template to",
    "check_integrity": "it runs lm-eval's own unit tests of each task, which adept-eval's "
                       "tasks do not have (`lm_eval validate --tasks ...` checks their "
                       "configuration)",
    "system_instruction": "adept-eval's systems read no text prompt, so the instruction would "
                          "change nothing while the results recorded it as used",
    "gen_kwargs": "adept-eval's systems generate no text, so the settings would change nothing "
                  "while the results recorded them as used (a system's own options go in "
                  "--model_args, a listener's or judge's in --metadata)",
}


def refuse_options(original, args, kwargs) -> None:
    """Refuse, before anything is built, an lm-eval option whose effect on a run of ours would
    be wrong results or a traceback (``REFUSED``): the two caches replay what an earlier run
    recorded, keyed on less than what decides our answers (lm-eval 0.4.13 replayed another
    system's missing sample, or graded figures asked off, without a word), and the chat
    template and integrity check ended in lm-eval's NotImplementedError / FileNotFoundError,
    and a system instruction or generation settings were ignored without a word yet written
    into the results' config as if they had shaped the run.
    ``cache_requests`` refused only when it reads or writes the cache (deleting it is fine)."""
    import inspect

    given = inspect.signature(original).bind_partial(*args, **kwargs).arguments
    for option, why in REFUSED.items():
        value = given.get(option)
        if option == "use_cache" and value is None or option != "use_cache" and not value:
            continue
        raise OptionError(f"--{option}: not for adept-eval's models and tasks: {why}")
