"""``adept-eval prepare``: fetch and verify ADEPT, and print a summary of its listening tests."""

from __future__ import annotations

from rich import box
from rich.table import Table

from adept_eval.cli.common import SYNTHETIC_NOTE, console, load_corpus_of, print_table
from adept_eval.corpora import spec
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("prepare", parents=[common], help="fetch and verify ADEPT; print a summary")
    p.add_argument("--refetch", action="store_true", help="download ADEPT again and extract it "
                   "afresh (when the downloaded ADEPT.zip in the cache was damaged after it was "
                   "verified; a damaged extracted copy is extracted again by itself)")
    p.set_defaults(func=run)


def run(args) -> int:
    """Fetch (or refetch) and verify ADEPT, and print its tasks: stimuli, questions, choices
    and chance each, and the corpus's source and fingerprint.

    Args:
        args: the parsed command line (the corpus options and ``refetch``).

    Returns:
        0.

    Raises:
        CorpusError: the corpus is missing, incomplete or malformed.
    """
    from adept_eval.identity import is_synthetic

    if args.refetch:
        from adept_eval.corpora.corpus import refetch_corpus

        refetch_corpus(args.corpus, download=not args.no_download, progress=not args.quiet)
    corpus = load_corpus_of(args)
    synthetic = is_synthetic(corpus)
    table = Table(title=f"ADEPT: {len(corpus)} recordings, 12 listening tests"
                  + (f" - {SYNTHETIC_NOTE}" if synthetic else ""), box=box.SIMPLE_HEAD)
    table.add_column("task", no_wrap=True, min_width=35)
    for col in ("stimuli", "questions", "choices", "chance"):
        table.add_column(col, justify="right")
    from adept_eval.corpora.questions import build_questions

    tot_rec = tot_q = 0
    for name, t in spec.TASKS.items():
        qs = build_questions(corpus, name)
        n_rec = sum(1 for r in corpus.recordings if r.cls == t.cls.name and r.speaker == t.speaker)
        tot_rec, tot_q = tot_rec + n_rec, tot_q + len(qs)
        table.add_row(name, str(n_rec), str(len(qs)), str(qs[0].n_choices),
                      f"{1 / qs[0].n_choices:.3f}")
    table.add_row("total", str(tot_rec), str(tot_q), "", "", end_section=True)
    print_table(table)
    console.print(f"corpus: {lit(corpus.root)}\nsource: {lit(corpus.source)}\n"
                  f"sha256: {corpus.fingerprint}")
    if synthetic:
        console.print(f"[red]{SYNTHETIC_NOTE}[/red] (adept-eval make-synthetic's corpus, for "
                      "trying the pipeline only)")
    return 0
