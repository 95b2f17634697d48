"""Glue between adept-eval and lm-evaluation-harness: documents, scoring and aggregation.

Data flow of one ``lm_eval --tasks adept_...`` run:

1. ``load_questions`` (the tasks' ``custom_dataset``) builds one document per listening-test
   question, with the natural reference of every stimulus and the chosen listener
   (``--metadata listener=...``, default ``acoustic``);
2. the ``--model`` (a ``SpeechSystem``) produces a file per stimulus and answers each document
   with a JSON record of them;
3. the tasks' filter ``score_task`` sees the whole task at once: it pools every question's
   samples into one map of the system's samples (stimulus id -> file), so a listener finds a
   sentence's other renditions whatever folder layout the model writes, asks the listener
   ``answer_many`` (concurrent for the audio-LLM listener, a progress bar for the others that
   do real work) and, with the acoustic listener, adds the graded prosody-transfer figures of
   every stimulus (``graded``) on the features and comparisons the listener already made;
4. ``process_results`` turns the filter's result into a per-question record that the
   aggregations below turn into accuracy, per-subcategory accuracy, a 95% interval and a test
   against chance clustered by sentence (``recognition``), n and failures, and the graded
   figures' means with a 95% cluster-robust t interval over sentences
   (``stats.cluster_t_interval``). A question that could not be answered (missing sample,
   listener error) is a wrong answer, counted in ``failed``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache

from adept_eval import identity
from adept_eval.harness import settings
from adept_eval.corpora import spec
from adept_eval.scoring import stats
from adept_eval.corpora.questions import LETTERS, Question, build_questions
from adept_eval.scoring.metric_items import SameRecord, record_of
from adept_eval.scoring.recognition import counts, recognition
from adept_eval.suites import ADEPT

log = logging.getLogger(__name__)

DEFAULT_LISTENER = "acoustic"


# ----------------------------------------------------------------------------- documents
_BY_ROOT: dict = {}  # corpora already opened, by their root folder


@lru_cache(maxsize=4)
def _corpus(path: str | None):
    """The corpus at ``path`` (None: the default), opened once per process; a task's documents
    name it by its root folder, which finds the same object rather than opening (and hashing)
    the corpus a second time."""
    from adept_eval.corpora.corpus import load_corpus

    if path and path in _BY_ROOT:
        return _BY_ROOT[path]
    corpus = load_corpus(path or None)
    _BY_ROOT[str(corpus.root)] = corpus
    return corpus


def load_questions(task: str, corpus: str | None = None, listener: str = DEFAULT_LISTENER,
                   **metadata):
    """lm-eval ``custom_dataset``: the task's questions as a one-split DatasetDict."""
    import datasets

    from adept_eval import __version__

    # the --metadata entries owned by the chosen listener (an unknown or secret key is an error)
    opts = settings.split({"corpus": corpus, "listener": listener, **metadata}, suite="adept",
                          listener=listener).listener
    c = _corpus(str(corpus) if corpus else None)
    options_json = json.dumps(opts, sort_keys=True)
    scorer = listener_for(listener, options_json, str(c.root)).identity()
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
def listener_for(name: str, options_json: str, corpus_root: str):
    """The listener a task's documents name (``listener``, ``listener_options`` as JSON,
    ``corpus_root``), made once per process: its feature cache and memoised comparisons
    are shared by every task of a run."""
    from adept_eval.scoring.listeners import get_listener

    return get_listener(name, corpus=_corpus(corpus_root), **json.loads(options_json))


def clear_caches() -> None:
    """Forget the corpora and listeners this process has made (a test or benchmark that
    changes ``ADEPT_EVAL_CORPUS`` or the features on disk between runs needs fresh ones)."""
    _corpus.cache_clear()
    _BY_ROOT.clear()
    listener_for.cache_clear()


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
    # graded figures of the question's stimuli (graded.StimulusScores.to_dict(), one per
    # stimulus; empty when the listener gives none)
    graded: tuple[dict, ...] = ()
    # who answered and whether rightly, when several people did (the human listener): the
    # interval and test against chance then cluster by participant and by sentence
    responses: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict:
        out = asdict(self)
        out["answer"] = list(self.answer)
        out["graded"] = [dict(g) for g in self.graded]
        out["responses"] = [list(r) for r in self.responses]
        return out

    @classmethod
    def from_json(cls, data: dict) -> QuestionRecord:
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["answer"] = tuple(values.get("answer") or ())
        values["graded"] = tuple(values.get("graded") or ())
        values["responses"] = tuple(tuple(r) for r in values.get("responses") or ())
        return cls(**values)


