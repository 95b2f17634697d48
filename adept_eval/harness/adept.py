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
from functools import cache

from adept_eval import identity
from adept_eval.harness import run_context, settings
from adept_eval.corpora import spec
from adept_eval.corpora.questions import LETTERS, Question, build_questions
from adept_eval.scoring.listeners import Listener
from adept_eval.scoring.metric_items import SameRecord, record_of
from adept_eval.scoring.recognition import counts, recognition
from adept_eval.suites import ADEPT

log = logging.getLogger(__name__)

DEFAULT_LISTENER = "acoustic"
LM_EVAL_CORPUS_OPTION = "--metadata corpus=PATH"  # lm_eval has no --corpus
SYNTHETIC_WARNING = "SYNTHETIC corpus, not ADEPT results"


# ----------------------------------------------------------------------------- documents
def corpus_at(path: str | None):
    """The corpus at ``path`` (None: the default), opened once per run; a task's documents name
    it by its root folder, which finds the same object rather than opening (and hashing) the
    corpus a second time.

    Args:
        path: the corpus' location as given (``--metadata corpus=``), or its root folder.

    Returns:
        The ``Corpus``.

    Raises:
        CorpusError: the corpus is missing, incomplete or malformed.
    """
    context = run_context.current()
    corpus = context.once("corpus", path or "", lambda: _opened(path or None))
    return context.once("corpus", str(corpus.root), lambda: corpus)


def _opened(path: str | None):
    """Open the corpus for an ``lm_eval`` run: the offline hint names ``lm_eval``'s way to
    give a corpus, and a synthetic corpus is announced on stderr, where ``lm_eval`` logs.

    Raises:
        CorpusError: the corpus is missing, incomplete or malformed.
        DownloadError: Zenodo's copy cannot be fetched (``OfflineError``: no network).
    """
    from adept_eval.corpora.corpus import load_corpus
    from adept_eval.errors import OfflineError
    from adept_eval.corpora.zenodo import offline_hint

    try:
        corpus = load_corpus(path)
    except OfflineError as exc:
        raise OfflineError(exc.problem, offline_hint(LM_EVAL_CORPUS_OPTION)) from None
    if identity.is_synthetic(corpus):
        log.warning("%s: %s is adept-eval make-synthetic's stand-in corpus, for trying the "
                    "pipeline only; its scores say nothing about ADEPT", SYNTHETIC_WARNING,
                    corpus.source)
    return corpus


def load_questions(task: str, corpus: str | None = None, listener: str = DEFAULT_LISTENER,
                   **metadata):
    """lm-eval ``custom_dataset``: the task's questions as a one-split DatasetDict.

    The run's share of work - the options routed, the corpus opened and identified, the
    listener made - is done by the first task of a run and found by the others in the run's
    context.

    Args:
        task: the ADEPT task (set by the task's YAML).
        corpus: ``--metadata corpus=`` (None: the default corpus).
        listener: ``--metadata listener=``.
        **metadata: the rest of lm-eval's merged ``--model_args`` and ``--metadata``.

    Returns:
        ``datasets.DatasetDict`` with one ``test`` split, one row per question.

    Raises:
        SettingsError: an option nobody owns, a secret, or an unknown listener.
        CorpusError: the corpus cannot be used.
    """
    import datasets

    from adept_eval import __version__
    from adept_eval.models.base import observe_samples

    context = run_context.current()
    options = {"corpus": corpus, "listener": listener, **metadata}
    # the --metadata entries owned by the chosen listener (an unknown or secret key is an error)
    share = context.once(
        "settings", ("adept", listener, settings.routing_key(options)),
        lambda: settings.split(options, suite="adept", listener=listener,
                               model_keys=context.model_keys, model=context.model))
    opened = corpus_at(str(corpus) if corpus else None)
    options_json = json.dumps(share.listener, sort_keys=True)
    scorer = listener_for(listener, options_json, str(opened.root)).identity()
    corpus_id = context.once("corpus identity", str(opened.root),
                             lambda: identity.adept_corpus(opened))
    context.note_identity(task, scorer=scorer, corpus=corpus_id)
    observe_samples(SAMPLES_TO_LISTENER)
    fixed = {"listener": listener, "listener_options": options_json,
             "corpus_root": str(opened.root),
             # which corpus and which adept-eval scored this question
             "corpus_sha256": opened.fingerprint, "adept_eval_version": __version__}
    rows = []
    for question in build_questions(opened, task):
        row = asdict(question)
        row["class"] = row.pop("cls")
        row["stimulus_texts"] = [opened.get(s).text for s in question.stimuli]
        row["stimulus_references"] = [opened.get(s).audio_path for s in question.stimuli]
        row.update(fixed)
        rows.append(row)
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def question_of(doc: dict) -> Question:
    """The ADEPT question an lm-eval document holds.

    Args:
        doc: the lm-eval document (a row of the task's dataset).

    Returns:
        The ``Question``.
    """
    names = {f.name for f in fields(Question)}
    values = {k: doc[k] for k in names if k in doc}
    values["cls"] = doc["class"]
    for k in ("stimuli", "stimulus_subcategories", "choices", "choice_subcategories"):
        values[k] = tuple(doc[k])
    return Question(**values)


