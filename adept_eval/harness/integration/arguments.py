"""lm-eval's command line for our runs: ``key=value`` arguments that contain braces, malformed
JSON reported without echoing it, and a deliberate refusal shown as one line (exit status 2)."""

from __future__ import annotations

import sys

from adept_eval.harness.integration.fallback import mark, patched


def patch_cli_args(utils_module) -> None:
    """``key=value`` arguments may contain braces; malformed JSON is not echoed.

    lm-eval 0.4.13 (``lm_eval._cli.utils.try_parse_json``) parses ``--model_args``/``--metadata``
    as JSON whenever the text contains ``{``, and refuses it otherwise, so ``command=my_tts
    --text {text}`` or ``pattern={id}-Kimi`` never reach the ``key=value`` parser (which itself
    splits only at top-level commas, braces respected). A JSON object starts with ``{``:
    anything else falls back to ``key=value``. A text that does start with ``{`` and is not
    valid JSON is an error whose message says where it is broken but does not repeat the text,
    which may hold a secret.
    """
    original = utils_module.try_parse_json
    if patched(original):
        return

    def try_parse_json(value):
        try:
            return original(value)
        except ValueError:
            if not isinstance(value, str) or not value.lstrip().startswith("{"):
                return value  # the key=value form, placeholders and all
            import json

            try:
                json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a valid JSON object ({exc}; the {len(value)}-character "
                                 "value is not shown, in case it holds a secret). Use "
                                 "key=value,key2=value2 or a JSON object with double quotes"
                                 ) from None
            raise

    utils_module.try_parse_json = mark(try_parse_json, original)

    action = getattr(utils_module, "MergeDictAction", None)
    call = getattr(action, "__call__", None)
    if call is not None and not patched(call):
        def __call__(self, parser, namespace, values, option_string=None):
            try:
                return call(self, parser, namespace, values, option_string)
            except ValueError as exc:  # one line from argparse, not a traceback
                parser.error(f"argument {option_string or self.dest}: {exc}")

        action.__call__ = mark(__call__)


def patch_cli(run_module) -> None:
    """adept-eval's user errors (a bad option, file, corpus or system set-up) end ``lm_eval``
    with one message and exit status 2, as they end ``adept-eval`` (``errors``); other
    exceptions, and any with ``ADEPT_EVAL_DEBUG`` set, propagate unchanged. Wraps lm-eval
    0.4.13's ``lm_eval._cli.run.Run._execute``; without it the excepthook still shows the
    message (exit status 1)."""
    cls = getattr(run_module, "Run", None)
    original = getattr(cls, "_execute", None) if cls is not None else None
    if original is None or patched(original):
        return

    def _execute(args):
        from adept_eval.errors import USER_ERROR_STATUS, shown_as_one_message

        try:
            refuse_flags(args)
            return original(args)
        except Exception as exc:
            if not shown_as_one_message(exc):
                raise
            raise SystemExit(USER_ERROR_STATUS) from None

    cls._execute = staticmethod(mark(_execute))


def refuse_flags(args) -> None:
    """lm-eval 0.4.13 stops a run with a traceback for three flag mistakes of its command line:
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
    from adept_eval.harness.integration.fallback import ours

    if not ours(getattr(args, "model", None), getattr(args, "tasks", None)):
        return
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
