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

import inspect
import json
import logging

from dataclasses import asdict, fields
from functools import lru_cache

from . import spec
from .questions import LETTERS, Question, build_questions

log = logging.getLogger(__name__)

DEFAULT_LISTENER = "acoustic"
# --metadata / model_args keys that configure the run itself, never a listener
_RUN_KEYS = {"version", "task", "corpus", "listener", "config_source", "path", "name",
             "on_missing", "command", "command_file", "timeout", "cache_dir", "check_samples",
             "pretrained", "model", "batch_size", "device", "max_batch_size", "pattern",
             "base_url", "api_key_env", "voice", "system_prompt", "send_text", "concurrency",
             "rpm", "max_retries"}
# listener options that may hold secrets are never copied into documents (which are logged)
_SECRET_HINTS = ("key", "token", "secret", "password")


# ----------------------------------------------------------------------------- documents
@lru_cache(maxsize=4)
def _corpus(path: str | None):
    from .corpus import load_corpus

    return load_corpus(path or None)


def listener_options(listener: str, metadata: dict) -> dict:
    """The ``--metadata`` entries the chosen listener's constructor accepts."""
    from .listeners import _REGISTRY, _load_builtin

    _load_builtin()
    cls = _REGISTRY.get(listener)
    if cls is None:
        from .listeners import available

        raise ValueError(f"unknown listener {listener!r}; available: {', '.join(available())}")
    params = set(inspect.signature(cls).parameters) - {"corpus"}
    opts = {k: v for k, v in metadata.items() if k in params and k not in _RUN_KEYS}
    leaked = [k for k in opts if any(h in k.lower() for h in _SECRET_HINTS)]
    if leaked:
        raise ValueError(f"listener option(s) {', '.join(leaked)} look like secrets; they must "
                         "come from environment variables, never from --metadata")
    return opts


def load_questions(task: str, corpus: str | None = None, listener: str = DEFAULT_LISTENER,
                   **metadata):
    """lm-eval ``custom_dataset``: the task's questions as a one-split DatasetDict."""
    import datasets

    from . import __version__

    c = _corpus(str(corpus) if corpus else None)
    opts = listener_options(listener, metadata)
    # build the listener now: a bad option or responses file fails before any audio is made
    _listener(listener, json.dumps(opts, sort_keys=True), str(c.root))
    identity = {"corpus_sha256": c.fingerprint, "adept_eval_version": __version__}
    rows = []
    for q in build_questions(c, task):
        row = asdict(q)
        row["class"] = row.pop("cls")
        row["stimulus_texts"] = [c.get(s).text for s in q.stimuli]
        row["stimulus_references"] = [c.get(s).audio_path for s in q.stimuli]
        row["listener"] = listener
        row["listener_options"] = json.dumps(opts, sort_keys=True)
        row["corpus_root"] = str(c.root)
        row.update(identity)  # which corpus and which adept-eval scored this question
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


def process_results(doc: dict, results: list[str]) -> dict:
    """Score one question. Every metric receives the same per-question record."""
    q = question_of(doc)
    record = {"sub": q.target, "chance": 1.0 / q.n_choices, "correct": 0, "n": 1, "failed": 0,
              "agreement": 0.0,
              "listener": doc["listener"], "correct_answer": q.answer_letter,
              "target": q.target}
    try:
        produced = json.loads(results[0])
        record["system"] = produced.get("system", "")
        samples = {s["id"]: s for s in produced["samples"]}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        samples = {}
        record.update(failed=1, status="failed", detail=f"unreadable system output: {exc}")
        return _metrics(doc, record)
    listener = _listener(doc["listener"], doc["listener_options"], doc["corpus_root"])
    needs_audio = getattr(listener, "needs_audio", True)
    bad = [s for s in q.stimuli if samples.get(s, {}).get("status") != "ok"]
    if needs_audio and bad:
        problems = "; ".join(samples.get(s, {}).get("problem") or f"{s}: not produced"
                             for s in bad)
        record.update(failed=1, status="failed", detail=f"sample(s) unusable: {problems}")
        return _metrics(doc, record)
    try:
        answer = listener.answer(q, {s: samples[s]["path"] for s in q.stimuli if s in samples})
    except Exception as exc:  # one bad question must not end the run
        log.warning("listener %s failed on %s: %s", doc["listener"], q.question_id, exc)
        record.update(failed=1, status="failed", detail=f"listener error: {exc}")
        return _metrics(doc, record)
    chosen = [r.choice for r in answer.responses]
    record.update(correct=answer.correct(q), n=len(answer.responses),
                  failed=int(answer.status != "ok"), status=answer.status,
                  agreement=answer.agreement,
                  answer=[LETTERS[c] if c is not None else None for c in chosen][:50],
                  detail=answer.detail)
    if len(chosen) == 1 and chosen[0] is not None:
        record["answer_subcategory"] = q.choice_subcategories[chosen[0]]
    return _metrics(doc, record)


def _metrics(doc: dict, record: dict) -> dict:
    return {name: record for name in metric_names(doc["task"])}


def metric_names(task: str) -> list[str]:
    t = spec.task(task)
    names = ["acc", "acc_ci_low", "acc_ci_high", "p_chance", "chance", "n", "failed",
             "order_agreement"]
    if t.cls.has_subcategory_scores:
        names += [f"acc_{s}" for s in t.cls.answer_subcategories(t.speaker)]
    return names


# ----------------------------------------------------------------------------- aggregation
def _counts(items, sub: str | None = None) -> tuple[int, int]:
    k = n = 0
    for it in items:
        if sub is None or it["sub"] == sub:
            k += it["correct"]
            n += it["n"]
    return k, n


def accuracy(items) -> float:
    """Correct responses over all responses (the tutorial's recognition accuracy)."""
    k, n = _counts(items)
    return k / n if n else float("nan")


def exact_interval(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of k successes in n (the one used everywhere)."""
    from scipy.stats import binomtest

    if not n:
        return float("nan"), float("nan")
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def _interval(items) -> tuple[float, float]:
    return exact_interval(*_counts(items))


def ci_low(items) -> float:
    return _interval(items)[0]


def ci_high(items) -> float:
    return _interval(items)[1]


def p_chance(items) -> float:
    """Two-sided exact binomial test of the accuracy against chance (1 / choices)."""
    from scipy.stats import binomtest

    k, n = _counts(items)
    if not n:
        return float("nan")
    return float(binomtest(k, n, p=items[0]["chance"], alternative="two-sided").pvalue)


def chance(items) -> float:
    return float(items[0]["chance"]) if items else float("nan")


def n_responses(items) -> int:
    return _counts(items)[1]


def n_failed(items) -> int:
    return sum(it["failed"] for it in items)


def order_agreement(items) -> float:
    """Mean share of presentation orders agreeing with the listener's answer (1.0 for
    listeners that hear every order the same way); failed questions count as 0."""
    return sum(it.get("agreement", 0.0) if not it["failed"] else 0.0 for it in items) / len(items) \
        if items else float("nan")


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


