"""``adept-eval check``: validate a system's samples folder against the manifest."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from adept_eval.cli.common import console, err_console, load_corpus_of, print_table
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("check", parents=[common], help="validate a system's samples folder")
    p.add_argument("folder")
    p.add_argument("--strict", action="store_true", help="fail on warnings too")
    p.add_argument("--all", action="store_true", help="list every problem")
    p.set_defaults(func=run)


def _is_folder(folder: Path) -> bool:
    """Whether ``folder`` is a folder; if not, say why on stderr (a file named instead, or
    nothing there)."""
    if folder.is_file():  # the manifest or one sample named instead of the folder, say
        err_console.print(f"[red]{lit(folder)}: a file, not a folder; check takes the folder "
                          "of a system's samples, each at <folder>/<output_path> as `adept-eval "
                          "manifest` lists them[/red]", highlight=False)
        return False
    if not folder.is_dir():
        err_console.print(f"[red]{lit(folder)}: no such folder[/red]")
        return False
    return True


def _layout_usable(folder: Path, result) -> bool:
    """Whether the folder holds audio laid out as the manifest says; if not, one message on
    stderr instead of a "missing" row per stimulus (and an "extra" row per file)."""
    if not result.candidates:
        from adept_eval.signal.audio import AUDIO_EXTENSIONS

        err_console.print(f"[red]{lit(folder)}: contains no audio files (looked for "
                          f"{', '.join(AUDIO_EXTENSIONS)}, in subfolders too); each sample goes "
                          f"at {lit(folder)}/<output_path>, as `adept-eval manifest` lists "
                          f"them[/red]", highlight=False)
        return False
    if result.layout_hint:
        err_console.print(f"[red]{lit(result.layout_hint)}[/red]", highlight=False)
        return False
    return True


def _print_problems(folder: Path, problems: list, show_all: bool) -> None:
    """The problems table: the first 40 unless ``show_all``, then how many more there are."""
    table = Table(title=f"Problems in {lit(folder)}")
    table.add_column("severity")
    table.add_column("kind")
    table.add_column("file / problem", overflow="fold")
    shown = problems if show_all or len(problems) <= 40 else problems[:40]
    for problem in shown:
        colour = "red" if problem.severity == "error" else "yellow"
        table.add_row(f"[{colour}]{problem.severity}[/{colour}]", problem.kind,
                      lit(problem.message))
    print_table(table)
    if len(shown) < len(problems):
        console.print(f"... {len(problems) - len(shown)} more (use --all)")


def run(args) -> int:
    """Check a system's samples folder against the manifest and list every problem.

    Args:
        args: the parsed command line (the corpus options, ``folder``, ``strict``, ``all``).

    Returns:
        0 when the samples are usable; 1 with errors (or warnings under ``--strict``), no
        audio or a layout the manifest does not describe; 2 when the folder is not one.
    """
    from adept_eval.corpora.manifest import check_folder

    folder = Path(args.folder)
    if not _is_folder(folder):
        return 2
    corpus = load_corpus_of(args)
    result = check_folder(corpus, folder, progress=not args.quiet)
    if not _layout_usable(folder, result):
        return 1
    if result.problems:
        _print_problems(folder, result.problems, args.all)
    n_bad = len(result.bad_stimuli())
    console.print(f"{result.expected - n_bad}/{result.expected} samples usable; "
                  f"{len(result.errors)} errors, {len(result.warnings)} warnings")
    if result.errors or (args.strict and result.warnings):
        return 1
    return 0
