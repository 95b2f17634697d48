"""Errors a user causes (a bad file, option or corpus) and how they are shown: one message.

Every such error names the file or option and the problem; it is shown as one line (or one
list) without a traceback, and the process exits non-zero. Tracebacks are for bugs: the
``adept-eval`` command prints one for a user error only with ``--debug``, and the lm-eval
excepthook installed by ``install_excepthook`` only with ``ADEPT_EVAL_DEBUG=1``.
"""

from __future__ import annotations

import os
import sys

#: exit status of a run stopped by a user error (argparse uses 2 for bad arguments too)
USER_ERROR_STATUS = 2


class UserError(Exception):
    """Marks an exception whose message alone tells the user what to fix."""


class TasksChoiceError(UserError, ValueError):
    """A --tasks value naming adept-eval's tasks that cannot run: a name no task or group has
    (a typo: named, with the nearest names), or tasks and groups that share a task."""


class OptionError(UserError, ValueError):
    """An lm-eval option that a run of adept-eval's models or tasks cannot honour (its result
    would be wrong, or lm-eval would stop with a traceback): refused, naming the option."""


class CorpusError(UserError, RuntimeError):
    """The corpus is missing, incomplete or malformed; the message lists every problem."""


class SettingsError(UserError, ValueError):
    """A --model_args / --metadata key that no component owns, or one holding a secret."""


# --------------------------------------------------------------------------- results and the CLI
class PublishError(RuntimeError):
    """A run that cannot be read, ranked or published (a missing or damaged results file, a run
    without its identity, a Hub refusal): the message names the file, option or repo."""


class CompareError(UserError, ValueError):
    """Runs that cannot be compared (different corpora, scorers or task sets, one run named
    twice, samples not logged): the message names the runs and the field that differs."""


def user_error_types() -> tuple[type[BaseException], ...]:
    """Exception types whose message is the whole story (no traceback needed)."""
    types: list[type[BaseException]] = [UserError]
    models = sys.modules.get("adept_eval.models.base")
    if models is not None:  # lm-eval's model layer is heavy: only look if already loaded
        types.append(models.SystemSetupError)
    return tuple(types)


def message(exc: BaseException) -> str:
    """One readable message for an exception, naming the file for OS errors."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        other = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{where}{other}: {exc.strerror}" if where else exc.strerror
    text = str(exc)
    return text if text else type(exc).__name__


def shown_as_one_message(exc: BaseException) -> bool:
    """Under ``lm_eval``: print a user error as ``error: <message>`` (and how to see the
    traceback) and say so; anything else - or any error with ``ADEPT_EVAL_DEBUG`` set - is
    left to Python's report."""
    if not isinstance(exc, user_error_types()) or os.environ.get("ADEPT_EVAL_DEBUG"):
        return False
    sys.stderr.write(f"error: {message(exc)}\n"
                     "(set ADEPT_EVAL_DEBUG=1 to see where it was raised)\n")
    sys.stderr.flush()
    return True


def install_excepthook() -> None:
    """Show adept-eval's user errors that reach the top of a process (e.g. ``lm_eval`` loading
    an adept task with a missing corpus) as ``error: <message>`` instead of a traceback, and
    Ctrl-C as ``interrupted``; any other exception keeps Python's normal report. Idempotent."""
    if getattr(sys.excepthook, "_adept_eval", False):
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        if shown_as_one_message(value):
            return
        if issubclass(kind, KeyboardInterrupt) and not os.environ.get("ADEPT_EVAL_DEBUG"):
            # Ctrl-C is the user's own act, not a fault: "interrupted", as the adept-eval
            # command says it, not a 40-line traceback through lm-eval and the tasks. Python
            # still ends the process by SIGINT (status 130 in a shell) after this hook
            sys.stderr.write("interrupted\n")
            sys.stderr.flush()
            return
        previous(kind, value, tb)

    hook._adept_eval = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def run_script(main, *args) -> int:
    """Run a benchmark or maintenance script's ``main``, showing its user errors as
    ``adept-eval`` does: a ``UserError`` (a missing corpus, a bad option) is one line
    ``error: <message>`` on stderr and exit status ``USER_ERROR_STATUS``, no traceback
    (``ADEPT_EVAL_DEBUG=1`` shows it). Options are read by ``options.arg_type``, so a bad
    number is argparse's one message (status 2 too). Used as
    ``raise SystemExit(run_script(main))``."""
    try:
        return main(*args)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except user_error_types() as exc:
        if os.environ.get("ADEPT_EVAL_DEBUG"):
            raise
        sys.stderr.write(f"error: {message(exc)}\n")
        sys.stderr.flush()
        return USER_ERROR_STATUS