def _produced(response) -> tuple[str, dict]:
    """(system name, stimulus id -> sample entry) of one document's system output; raises
    ValueError/KeyError/TypeError/... when it is unreadable."""
    text = response[0] if isinstance(response, (list, tuple)) else response
    produced = json.loads(text)
    return str(produced.get("system", "")), {s["id"]: s for s in produced["samples"]}


def score_task(resps, docs) -> list[str]:
    """lm-eval filter: score every question of a task at once; one JSON ``QuestionRecord`` per
    document, in order.

    The system's samples of all questions are pooled into one map (stimulus id -> file) that
    every question is asked with, so a listener can hear a sentence's other renditions
    whatever folder layout the model uses (a content-addressed cache included). A sample the
    system reported failed (missing, refused by the audio check) is in the map with no file
    (None), so a listener knows it was refused rather than not given, and does not go looking
    for it on disk (the acoustic listener then judges that sentence's good samples alone). A
    question whose output is unreadable or whose samples are unusable fails without being
    asked; a listener error fails that question only, never the run.
    """
    if not docs:
        return []
    first = docs[0]
    listener = listener_for(first["listener"], first["listener_options"], first["corpus_root"])
    needs_audio = getattr(listener, "needs_audio", True)
    questions = [question_of(d) for d in docs]
    records: list[QuestionRecord | None] = [None] * len(docs)
    bases, outputs = [], []
    pool: dict[str, str] = {}
    for i, (q, doc, resp) in enumerate(zip(questions, docs, resps)):
        base = dict(question_id=q.question_id, sub=q.target, target=q.target,
                    correct_answer=q.answer_letter, chance=1.0 / q.n_choices,
                    listener=doc["listener"])
        bases.append(base)
        try:
            base["system"], samples = _produced(resp)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            records[i] = QuestionRecord(**base, failed=1, status="failed",
                                        detail=f"unreadable system output: {exc}")
            outputs.append({})
            continue
        outputs.append(samples)
        for sid, entry in samples.items():
            if isinstance(entry, dict) and entry.get("status") == "ok" and entry.get("path"):
                if not pool.get(sid):
                    pool[sid] = str(entry["path"])
            else:  # refused (missing, failed its check): marked, so no listener hears it
                pool.setdefault(sid, None)

    asked, where = [], []
    for i, (q, samples) in enumerate(zip(questions, outputs)):
        if records[i] is not None:
            continue
        bad = [s for s in q.stimuli if not pool.get(s)]
        if needs_audio and bad:
            problems = "; ".join(samples.get(s, {}).get("problem") or f"{s}: not produced"
                                 for s in bad)
            records[i] = QuestionRecord(**bases[i], failed=1, status="failed",
                                        detail=f"sample(s) unusable: {problems}")
            continue
        asked.append((q, pool))
        where.append(i)

    for i, answer in zip(where, _ask(listener, asked)):
        records[i] = _answered(questions[i], bases[i], answer)

    if _graded_on(listener):
        stimuli = [s for q in questions for s in q.stimuli]
        try:
            scores = listener.graded_scores(pool, stimuli)
        except Exception as exc:  # the figures are extra: never lose the answers over them
            log.warning("graded figures failed on %s: %s", first.get("task"), exc)
            scores = {}
        from adept_eval.scoring import graded

        for i, q in enumerate(questions):
            records[i] = replace(records[i], graded=tuple(
                (scores.get(s) or graded.failed(s, "not scored")).to_dict() for s in q.stimuli))
    return [json.dumps(r.to_json(), ensure_ascii=False) for r in records]


