"""Every error class of the package, and how a user's error is shown: one message.

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


# ------------------------------------------------------------------------------------- the base
class UserError(Exception):
    """Marks an exception whose message alone tells the user what to fix."""


# ------------------------------------------------------------------------- options and settings
class OptionError(UserError, ValueError):
    """An option value that cannot be read (shown as one message naming the option)."""


class JudgeOptionError(OptionError):
    """A judge setting whose value cannot be used.

    Its ``field``, ``value`` and ``problem`` let a caller name the option as its user spelled
    it (``--metadata judge_concurrency=``).

    Args:
        field: The ``JudgeConfig`` field.
        value: The value given.
        problem: What is wrong with it.
    """

    def __init__(self, field: str, value, problem: str):
        super().__init__(f"{field}={value!r}: {problem}")
        self.field, self.value, self.problem = field, value, problem


class UnsupportedOptionError(UserError, ValueError):
    """An lm-eval option that a run of adept-eval's models or tasks cannot honour (its result
    would be wrong, or lm-eval would stop with a traceback): refused, naming the option."""


class TasksChoiceError(UserError, ValueError):
    """A --tasks value naming adept-eval's tasks that cannot run: a name no task or group has
    (a typo: named, with the nearest names), or tasks and groups that share a task."""


class SettingsError(UserError, ValueError):
    """A --model_args / --metadata key that no component owns, or one holding a secret."""


# --------------------------------------------------------------------------- signal and corpora
class AudioError(UserError, ValueError):
    """Audio that cannot be used; the message names the file and the problem."""


class CorpusError(UserError, RuntimeError):
    """The corpus is missing, incomplete or malformed; the message lists every problem."""


class DownloadError(UserError, RuntimeError):
    """The file could not be fetched or did not verify; the message says which and why."""


class OfflineError(DownloadError):
    """Zenodo cannot be reached at all (no network); the message ends with how to go on
    offline, in the words of the front end that opens the corpus.

    Attributes:
        problem: what failed, without the hint, so a front end can give its own hint.
    """

    def __init__(self, problem: str, hint: str):
        super().__init__(f"{problem}\n{hint}")
        self.problem = problem


class VStyleError(UserError, ValueError):
    """The VStyle data cannot be found, fetched or read (shown as one message)."""


# ----------------------------------------------------------------- the LLM client and the judge
class BadInput(ValueError):
    """Audio (or a transcript) an item cannot be judged with; ``status`` says how it counts."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


class BackendSetupError(UserError, ValueError):
    """A backend option or key the user must fix (shown as one message, never a traceback)."""


class MissingKey(BackendSetupError):
    """The environment variable named for a key is not set (or holds no usable key:
    ``problem``); ``variable`` is its name, so a caller can say which of its options named it
    (``judge_api_key_env``, ...)."""

    def __init__(self, variable: str, option: str = "api_key_env",
                 problem: str = "that environment variable is not set"):
        self.variable, self.problem = variable, problem
        super().__init__(f"{option}={variable}: {problem}")


class BackendError(RuntimeError):
    """The endpoint gave no usable answer (after the client's own retries); the message says
    why (e.g. "APIConnectionError: Connection error.", "AuthenticationError (HTTP 401)")."""


class LLMUnavailable(UserError, RuntimeError):
    """The server of an audio LLM does not answer, or refuses us: the run stops before any
    work, with one message naming the option that sets the server and its URL."""


class PromptError(UserError, ValueError):
    """A judge prompt that cannot be used (shown as one message naming it)."""


# --------------------------------------------------------- listeners, models and lm-eval's glue
class ResponsesError(UserError, ValueError):
    """A human listener's responses file that cannot be scored: the message names the file and
    lists every problem."""


class SystemSetupError(UserError, RuntimeError):
    """A system under test cannot run at all (bad ``--model_args``, an unusable folder, no
    usable sample): raised before anything is scored."""


class MetricListError(UserError, ValueError):
    """A task YAML's ``metric_list`` that the suite's harness cannot report, with the file and
    why."""


class ResultsNotSaved(UserError, OSError):
    """lm-eval could not write a run's results: the one message, naming the path."""


# -------------------------------------------------------------------------------------- results
class PublishError(RuntimeError):
    """A run that cannot be read, ranked or published (a missing or damaged results file, a run
    without its identity, a Hub refusal): the message names the file, option or repo."""


class CompareError(UserError, ValueError):
    """Runs that cannot be compared (different corpora, scorers or task sets, one run named
    twice, samples not logged): the message names the runs and the field that differs."""


class AgreementError(UserError, ValueError):
    """Runs whose answers cannot be set against people's (no people's run, a machine run of a
    system or tasks the people did not hear, no question in common, samples not logged): the
    message names the file and the problem."""


# --------------------------------------------------------------------------- the listening test
class DesignError(UserError, ValueError):
    """A listening test that cannot be built or loaded (an unknown task, missing samples, an
    unreadable design): the message says why."""


class DamagedStore(UserError, ValueError):
    """A listening test's responses database that cannot be read: one message naming the file."""


class ForeignStore(UserError, ValueError):
    """An SQLite file that is not a listening test's responses database: one message naming it."""


class ForeignResponses(UserError, ValueError):
    """A responses database holding another test's answers: one message naming it."""


class ExportError(UserError, ValueError):
    """An output path the exported responses cannot be written to: one message naming it."""


class PlanError(UserError, ValueError):
    """Bad options or an unusable pilot for ``listening-test plan``, with the reason."""


class MirrorError(UserError, RuntimeError):
    """The dataset responses are mirrored to cannot be used (public, or not reachable)."""


class FolderNotWritable(UserError, OSError):
    """A test folder (or its responses database) that the server cannot write."""


class AddressUnavailable(UserError):
    """A host and port that the listening-test server cannot listen on."""


class Refused(ValueError):
    """A participant's request that the listening-test server does not accept.

    Not a ``UserError``: it never reaches a command line; the web app answers it as JSON.

    Attributes:
        status: The HTTP status to answer with.
    """

    def __init__(self, message: str, status: int = 400):
        """Hold the reason and its HTTP status.

        Args:
            message: What the participant's page shows.
            status: The HTTP status to answer with (400 unless given).
        """
        super().__init__(message)
        self.status = status


class BodyTooLarge(Exception):
    """A request body over the server's limit: raised from the body reader, answered 413."""


class BodyTooSlow(Exception):
    """A request body not in within the server's deadline: answered 408, connection closed."""


# --------------------------------------------------------------------------------- showing them
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
    if not isinstance(exc, UserError) or os.environ.get("ADEPT_EVAL_DEBUG"):
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
    except UserError as exc:
        if os.environ.get("ADEPT_EVAL_DEBUG"):
            raise
        sys.stderr.write(f"error: {message(exc)}\n")
        sys.stderr.flush()
        return USER_ERROR_STATUS
