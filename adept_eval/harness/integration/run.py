"""``simple_evaluate`` for a run of our models or tasks: secret options, and keys the tasks set
themselves, refused before lm-eval logs or passes them; the run's context
(``harness.run_context``) begun with the keys that came from ``--model_args`` (``settings``
assigns every other key) and ended when the run returns; and the run's identity
(``adept_eval.identity``), noted in that context as its tasks load, attached to the results
lm-eval writes."""

from __future__ import annotations

import functools

from adept_eval.errors import UnsupportedOptionError, UserError
from adept_eval.harness.integration.fallback import OUR_RUN, fell_back, mark, ours, patched
from adept_eval.harness.integration.task_index import REQUESTED


def patch_evaluator(evaluator_module) -> None:
    """Wrap ``lm_eval.evaluator.simple_evaluate(model, model_args, tasks, ...)`` (written
    against lm-eval 0.4.13's signature; positional or keyword arguments alike). A run whose
    model and tasks are none of ours is lm-eval's own call, with only the task index's note of
    the requested tasks around it (``task_index.REQUESTED``, read for runs of ours alone).

    Args:
        evaluator_module: ``lm_eval.evaluator``, patched in place.
    """
    import inspect

    original = evaluator_module.simple_evaluate
    if patched(original):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        try:
            given = signature.bind_partial(*args, **kwargs).arguments
        except TypeError:  # lm-eval's own error for a call it does not accept
            return original(*args, **kwargs)
        model, model_args = given.get("model"), given.get("model_args")
        is_ours = False
        try:
            is_ours = ours(model, given.get("tasks"))
            if is_ours:
                begin_run(original, args, kwargs, given)
        except UserError:  # a deliberate refusal, not an error of ours
            raise
        except Exception as exc:
            fell_back("settings", exc)
        requested = REQUESTED.set(given.get("tasks") if given.get("task_manager") is None
                                  else None)
        if not is_ours:
            try:
                return original(*args, **kwargs)
            finally:
                REQUESTED.reset(requested)
        from adept_eval import identity
        from adept_eval.harness import run_context

        run = run_context.begin(*model_record(model, model_args))
        marked = OUR_RUN.set(True)
        try:
            results = original(*args, **kwargs)
        finally:
            OUR_RUN.reset(marked)
            REQUESTED.reset(requested)
            context = run_context.end(run)
        try:
            identity.attach(results, model, model_args, context.identities)
        except Exception as exc:
            fell_back("run identity", exc)
        return results

    evaluator_module.simple_evaluate = mark(simple_evaluate, original)


def begin_run(original, args, kwargs, given) -> None:
    """What a run of ours does before lm-eval starts: refuse what it cannot take
    (``refuse_run_options``), check that ``--output_path`` can hold the results (lm-eval only
    finds out after the whole evaluation), and show our user errors and Ctrl-C as one line
    should they reach the top of the process (``errors.install_excepthook``).

    Args:
        original: lm-eval's own ``simple_evaluate``.
        args: the positional arguments of the call.
        kwargs: the keyword arguments of the call.
        given: the call's arguments bound to lm-eval's signature.

    Raises:
        UnsupportedOptionError: an option a run of ours refuses.
        SettingsError: a secret or a task's own key among the options.
        ResultsNotSaved: ``--output_path`` cannot hold results.
    """
    from adept_eval.errors import install_excepthook
    from adept_eval.harness.integration.results import check_output_path

    install_excepthook()
    refuse_run_options(original, args, kwargs, given.get("model_args"))
    tracker = given.get("evaluation_tracker")
    check_output_path(getattr(tracker, "output_path", None))


def refuse_run_options(original, args, kwargs, model_args) -> None:
    """Refuse, before lm-eval logs or passes them, the options a run of ours cannot take:
    lm-eval options that would give wrong results (``REFUSED``), secrets in ``--model_args``
    or ``--metadata``, and keys the tasks set themselves (``settings.TASK_KEYS``: lm-eval's
    task loader call would be a TypeError).

    Args:
        original: lm-eval's own ``simple_evaluate`` (its signature binds the arguments).
        args: the positional arguments of the call.
        kwargs: the keyword arguments of the call.
        model_args: the call's ``model_args`` (a ``key=value`` string or a dict).

    Raises:
        UnsupportedOptionError: an option of ``REFUSED`` is set.
        SettingsError: a secret or a task's own key is among the options.
    """
    from adept_eval.harness import settings
    from adept_eval.options import parse_model_args
    from adept_eval.secrecy import refuse_secrets

    refuse_options(original, args, kwargs)
    given_model_args = parse_model_args(model_args)
    metadata = dict(kwargs.get("metadata") or {})
    refuse_secrets(given_model_args, "--model_args")
    refuse_secrets(metadata, "--metadata")
    settings.refuse_task_keys(given_model_args, "--model_args")
    settings.refuse_task_keys(metadata, "--metadata")


def model_record(model, model_args) -> tuple[str, frozenset[str] | None]:
    """What the run's context records of its model: its name and the keys ``--model_args``
    gave (None when they cannot be read: every key a model declares is then the model's).

    Args:
        model: the ``--model`` (a registered name or a model object).
        model_args: the ``--model_args`` (a ``key=value`` string or a dict).

    Returns:
        (model name, the ``--model_args`` keys).
    """
    from adept_eval.options import parse_model_args

    name = model if isinstance(model, str) else type(model).__name__
    try:
        return name, frozenset(parse_model_args(model_args))
    except Exception as exc:
        fell_back("settings", exc)
        return name, None


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
    recorded, keyed on less than what decides our answers; the chat template and the integrity
    check end in lm-eval's NotImplementedError / FileNotFoundError; a system instruction or
    generation settings change nothing yet would be written into the results' config as if
    they had shaped the run. ``cache_requests`` is refused only when it reads or writes the
    cache (deleting it is fine).

    Args:
        original: lm-eval's own ``simple_evaluate`` (its signature binds the arguments).
        args: the positional arguments of the call.
        kwargs: the keyword arguments of the call.

    Raises:
        UnsupportedOptionError: naming the option and why.
    """
    import inspect

    given = inspect.signature(original).bind_partial(*args, **kwargs).arguments
    for option, why in REFUSED.items():
        value = given.get(option)
        if option == "use_cache" and value is None or option != "use_cache" and not value:
            continue
        raise UnsupportedOptionError(f"--{option}: not for adept-eval's models and tasks: {why}")