def samples_produced(requests, produced: dict) -> None:
    """A run's samples exist (``SpeechSystem.generate_until``, before any task is scored):
    tell each listener the run uses (``expect``, where it has one) every file it will hear -
    each question's samples and natural references, in the order lm-eval will score them - so
    it can start its work on them in the background. Best effort and silent: a run scores the
    same whether or not this happens."""
    try:
        wanted: dict[tuple, dict] = {}
        for req in requests:
            doc = getattr(req, "doc", None)
            if not isinstance(doc, dict) or "listener_options" not in doc:
                continue
            files = wanted.setdefault(
                (doc["listener"], doc["listener_options"], doc["corpus_root"]), {})
            for sid in doc["stimuli"]:
                p = produced.get(sid)
                if p is not None and p.status == "ok" and p.path:
                    files[str(p.path)] = None
            files.update(dict.fromkeys(str(r) for r in doc["stimulus_references"] if r))
        if wanted:
            # The aggregations' interval needs scipy.stats (~0.5 s to import), and so does a
            # feature worker (scipy.signal imports it): imported once, here, before a worker
            # is forked, it is imported once for both.
            import scipy.stats  # noqa: F401
        for (name, options, root), files in wanted.items():
            expect = getattr(listener_for(name, options, root), "expect", None)
            if expect is not None:
                expect(list(files))
    except Exception as exc:  # noqa: BLE001 - only a head start is lost
        log.debug("could not hand the run's samples to the listener early: %s", exc)


def samples_abandoned() -> None:
    """The run stops before scoring (``SpeechSystem.generate_until`` raised): drop the
    background work ``samples_produced`` started, so the process exits at once."""
    from adept_eval.signal.prosody import stop_background

    try:
        stop_background()
    except Exception as exc:  # noqa: BLE001 - exit then waits for the queue, no more
        log.debug("could not cancel the background feature extraction: %s", exc)


def _graded_on(listener) -> bool:
    return bool(getattr(listener, "graded", False)) and hasattr(listener, "graded_scores")


def _ask(listener, asked: list) -> list:
    """The listener's answers, one per question; when ``answer_many`` itself breaks, each
    question is asked alone so one bad question costs only itself."""
    from adept_eval.scoring.listeners import Answer, Response

    if not asked:
        return []
    try:
        answers = list(listener.answer_many(asked))
        if len(answers) == len(asked):
            return answers
        log.warning("listener %s gave %d answers to %d questions; asking one at a time",
                    listener.name, len(answers), len(asked))
    except Exception as exc:
        log.warning("listener %s failed on a batch (%s); asking one at a time", listener.name, exc)
    out = []
    for q, samples in asked:
        try:
            out.append(listener.answer(q, samples))
        except Exception as exc:  # one bad question must not end the run
            log.warning("listener %s failed on %s: %s", listener.name, q.question_id, exc)
            detail = f"listener error: {exc}"
            out.append(Answer((Response(None, detail=detail),), "failed", detail=detail))
    return out


def _answered(q: Question, base: dict, answer) -> QuestionRecord:
    chosen = [r.choice for r in answer.responses]
    sub = q.choice_subcategories[chosen[0]] if len(chosen) == 1 and chosen[0] is not None \
        else None
    return QuestionRecord(
        **base, correct=answer.correct(q), n=len(answer.responses),
        failed=int(answer.status != "ok"), status=answer.status, agreement=answer.agreement,
        answer=tuple(LETTERS[c] if c is not None else None for c in chosen)[:50],
        detail=answer.detail, answer_subcategory=sub,
        responses=tuple((r.participant, int(r.choice == q.answer)) for r in answer.responses
                        if r.participant))


def process_results(doc: dict, results: list[str]) -> dict:
    """The filter's ``QuestionRecord`` of one question, as lm-eval's per-metric values. A raw
    system output (the filter not applied, e.g. a task YAML of an older version) is scored
    here on its own."""
    try:
        data = json.loads(results[0])
        if isinstance(data, dict) and "question_id" in data and "correct_answer" in data:
            return _metrics(doc, QuestionRecord.from_json(data))
    except (ValueError, TypeError, IndexError):
        pass
    text = results[0] if results else ""
    return _metrics(doc, QuestionRecord.from_json(json.loads(score_task([[text]], [doc])[0])))


def _metrics(doc: dict, record: QuestionRecord) -> dict:
    data = record.to_json()
    same = SameRecord(data, ADEPT.headline)
    return {name: data if name == ADEPT.headline else same for name in metric_names(doc["task"])}


def metric_names(task: str) -> list[str]:
    """The task's metrics, headline first (the order lm-eval prints them in): ADEPT's metric
    table (``suites.ADEPT_METRICS``); every graded figure beyond the few there is in the logged
    samples and in ``adept-eval report``."""
    return [m.name for m in ADEPT.task_metrics(task)]


# ----------------------------------------------------------------------------- aggregation
def accuracy(items) -> float:
    """Correct responses over all responses (the tutorial's recognition accuracy)."""
    k, n = counts(items)
    return k / n if n else float("nan")


