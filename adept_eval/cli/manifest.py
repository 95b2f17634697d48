"""``adept-eval manifest``: write the stimuli a system must synthesise."""

from __future__ import annotations

from pathlib import Path

from adept_eval.cli.common import console, load_corpus_of
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("manifest", parents=[common],
                       help="write the 195 stimuli a system must synthesise (CSV and JSONL)")
    p.add_argument("-o", "--output", default="adept_manifest",
                   help="output path stem (default: adept_manifest -> .csv and .jsonl)")
    p.set_defaults(func=run)


def run(args) -> int:
    """Write the stimuli a system must synthesise (CSV and JSONL) and say where to put them.

    Args:
        args: the parsed command line (the corpus options and ``output``).

    Returns:
        0.

    Raises:
        CorpusError: the corpus is missing, incomplete or malformed.
    """
    from adept_eval.corpora.manifest import build_manifest, write_manifest

    corpus = load_corpus_of(args)
    entries = build_manifest(corpus)
    paths = write_manifest(entries, Path(args.output))
    console.print(f"{len(entries)} stimuli to synthesise; written to "
                  + " and ".join(lit(p) for p in paths))
    from adept_eval.signal.audio import AUDIO_EXTENSIONS

    console.print(f"Put each sample at <your folder>/<output_path> (as "
                  f"{', '.join(e.lstrip('.') for e in AUDIO_EXTENSIONS)}), then run "
                  "`adept-eval check <your folder>`.")
    return 0
