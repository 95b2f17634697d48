"""Glue between adept-eval and lm-evaluation-harness: documents, scoring and aggregation.

Data flow of one ``lm_eval --tasks adept_...`` run:

1. ``load_questions`` (the tasks' ``custom_dataset``) builds one document per listening-test
   question, with the natural reference of every stimulus and the chosen listener
   (``--metadata listener=...``, default ``acoustic``);
2. the ``--model`` (a ``SpeechSystem``) produces a file per stimulus and answers each document
   with a JSON record of them;
3. ``process_results`` lets the listener answer the question from those files, and returns a
   per-question record that the aggregations below turn into accuracy, per-subcategory
   accuracy, a 95% Clopper-Pearson interval, a binomial test against chance, n and failures.
   A question that could not be answered (missing sample, listener error) is a wrong answer,
   counted in ``failed``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

from . import identity, settings, spec, stats
from .questions import LETTERS, Question, build_questions
from .stats import clopper_pearson as exact_interval  # noqa: F401  (public since 0.1)

log = logging.getLogger(__name__)

DEFAULT_LISTENER = "acoustic"
HEADLINE = "acc"  # the metric whose logged value carries the whole per-question record


# ----------------------------------------------------------------------------- documents
@lru_cache(maxsize=4)
def _corpus(path: str | None):
    from .corpus import load_corpus

    return load_corpus(path or None)


def listener_options(listener: str, metadata: dict) -> dict:
    """The ``--metadata`` entries owned by the chosen listener (``settings.split``'s rule)."""
    return settings.split(metadata, suite="adept", listener=listener).listener


def load_questions(task: str, corpus: str | None = None, listener: str = DEFAULT_LISTENER,
                   **metadata):
    """lm-eval ``custom_dataset``: the task's questions as a one-split DatasetDict."""
    import datasets

    from . import __version__

    opts = listener_options(listener, {"corpus": corpus, "listener": listener, **metadata})
    c = _corpus(str(corpus) if corpus else None)
    options_json = json.dumps(opts, sort_keys=True)
    scorer = _listener(listener, options_json, str(c.root)).identity()
    corpus_id = identity.adept_corpus(c)
    identity.note(task, scorer=scorer, corpus=corpus_id)
    ident = {"corpus_sha256": c.fingerprint, "adept_eval_version": __version__}
    rows = []
    for q in build_questions(c, task):
        row = asdict(q)
        row["class"] = row.pop("cls")
        row["stimulus_texts"] = [c.get(s).text for s in q.stimuli]
        row["stimulus_references"] = [c.get(s).audio_path for s in q.stimuli]
        row["listener"] = listener
        row["listener_options"] = options_json
        row["corpus_root"] = str(c.root)
        row.update(ident)  # which corpus and which adept-eval scored this question
        rows.append(row)
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def question_of(doc: dict) -> Question:
    names = {f.name for f in fields(Question)}
    values = {k: doc[k] for k in names if k in doc}
    values["cls"] = doc["class"]
    for k in ("stimuli", "stimulus_subcategories", "choices", "choice_subcategories"):
        values[k] = tuple(doc[k])
    return Question(**values)


def doc_to_text(doc: dict) -> str:
    q = question_of(doc)
    lines = [f"Sentence: {q.text}", f"Question: {q.question}"]
    if q.design == "multi":
        lines += [f"{LETTERS[i]}. {c}: {s}" for i, (c, s) in enumerate(zip(q.choices, q.stimuli))]
    else:
        lines.append(f"Sample: {q.stimuli[0]}")
        lines += [f"{LETTERS[i]}. {c}" for i, c in enumerate(q.choices)]
    return "\n".join(lines) + "\nAnswer:"


def doc_to_target(doc: dict) -> str:
    q = question_of(doc)
    return f"{q.answer_letter} ({q.target})"


# ----------------------------------------------------------------------------- scoring
@lru_cache(maxsize=8)
def _listener(name: str, options_json: str, corpus_root: str):
    from .listeners import get_listener

    return get_listener(name, corpus=_corpus(corpus_root), **json.loads(options_json))


@dataclass(frozen=True)
class QuestionRecord:
    """What one question scored: the one record ``process_results`` returns, lm-eval's logged
    samples hold (once, under ``acc``) and the Hub's details table is made of."""

    question_id: str
    sub: str  # the target subcategory (per-subcategory accuracy)
    target: str
    correct_answer: str
    chance: float
    listener: str
    correct: int = 0  # responses naming the right answer
    n: int = 1  # responses (1 for a machine listener, one per participant for humans)
    failed: int = 0  # 1 when the question could not be answered (counted as wrong)
    status: str = "ok"
    detail: str = ""
    agreement: float = 0.0
    answer: tuple[str | None, ...] = ()
    answer_subcategory: str | None = None
    system: str = ""

    def to_json(self) -> dict:
        out = asdict(self)
        out["answer"] = list(self.answer)
        return out

    @classmethod
    def from_json(cls, data: dict) -> QuestionRecord:
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["answer"] = tuple(values.get("answer") or ())
        return cls(**values)


class SameRecord:
    """What the other metrics of a question receive: the record itself for aggregation, but
    logged by lm-eval as a short pointer, so ``--log_samples`` holds one copy per question."""

    __slots__ = ("record", "headline")

    def __init__(self, record, headline: str = HEADLINE):
        self.record, self.headline = record, headline

    def __str__(self) -> str:
        return f"(see {self.headline})"

    __repr__ = __str__


def record_of(item):
    """The per-question record behind an aggregation item (a dict or a ``SameRecord``)."""
    return item.record if isinstance(item, SameRecord) else item


def process_results(doc: dict, results: list[str]) -> dict:
    """Score one question into a ``QuestionRecord``."""
    q = question_of(doc)
    base = dict(question_id=q.question_id, sub=q.target, target=q.target,
                correct_answer=q.answer_letter, chance=1.0 / q.n_choices,
                listener=doc["listener"])
    try:
        produced = json.loads(results[0])
        base["system"] = str(produced.get("system", ""))
        samples = {s["id"]: s for s in produced["samples"]}
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        return _metrics(doc, QuestionRecord(**base, failed=1, status="failed",
                                            detail=f"unreadable system output: {exc}"))
    listener = _listener(doc["listener"], doc["listener_options"], doc["corpus_root"])
    needs_audio = getattr(listener, "needs_audio", True)
    bad = [s for s in q.stimuli if samples.get(s, {}).get("status") != "ok"]
    if needs_audio and bad:
        problems = "; ".join(samples.get(s, {}).get("problem") or f"{s}: not produced"
                             for s in bad)
        return _metrics(doc, QuestionRecord(**base, failed=1, status="failed",
                                            detail=f"sample(s) unusable: {problems}"))
    try:
        answer = listener.answer(q, {s: samples[s]["path"] for s in q.stimuli if s in samples})
    except Exception as exc:  # one bad question must not end the run
        log.warning("listener %s failed on %s: %s", doc["listener"], q.question_id, exc)
        return _metrics(doc, QuestionRecord(**base, failed=1, status="failed",
                                            detail=f"listener error: {exc}"))
    chosen = [r.choice for r in answer.responses]
    sub = q.choice_subcategories[chosen[0]] if len(chosen) == 1 and chosen[0] is not None \
        else None
    return _metrics(doc, QuestionRecord(
        **base, correct=answer.correct(q), n=len(answer.responses),
        failed=int(answer.status != "ok"), status=answer.status, agreement=answer.agreement,
        answer=tuple(LETTERS[c] if c is not None else None for c in chosen)[:50],
        detail=answer.detail, answer_subcategory=sub))


def _metrics(doc: dict, record: QuestionRecord) -> dict:
    data = record.to_json()
    same = SameRecord(data)
    return {name: data if name == HEADLINE else same for name in metric_names(doc["task"])}


def metric_names(task: str) -> list[str]:
    """The task's metrics, headline first (the order lm-eval prints them in)."""
    t = spec.task(task)
    names = ["acc", "acc_ci_low", "acc_ci_high", "p_chance", "chance", "n", "failed",
             "order_agreement"]
    if t.cls.has_subcategory_scores:
        names += [f"acc_{s}" for s in t.cls.answer_subcategories(t.speaker)]
    return names


# ----------------------------------------------------------------------------- aggregation
def _counts(items, sub: str | None = None) -> tuple[int, int]:
    k = n = 0
    for it in map(record_of, items):
        if sub is None or it["sub"] == sub:
            k += it["correct"]
            n += it["n"]
    return k, n


def accuracy(items) -> float:
    """Correct responses over all responses (the tutorial's recognition accuracy)."""
    k, n = _counts(items)
    return k / n if n else float("nan")


def ci_low(items) -> float:
    return stats.clopper_pearson(*_counts(items))[0]


def ci_high(items) -> float:
    return stats.clopper_pearson(*_counts(items))[1]


def p_chance(items) -> float:
    """Two-sided exact binomial test of the accuracy against chance (1 / choices)."""
    k, n = _counts(items)
    return stats.binomial_p(k, n, record_of(items[0])["chance"]) if n else float("nan")


def chance(items) -> float:
    return float(record_of(items[0])["chance"]) if items else float("nan")


def n_responses(items) -> int:
    return _counts(items)[1]


def n_failed(items) -> int:
    return sum(record_of(it)["failed"] for it in items)


def order_agreement(items) -> float:
    """Mean share of presentation orders agreeing with the listener's answer (1.0 for
    listeners that hear every order the same way); failed questions count as 0."""
    recs = [record_of(it) for it in items]
    return sum(r.get("agreement", 0.0) if not r["failed"] else 0.0 for r in recs) / len(recs) \
        if recs else float("nan")


def _subcategory_accuracy(sub: str):
    def agg(items) -> float:
        k, n = _counts(items, sub)
        return k / n if n else float("nan")

    agg.__name__ = f"acc_{sub}"
    return agg


SUBCATEGORY_ACCURACY = {
    f"acc_{s}": _subcategory_accuracy(s)
    for c in spec.CLASSES.values() if c.has_subcategory_scores
    for s in c.answer_subcategories("male")
}
