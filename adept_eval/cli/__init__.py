"""``adept-eval``: prepare the corpus, list what to synthesise, check a system's samples; read,
compare, publish and rank lm-eval runs; run listening tests with people.

Each command is one module of this package with its ``add_parser(sub, common)`` and
``run(args)``; ``build_parser`` assembles them in the order ``--help`` lists them.
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager, nullcontext

from rich.markup import escape

from adept_eval import __version__
from adept_eval.cli import (
    agreement,
    ceiling,
    check,
    compare,
    judge_agreement,
    leaderboard,
    listening_test,
    make_synthetic,
    manifest,
    prepare,
    publish,
    questions,
    report,
)
from adept_eval.cli.common import err_console

#: the commands, in the order ``adept-eval --help`` lists them
COMMANDS = (prepare, manifest, check, questions, make_synthetic, ceiling, report, compare,
            publish, leaderboard, judge_agreement, agreement, listening_test)


def build_parser() -> argparse.ArgumentParser:
    """The ``adept-eval`` parser: global options, then every command's subparser (``COMMANDS``),
    each also taking ``--debug`` after its own arguments.

    Returns:
        The parser; a parsed command carries its module's ``run`` as ``func``.
    """
    # not __doc__: its reST quotes printed as ``adept-eval``, and it named only the first steps
    parser = argparse.ArgumentParser(prog="adept-eval", description=(
        "ADEPT prosody-transfer evaluation for lm-evaluation-harness: prepare the corpus, list "
        "and check what to synthesise; read (report), compare, publish and rank (leaderboard) "
        "lm_eval runs of ADEPT and VStyle; run listening tests with people."))
    parser.add_argument("--version", action="version", version=f"adept-eval {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks for errors (for reporting bugs)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--corpus", help="ADEPT.zip or extracted folder (default: "
                        "$ADEPT_EVAL_CORPUS, the cache, or a download from Zenodo)")
    common.add_argument("--no-download", action="store_true",
                        help="fail instead of downloading ADEPT")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = parser.add_subparsers(dest="command", required=True)

    for command in COMMANDS:
        command.add_parser(sub, common)
    for p in sub.choices.values():  # `adept-eval check x --debug` works as well as before it
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show Python tracebacks for errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. A user's mistake (bad file, option, corpus, network) is one message
    naming the file or option and exit status 2; ``--debug`` shows the traceback instead. An
    unexpected failure (a bug) is one message and exit status 3, asking for ``--debug``."""
    from adept_eval.errors import USER_ERROR_STATUS, UserError, message

    parser = build_parser()
    args = parser.parse_args(argv)
    with no_progress_bars() if getattr(args, "quiet", False) else nullcontext():
        if args.debug:
            return args.func(args)
        try:
            return args.func(args)
        except KeyboardInterrupt:
            err_console.print("[red]interrupted[/red]", highlight=False)
            return 130
        except (UserError, OSError, ValueError, RuntimeError) as exc:
            err_console.print(f"[red]error:[/red] {escape(message(exc))}", highlight=False)
            return USER_ERROR_STATUS
        except Exception as exc:  # a bug: still no traceback unless asked for
            err_console.print(f"[red]error:[/red] unexpected {type(exc).__name__}: "
                              f"{escape(message(exc))}\n"
                              f"This is a bug in adept-eval; rerun with --debug for the "
                              f"traceback and please report it.", highlight=False)
            return 3


@contextmanager
def no_progress_bars():
    """``-q``'s "no progress bars", for every bar the command draws: adept-eval's own and those
    of lm-eval (``ceiling`` runs its evaluator, whose bars take no switch), datasets and
    huggingface_hub. Passing ``progress=False`` down reached only some of ours, and
    ``TQDM_DISABLE`` cannot be set here: tqdm reads it once, when it is imported, which is
    before any command runs. So every tqdm bar started inside the block is made disabled where
    they all start (``tqdm.std.tqdm.__init__``, which tqdm.auto's and the libraries' subclasses
    call), whatever ``disable`` its caller passed; the class is restored afterwards."""
    from tqdm import std

    original = std.tqdm.__dict__["__init__"]  # a function, or tqdm's envwrap partialmethod

    def disabled(self, *args, **kwargs):
        kwargs["disable"] = True
        original.__get__(self, type(self))(*args, **kwargs)

    std.tqdm.__init__ = disabled
    try:
        yield
    finally:
        std.tqdm.__init__ = original

