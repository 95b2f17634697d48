"""``adept-eval publish``: push one run to a Hub results dataset and its scores to a model repo."""

from __future__ import annotations

from adept_eval.cli.common import console
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("publish", help="push an lm-eval run (results, per-question details, "
                       "optionally audio) to a Hub dataset, and scores onto your model repo")
    p.add_argument("results", help="lm-eval results_*.json, or the --output_path folder "
                   "(the newest run in it by its timestamp)")
    p.add_argument("--run", help="choose a run in the folder: part of its file name or timestamp")
    p.add_argument("--repo", required=True, help="results dataset, e.g. my-org/adept-results")
    p.add_argument("--no-details", action="store_true", help="skip per-question parquet files")
    p.add_argument("--audio", action="store_true", help="also upload the system's audio")
    p.add_argument("--model-repo", help="the system's model repo, to write eval results to")
    p.add_argument("--benchmark-dataset", help="the Hub dataset ADEPT scores refer to "
                   "(your copy from scripts/publish_corpus.py)")
    p.add_argument("--allow-partial", action="store_true",
                   help="with --model-repo: write the scores of a run made with lm-eval's "
                   "--limit (refused without this), each labelled partial with the questions "
                   "its task answered")
    p.add_argument("--private", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    """Publish one run and print where it went and what became of the model repo's card.

    Args:
        args: the parsed command line (``results``, ``run``, ``repo`` and the publishing
            options).

    Returns:
        0.

    Raises:
        PublishError: the run cannot be read or published, or the Hub refuses it.
    """
    from adept_eval.results.publish import publish

    report = publish(args.results, args.repo, samples=not args.no_details, audio=args.audio,
                     model_repo=args.model_repo, benchmark_dataset=args.benchmark_dataset,
                     private=args.private, run_id=args.run, allow_partial=args.allow_partial)
    if report.chosen:
        console.print(f"run: {lit(report.chosen)}")
    console.print(f"pushed {report.files} files to {lit(report.repo_id)}/"
                  f"{lit(report.path_in_repo)} (prepared in {lit(report.staged)})")
    if report.model_repo:
        colour = "green" if report.model_repo_written else "yellow"
        console.print(f"[{colour}]{lit(report.note)}[/{colour}]")
    return 0