def doc_to_text(doc: dict) -> str:
    """lm-eval's prompt text of a document: the sentence, the question and its choices.

    Args:
        doc: the lm-eval document.

    Returns:
        The text.
    """
    question = question_of(doc)
    lines = [f"Sentence: {question.text}", f"Question: {question.question}"]
    if question.design == "multi":
        lines += [f"{LETTERS[i]}. {choice}: {stimulus}"
                  for i, (choice, stimulus) in enumerate(zip(question.choices, question.stimuli))]
    else:
        lines.append(f"Sample: {question.stimuli[0]}")
        lines += [f"{LETTERS[i]}. {choice}" for i, choice in enumerate(question.choices)]
    return "\n".join(lines) + "\nAnswer:"


def doc_to_target(doc: dict) -> str:
    """lm-eval's target of a document: the correct answer's letter and target.

    Args:
        doc: the lm-eval document.

    Returns:
        For example ``"A (focus)"``.
    """
    question = question_of(doc)
    return f"{question.answer_letter} ({question.target})"


# ----------------------------------------------------------------------------- scoring
def listener_for(name: str, options_json: str, corpus_root: str) -> Listener:
    """The listener a task's documents name, made once per run: its feature cache and memoised
    comparisons are shared by every task of the run.

    Args:
        name: the listener's registered name (the documents' ``listener``).
        options_json: its options as JSON (``listener_options``).
        corpus_root: the corpus' root folder (``corpus_root``).

    Returns:
        The ``Listener``.
    """
    from adept_eval.scoring.listeners import get_listener

    return run_context.current().once(
        "listener", (name, options_json, corpus_root),
        lambda: get_listener(name, corpus=corpus_at(corpus_root), **json.loads(options_json)))


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
        """The record as JSON-able data (tuples as lists).

        Returns:
            The record's fields.
        """
        out = asdict(self)
        out["answer"] = list(self.answer)
        out["graded"] = [dict(g) for g in self.graded]
        out["responses"] = [list(r) for r in self.responses]
        return out

    @classmethod
    def from_json(cls, data: dict) -> QuestionRecord:
        """A record from ``to_json``'s data; keys that are not fields are ignored.

        Args:
            data: the JSON data.

        Returns:
            The record.
        """
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


def _base_record(question, doc) -> dict:
    """The fields every ``QuestionRecord`` of one document starts from.

    Args:
        question: the document's question (``question_of``).
        doc: the lm-eval document.

    Returns:
        Keyword arguments for ``QuestionRecord`` (``system`` is added once the output is read).
    """
    return dict(question_id=question.question_id, sub=question.target, target=question.target,
                correct_answer=question.answer_letter, chance=1.0 / question.n_choices,
                listener=doc["listener"])


