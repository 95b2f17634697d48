"""``adept-eval questions``: every listening-test question, for a human evaluation."""

from __future__ import annotations

from pathlib import Path

from adept_eval.cli.common import comma_list, console, load_corpus_of
from adept_eval.corpora import spec
from adept_eval.corpora.questions import DEFAULT_BLIND_SALT
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("questions", parents=[common],
                       help="write every listening-test question (ids, stimuli order, choices, "
                       "answer) for running a human evaluation")
    p.add_argument("-o", "--output", default="adept_questions.csv", help=".csv or .jsonl")
    p.add_argument("--tasks", nargs="+", action="extend", metavar="TASK",
                   help="only these tasks (space- or comma-separated)")
    p.add_argument("--salt", default=DEFAULT_BLIND_SALT,
                   help="salt of the blinded ids (default: a fixed public one; pass your own, "
                   "kept private, if participants could recompute ids from ADEPT's file names)")
    p.set_defaults(func=run)


def run(args) -> int:
    """The listening tests as a plan for a human evaluation (ids the `human` listener reads).

    Beside the real ids (which name class, subcategory and sentence, so they must not reach
    participants), every question and stimulus gets a blinded id to use as page and audio file
    names on the platform; ``blinded_id`` recomputes them from the real ids and the salt."""
    import csv
    import json

    from adept_eval.corpora.questions import (
        LETTERS,
        all_questions,
        blinded_id,
        blinded_question_id,
        unblinding,
    )

    corpus = load_corpus_of(args)
    wanted = comma_list(args.tasks)
    unknown = sorted(set(wanted) - set(spec.TASKS))
    if unknown:
        raise ValueError(f"--tasks: unknown task(s) {', '.join(unknown)} (the twelve "
                         "adept_{class}_{speaker} tasks)")
    rows, chosen = [], []
    for task, qs in all_questions(corpus).items():
        if wanted and task not in wanted:
            continue
        chosen += qs
        for q in qs:
            rows.append({"question_id": q.question_id,
                         "blinded_question_id": blinded_question_id(q.question_id, args.salt),
                         "task": task, "question": q.question,
                         "stimuli": " | ".join(q.stimuli),
                         "blinded_stimuli": " | ".join(blinded_id(s, args.salt) for s in q.stimuli),
                         "choices": " | ".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(q.choices)),
                         "answer": q.answer_letter, "target": q.target})
    unblinding(chosen, args.salt)  # refuses a collision among the blinded ids
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".jsonl":
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                       encoding="utf-8")
    else:
        with open(out, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    console.print(f"{len(rows)} questions written to {lit(out)}")
    return 0