def ci_low(items) -> float:
    return recognition(items).ci_low


def ci_high(items) -> float:
    return recognition(items).ci_high


def p_chance(items) -> float:
    """Two-sided test of the accuracy against chance (1 / choices), the one the interval
    inverts: for a machine listener the binomial test on the effective sample size of the
    questions clustered by sentence (``stats.clustered_proportion``), for people on the
    two-way (participants, sentences) variance (``stats.two_way_proportion``)."""
    return recognition(items).p_chance


def chance(items) -> float:
    return float(record_of(items[0])["chance"]) if items else float("nan")


def n_responses(items) -> int:
    return counts(items)[1]


def n_failed(items) -> int:
    return sum(record_of(it)["failed"] for it in items)


def order_agreement(items) -> float:
    """Mean share of presentation orders agreeing with the listener's answer, over the
    questions it answered (1.0 for listeners that hear every order the same way; NaN when none
    was answered). A failed question has no answer for orders to agree with: it is counted in
    ``failed`` and scored wrong in ``acc`` already. Counted here as 0 (as it was), missing files
    read as position sensitivity: an order-blind listener showed 0.80, and ``adept-eval
    report`` an ``agree`` column. Its n is the questions answered: the task's questions less
    ``failed``."""
    answered = [r for r in map(record_of, items) if not r["failed"]]
    return sum(float(r.get("agreement", 0.0)) for r in answered) / len(answered) \
        if answered else float("nan")


def _subcategory_accuracy(sub: str):
    def agg(items) -> float:
        k, n = counts(items, sub)
        return k / n if n else float("nan")

    agg.__name__ = f"acc_{sub}"
    return agg


SUBCATEGORY_ACCURACY = {
    f"acc_{s}": _subcategory_accuracy(s)
    for c in spec.CLASSES.values() if c.has_subcategory_scores
    for s in c.answer_subcategories("male")
}


# ----------------------------------------------------------------------------- graded figures
def graded_records(items) -> list:
    """The ``graded.StimulusScores`` behind aggregation items (every question's stimuli;
    ``graded.aggregate`` counts a stimulus shared by several questions once)."""
    from adept_eval.scoring import graded

    return [graded.StimulusScores.from_dict(g)
            for it in map(record_of, items) for g in it.get("graded") or ()]


def graded_summary(items) -> dict:
    """Every graded figure's ``graded.Summary`` over the items' stimuli: mean, 95% cluster-robust
    t interval over sentences (G - 1 df), n and n_failed (empty when no figures were given).

    lm-eval asks once per graded metric of a task (five), each time with the same questions'
    records: the summary (the same every time) is computed once for them."""
    from adept_eval.scoring import graded

    recs = [record_of(it) for it in items]
    if _LAST_SUMMARY and _LAST_SUMMARY[0] == recs:  # the same records as the last call
        return _LAST_SUMMARY[1]
    records = graded_records(items)
    out = graded.aggregate(records, clusters=graded.adept_sentence_clusters(records)) \
        if records else {}
    # one task's metrics are aggregated one after another: the last records (copies, compared
    # by content) and their summary are all there is to remember
    _LAST_SUMMARY[:] = [[dict(r) for r in recs], out]
    return out


_LAST_SUMMARY: list = []


def _graded_part(field_name: str, figure: str = "prosody_distance"):
    def agg(items) -> float:
        s = graded_summary(items).get(figure)
        return float(getattr(s, field_name)) if s is not None else float("nan")

    agg.__name__ = f"{figure}_{field_name}"
    return agg


prosody_distance = _graded_part("mean")
prosody_distance_ci_low = _graded_part("ci_low")
prosody_distance_ci_high = _graded_part("ci_high")


def graded_n(items) -> int:
    """Stimuli with a prosody distance."""
    s = graded_summary(items).get("prosody_distance")
    return int(s.n) if s is not None else 0


def graded_failed(items) -> int:
    """Stimuli whose graded figures could not be computed (a counted failure, never a score)."""
    s = graded_summary(items).get("prosody_distance")
    return int(s.n_failed) if s is not None else 0


def graded_undefined(items) -> int:
    """Usable stimuli whose prosody distance is undefined (a sentence whose other renditions
    are missing or unusable cannot be compared): with ``graded_n`` and ``graded_failed``, every
    stimulus graded is counted once."""
    s = graded_summary(items).get("prosody_distance")
    return int(s.n_undefined) if s is not None else 0