def _add_to_pool(pool: dict, samples: dict) -> None:
    """Add one document's samples to the shared pool (stimulus id -> file or None).

    A usable sample's file wins over an earlier refusal of the same stimulus; a refused one
    (missing, failed its check) is marked None so no listener hears it or looks for it.

    Args:
        pool: the pool, updated in place.
        samples: stimulus id -> sample entry of one document's output.
    """
    for sid, entry in samples.items():
        if isinstance(entry, dict) and entry.get("status") == "ok" and entry.get("path"):
            if not pool.get(sid):
                pool[sid] = str(entry["path"])
        else:
            pool.setdefault(sid, None)


def _read_outputs(questions, docs, resps, records) -> tuple[list, list, dict]:
    """Read every document's system output and pool its samples.

    Args:
        questions: each document's question.
        docs: the lm-eval documents.
        resps: each document's response (the system's JSON output).
        records: one slot per document, updated in place: an unreadable output's slot gets
            its failed record.

    Returns:
        ``(bases, outputs, pool)``: each document's base record fields, each document's
        samples (empty when unreadable), and the pooled map stimulus id -> file or None.
    """
    bases, outputs = [], []
    pool: dict[str, str] = {}
    for i, (question, doc, resp) in enumerate(zip(questions, docs, resps)):
        base = _base_record(question, doc)
        bases.append(base)
        try:
            base["system"], samples = _produced(resp)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            records[i] = QuestionRecord(**base, failed=1, status="failed",
                                        detail=f"unreadable system output: {exc}")
            outputs.append({})
            continue
        outputs.append(samples)
        _add_to_pool(pool, samples)
    return bases, outputs, pool


def _unusable_detail(question, samples: dict, pool: dict) -> str | None:
    """Why a question cannot be asked of a listener that needs audio, or None if it can.

    Args:
        question: the question.
        samples: stimulus id -> sample entry of the question's own output.
        pool: the pooled map stimulus id -> file or None.

    Returns:
        The failure detail naming each unusable sample, or None when all are usable.
    """
    bad = [s for s in question.stimuli if not pool.get(s)]
    if not bad:
        return None
    problems = "; ".join(samples.get(s, {}).get("problem") or f"{s}: not produced"
                         for s in bad)
    return f"sample(s) unusable: {problems}"


def _add_graded(listener, questions, records, pool, task) -> None:
    """Attach the listener's graded figures to every record, in place.

    The figures are extra: when the listener fails to give them, every stimulus is marked
    "not scored" and the answers stay.

    Args:
        listener: the task's listener.
        questions: each document's question.
        records: each document's record, replaced in place by one with ``graded`` set.
        pool: the pooled map stimulus id -> file or None.
        task: the task name, for the warning.
    """
    stimuli = [s for q in questions for s in q.stimuli]
    try:
        scores = listener.graded_scores(pool, stimuli)
    except Exception as exc:  # the figures are extra: never lose the answers over them
        log.warning("graded figures failed on %s: %s", task, exc)
        scores = {}
    from adept_eval.scoring import graded

    for i, question in enumerate(questions):
        records[i] = replace(records[i], graded=tuple(
            (scores.get(s) or graded.failed(s, "not scored")).to_dict()
            for s in question.stimuli))


def score_task(resps, docs) -> list[str]:
    """lm-eval filter: score every question of a task at once.

    The system's samples of all questions are pooled into one map (stimulus id -> file) that
    every question is asked with, so a listener can hear a sentence's other renditions
    whatever folder layout the model uses (a content-addressed cache included). A sample the
    system reported failed (missing, refused by the audio check) is in the map with no file
    (None), so a listener knows it was refused rather than not given, and does not go looking
    for it on disk (the acoustic listener then judges that sentence's good samples alone). A
    question whose output is unreadable or whose samples are unusable fails without being
    asked; a listener error fails that question only, never the run.

    Args:
        resps: each document's response (the system's JSON output).
        docs: the task's lm-eval documents; the first names the listener and its options.

    Returns:
        One JSON ``QuestionRecord`` per document, in order.
    """
    if not docs:
        return []
    first = docs[0]
    listener = listener_for(first["listener"], first["listener_options"], first["corpus_root"])
    questions = [question_of(d) for d in docs]
    records: list[QuestionRecord | None] = [None] * len(docs)
    bases, outputs, pool = _read_outputs(questions, docs, resps, records)

    asked, where = [], []
    for i, (question, samples) in enumerate(zip(questions, outputs)):
        if records[i] is not None:
            continue
        detail = _unusable_detail(question, samples, pool) if listener.needs_audio else None
        if detail is not None:
            records[i] = QuestionRecord(**bases[i], failed=1, status="failed", detail=detail)
            continue
        asked.append((question, pool))
        where.append(i)

    for i, answer in zip(where, _ask(listener, asked)):
        records[i] = _answered(questions[i], bases[i], answer, listener.per_participant)

    if listener.gives_graded_figures():
        _add_graded(listener, questions, records, pool, first.get("task"))
    return [json.dumps(r.to_json(), ensure_ascii=False) for r in records]


