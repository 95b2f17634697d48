"""lm-eval's command line for our runs: ``key=value`` arguments that contain braces, malformed
JSON reported without echoing it, and a deliberate refusal shown as one line (exit status 2).
Anyone else's command line is parsed, and fails, as lm-eval parses it."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from adept_eval.harness.integration.fallback import fell_back, mark, ours, patched


@dataclass(frozen=True)
class Deferred:
    """An option value lm-eval's parser refused, kept until the whole command line is read.

    Attributes:
        option: the option as written (``--model_args``).
        value: the value refused.
        error: lm-eval's own ValueError for it (raised as it is for anyone else's run).
        json: the value starts with ``{``: a JSON object that is malformed (else a
            ``key=value`` list with braces in a value, already merged as such).
    """

    option: str
    value: str
    error: ValueError
    json: bool


#: while lm-eval's ``HarnessCLI.parse_args`` runs: the values its parser refused, in order
DEFERRED: contextvars.ContextVar = contextvars.ContextVar("adept_eval_deferred", default=None)


def patch_cli_args(utils_module) -> None:
    """While lm-eval's own command line is parsed (``patch_harness_cli``), a value that
    lm-eval 0.4.13's ``MergeDictAction`` refuses is deferred rather than raised, because
    whether the run is ours (``--model``, ``--tasks``) is known only once every argument is
    read.

    Why: ``lm_eval._cli.utils.try_parse_json`` parses ``--model_args``/``--metadata`` as JSON
    whenever the text contains ``{``, and refuses it otherwise, so ``command=my_tts --text
    {text}`` or ``pattern={id}-Kimi`` never reach the ``key=value`` parser (which itself splits
    only at top-level commas, braces respected). Such a value is merged as ``key=value`` at
    once (a run of ours keeps it); a malformed JSON object is merged as nothing. Outside
    ``HarnessCLI.parse_args`` (a parser built by hand, lm-eval's own tests), and for
    ``try_parse_json`` itself, nothing changes.

    Args:
        utils_module: ``lm_eval._cli.utils``, whose ``MergeDictAction.__call__`` is wrapped.
    """
    action = getattr(utils_module, "MergeDictAction", None)
    call = getattr(action, "__call__", None)
    if call is None or patched(call):
        return

    def __call__(self, parser, namespace, values, option_string=None):
        deferred = DEFERRED.get()
        if deferred is None:
            return call(self, parser, namespace, values, option_string)
        try:
            return call(self, parser, namespace, values, option_string)
        except ValueError as exc:
            items = [values] if isinstance(values, str) else list(values or ())
            if not items or not all(isinstance(v, str) for v in items):
                raise
            is_json = items[0].lstrip().startswith("{")
            deferred.append(Deferred(option_string or self.dest, items[0], exc, is_json))
            if not is_json:
                _merge_key_values(utils_module, self, parser, namespace, items, option_string)

    action.__call__ = mark(__call__, call)


def _merge_key_values(utils_module, action, parser, namespace, items, option_string) -> None:
    """Merge ``key=value`` items into the option's dict, as lm-eval's ``MergeDictAction`` merges
    a value without braces (its own ``key_val_to_dict``; a later key replaces an earlier one).

    Args:
        utils_module: ``lm_eval._cli.utils``.
        action: the argparse action (its ``dest``).
        parser: the parser (reports a malformed item as argparse does).
        namespace: the namespace being filled.
        items: the option's values.
        option_string: the option as written.
    """
    current = dict(vars(namespace).get(action.dest) or {})
    for item in items:
        try:
            current.update(utils_module.key_val_to_dict(item))
        except ValueError as exc:
            parser.error(f"argument {option_string or action.dest}: {exc}")
    setattr(namespace, action.dest, current)


def patch_harness_cli(harness_module) -> None:
    """Settle the values deferred while ``lm_eval``'s command line was parsed (wraps lm-eval
    0.4.13's ``lm_eval._cli.harness.HarnessCLI.parse_args``): for a run of our models or
    tasks a ``key=value`` value with braces stands and a malformed JSON object is one argparse
    message that does not repeat the value (it may hold a secret); for anyone else's run
    lm-eval's own error for the first such value is raised, as lm-eval raises it.

    Args:
        harness_module: ``lm_eval._cli.harness``, patched in place.
    """
    cls = getattr(harness_module, "HarnessCLI", None)
    original = getattr(cls, "parse_args", None) if cls is not None else None
    if original is None or patched(original):
        return

    def parse_args(self, *args, **kwargs):
        deferred: list[Deferred] = []
        token = DEFERRED.set(deferred)
        try:
            parsed = original(self, *args, **kwargs)
        finally:
            DEFERRED.reset(token)
        if deferred:
            settle(self, parsed, deferred)
        return parsed

    cls.parse_args = mark(parse_args, original)


def settle(cli, parsed, deferred: list[Deferred]) -> None:
    """Raise lm-eval's own error for the first deferred value unless the run is ours; for a run
    of ours, a malformed JSON object is argparse's one-line error (exit status 2).

    Args:
        cli: lm-eval's ``HarnessCLI`` (its parser reports the error).
        parsed: the parsed command line.
        deferred: the values refused while parsing, in order.

    Raises:
        ValueError: lm-eval's own error, for anyone else's run.
        SystemExit: argparse's error, for a malformed JSON object in a run of ours.
    """
    if not _is_ours(parsed):
        raise deferred[0].error
    for item in deferred:
        if item.json:
            cli._parser.error(f"argument {item.option}: {_json_problem(item.value)}")


def _is_ours(parsed) -> bool:
    """Whether a parsed ``lm_eval`` command line runs our models or tasks (``ours``); a failure
    to tell is reported (``fell_back``) and counts as not ours, so lm-eval behaves as without
    the plugin.

    Args:
        parsed: the parsed command line (its ``model`` and ``tasks``).

    Returns:
        True for a run of ours.
    """
    try:
        return ours(getattr(parsed, "model", None), getattr(parsed, "tasks", None))
    except Exception as exc:
        fell_back("command line", exc)
        return False


def _json_problem(value: str) -> str:
    """What is wrong with a malformed JSON object, without repeating it.

    Args:
        value: the option's value.

    Returns:
        The message: where the JSON breaks, how long the value is, what to write instead.
    """
    import json

    try:
        json.loads(value)
        where = "not a JSON object"
    except json.JSONDecodeError as exc:
        where = str(exc)
    return (f"not a valid JSON object ({where}; the {len(value)}-character value is not "
            "shown, in case it holds a secret). Use key=value,key2=value2 or a JSON object "
            "with double quotes")


def patch_cli(run_module) -> None:
    """For a run of our models or tasks, adept-eval's user errors (a bad option, file, corpus or
    system set-up) end ``lm_eval`` with one message and exit status 2, as they end
    ``adept-eval`` (``errors``); other exceptions, and any with ``ADEPT_EVAL_DEBUG`` set,
    propagate unchanged. Anyone else's run is lm-eval's own ``_execute``. Wraps lm-eval
    0.4.13's ``lm_eval._cli.run.Run._execute``; without it the excepthook still shows the
    message (exit status 1)."""
    cls = getattr(run_module, "Run", None)
    original = getattr(cls, "_execute", None) if cls is not None else None
    if original is None or patched(original):
        return

    def _execute(args):
        if not _is_ours(args):
            return original(args)
        from adept_eval.errors import USER_ERROR_STATUS, install_excepthook, shown_as_one_message

        install_excepthook()
        try:
            refuse_flags(args)
            return original(args)
        except Exception as exc:
            if not shown_as_one_message(exc):
                raise
            raise SystemExit(USER_ERROR_STATUS) from None

    cls._execute = staticmethod(mark(_execute, original))


def refuse_flags(args) -> None:
    """Called for runs of ours only. lm-eval 0.4.13 stops a run with a traceback for three flag mistakes of its command line:
    ``--log_samples``/``--predict_only`` without ``--output_path`` (its ValueError),
    ``--wandb_args`` without wandb installed (an UnboundLocalError inside its W&B logger), and
    ``--hf_hub_log_args push_...=True`` without ``HF_TOKEN`` (its ValueError). For a run of our
    models or tasks each is one message naming the flag (``errors.UnsupportedOptionError``), before
    anything is built. Flags read from a ``--config`` file are left to lm-eval.

    Args:
        args: lm-eval's parsed command line.

    Raises:
        UnsupportedOptionError: one of the three mistakes, in a run of our models or tasks.
    """
    _refuse_outputs_without_path(args)
    _refuse_wandb_without_package(args)
    _refuse_hub_push_without_token(args)


def _refuse_outputs_without_path(args) -> None:
    """Refuse ``--log_samples``/``--predict_only`` without ``--output_path``.

    Args:
        args: lm-eval's parsed command line.

    Raises:
        UnsupportedOptionError: either flag is set without an output path.
    """
    from adept_eval.errors import UnsupportedOptionError

    for flag in ("log_samples", "predict_only"):
        if getattr(args, flag, False) and not getattr(args, "output_path", None):
            raise UnsupportedOptionError(f"--{flag} needs --output_path: the folder the results and each "
                              "question's record are written to")


def _refuse_wandb_without_package(args) -> None:
    """Refuse ``--wandb_args`` when wandb is not installed.

    Args:
        args: lm-eval's parsed command line.

    Raises:
        UnsupportedOptionError: the flag is set and wandb cannot be imported.
    """
    from adept_eval.errors import UnsupportedOptionError

    if getattr(args, "wandb_args", None):
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
            raise UnsupportedOptionError("--wandb_args: wandb is not installed (pip install wandb); "
                              "leave the flag out to run without it")


def _refuse_hub_push_without_token(args) -> None:
    """Refuse a Hub push in ``--hf_hub_log_args`` with no token to push with.

    Args:
        args: lm-eval's parsed command line.

    Raises:
        UnsupportedOptionError: a ``push_..._to_hub=True`` with neither a ``token`` nor HF_TOKEN.
    """
    from adept_eval.errors import UnsupportedOptionError

    hub = getattr(args, "hf_hub_log_args", None) or {}
    if isinstance(hub, str):
        from lm_eval.utils import simple_parse_args_string

        hub = simple_parse_args_string(hub)
    import os

    pushed = [k for k in ("push_results_to_hub", "push_samples_to_hub")
              if str(hub.get(k, "")).lower() == "true"]
    if pushed and not hub.get("token") and not os.environ.get("HF_TOKEN"):
        raise UnsupportedOptionError(f"--hf_hub_log_args {pushed[0]}=True: lm-eval pushes with the token in "
                          "the HF_TOKEN environment variable, which is not set")