class SamplesToListener:
    """The ADEPT harness as a ``models.base.SampleObserver``: a run's samples go to the
    listener that will hear them as soon as they exist."""

    def samples_produced(self, requests, produced: dict) -> None:
        """Tell each listener the run uses (``Listener.expect``) every file it will hear - each
        question's samples and natural references, in the order lm-eval will score them - so
        it can start its work on them in the background. Best effort and silent: a run scores
        the same whether or not this happens.

        Args:
            requests: lm-eval's requests (each with its document as ``doc``).
            produced: stimulus id -> the ``models.base.Produced`` record of its sample.
        """
        try:
            wanted = _files_by_listener(requests, produced)
            if wanted:
                # The aggregations' interval needs scipy.stats (~0.5 s to import), and so does
                # a feature worker (scipy.signal imports it): imported once, here, before a
                # worker is forked, it is imported once for both.
                import scipy.stats  # noqa: F401
            for (name, options, root), files in wanted.items():
                listener_for(name, options, root).expect(list(files))
        except Exception as exc:  # noqa: BLE001 - only a head start is lost
            log.debug("could not hand the run's samples to the listener early: %s", exc)

    def samples_abandoned(self) -> None:
        """The run stops before scoring: drop the background work ``samples_produced``
        started, so the process exits at once."""
        from adept_eval.signal.prosody import stop_background

        try:
            stop_background()
        except Exception as exc:  # noqa: BLE001 - exit then waits for the queue, no more
            log.debug("could not cancel the background feature extraction: %s", exc)


#: the one observer the harness registers with the models (``models.base.observe_samples``)
SAMPLES_TO_LISTENER = SamplesToListener()


def _files_by_listener(requests, produced: dict) -> dict[tuple, dict]:
    """The files each listener of the run will hear, in scoring order.

    Args:
        requests: lm-eval's requests; those whose document is not an ADEPT question are
            passed over.
        produced: stimulus id -> ``Produced``.

    Returns:
        (listener, options as JSON, corpus root) -> {file: None}, an ordered set of the usable
        samples and natural references of its questions.
    """
    wanted: dict[tuple, dict] = {}
    for request in requests:
        doc = getattr(request, "doc", None)
        if not isinstance(doc, dict) or "listener_options" not in doc:
            continue
        files = wanted.setdefault(
            (doc["listener"], doc["listener_options"], doc["corpus_root"]), {})
        for stimulus in doc["stimuli"]:
            sample = produced.get(stimulus)
            if sample is not None and sample.status == "ok" and sample.path:
                files[str(sample.path)] = None
        files.update(dict.fromkeys(str(ref) for ref in doc["stimulus_references"] if ref))
    return wanted


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


def _answered(q: Question, base: dict, answer, per_participant: bool) -> QuestionRecord:
    """The record of a question the listener answered.

    Args:
        q: the question.
        base: the record's fields known before asking (ids, target, chance, system).
        answer: the listener's ``Answer``.
        per_participant: whether the answer holds people's responses, each kept with who
            gave it (the interval then clusters by participant too).

    Returns:
        The ``QuestionRecord``.
    """
    chosen = [r.choice for r in answer.responses]
    sub = q.choice_subcategories[chosen[0]] if len(chosen) == 1 and chosen[0] is not None \
        else None
    return QuestionRecord(
        **base, correct=answer.correct(q), n=len(answer.responses),
        failed=int(answer.status != "ok"), status=answer.status, agreement=answer.agreement,
        # every participant's choice (``agreement`` sets a listener's against each); a
        # machine listener's answer list is capped
        answer=tuple(LETTERS[c] if c is not None else None
                     for c in chosen)[:None if per_participant else 50],
        detail=answer.detail, answer_subcategory=sub,
        responses=tuple((r.participant, int(r.choice == q.answer)) for r in answer.responses
                        if per_participant and r.participant))


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


@cache
def metric_names(task: str) -> tuple[str, ...]:
    """The task's metrics, headline first (the order lm-eval prints them in): ADEPT's metric
    table (``suites.ADEPT_METRICS``), read once per task and process (every question's
    ``process_results`` asks); every graded figure beyond the few there is in the logged
    samples and in ``adept-eval report``.

    Args:
        task: an ADEPT task name.

    Returns:
        The metric names.
    """
    return tuple(m.name for m in ADEPT.task_metrics(task))


# ----------------------------------------------------------------------------- aggregation
def accuracy(items) -> float:
    """Correct responses over all responses (the tutorial's recognition accuracy)."""
    k, n = counts(items)
    return k / n if n else float("nan")


def ci_low(items) -> float:
    """lm-eval aggregation: the lower end of the recognition accuracy's interval.

    Args:
        items: the task's per-question records.

    Returns:
        The lower bound.
    """
    return recognition(items).ci_low


def ci_high(items) -> float:
    """lm-eval aggregation: the upper end of the recognition accuracy's interval.

    Args:
        items: the task's per-question records.

    Returns:
        The upper bound.
    """
    return recognition(items).ci_high


def p_chance(items) -> float:
    """Two-sided test of the accuracy against chance (1 / choices), the one the interval
    inverts: for a machine listener the binomial test on the effective sample size of the
    questions clustered by sentence (``stats.clustered_proportion``), for people on the
    two-way (participants, sentences) variance (``stats.two_way_proportion``)."""
    return recognition(items).p_chance


def chance(items) -> float:
    """lm-eval aggregation: the task's chance accuracy.

    Args:
        items: the task's per-question records.

    Returns:
        The chance level, NaN with no records.
    """
    return float(record_of(items[0])["chance"]) if items else float("nan")


def n_responses(items) -> int:
    """lm-eval aggregation: how many responses the accuracy counts.

    Args:
        items: the task's per-question records.

    Returns:
        The number of responses.
    """
    return counts(items)[1]


def n_failed(items) -> int:
    """lm-eval aggregation: how many questions failed (scored wrong, not asked).

    Args:
        items: the task's per-question records.

    Returns:
        The number of failed questions.
    """
    return sum(record_of(it)["failed"] for it in items)


def order_agreement(items) -> float:
    """Mean share of presentation orders agreeing with the listener's answer, over the
    questions it answered (1.0 for listeners that hear every order the same way; NaN when none
    was answered). A failed question has no answer for orders to agree with: it is counted in
    ``failed`` and scored wrong in ``acc`` already, and left out here, so that missing files do
    not read as position sensitivity. Its n is the questions answered: the task's questions
    less ``failed``.

    Args:
        items: lm-eval's aggregation items.

    Returns:
        The mean agreement, or NaN.
    """
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
    records: the summary is computed once per run for records of the same content.

    Args:
        items: lm-eval's aggregation items (question records, or ``SameRecord`` pointers).

    Returns:
        figure name -> ``graded.Summary``.
    """
    from adept_eval.scoring import graded

    def summary() -> dict:
        records = graded_records(items)
        return graded.aggregate(records, clusters=graded.adept_sentence_clusters(records)) \
            if records else {}

    # the records, by content: the same questions' records give the summary computed for them
    content = json.dumps([record_of(item) for item in items], sort_keys=True, default=repr)
    return run_context.current().once("graded summary", content, summary)


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
