"""Glue between VStyle, lm-evaluation-harness and the speech judge.

1. ``load_vstyle`` (the tasks' ``custom_dataset``): one document per spoken instruction of one
   VStyle category, with the judge settings from ``--metadata judge_...=``;
2. the ``--model`` answers each instruction with a speech file (``audio-dir``, ``openai-speech``...);
3. the ``speech_judge`` filter judges *all* of a task's responses at once (concurrently, cached),
   so a long run is bounded by the judge's throughput, not by one request at a time;
4. ``process_results`` turns each verdict into a per-instruction record; the aggregations give
   the category score with VStyle's weighting, per-subcategory means, the plain mean, an interval,
   n and failures. A response that could not be judged is a failure, never a score.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from adept_eval import identity
from adept_eval.harness import run_context, settings
from adept_eval.scoring import stats
from adept_eval.errors import OptionError
from adept_eval.judge import JudgeConfig, JudgeItem, judge
from adept_eval.errors import JudgeOptionError
from adept_eval.judge.runner import SERVER_OPTIONS, judge_option_names
from adept_eval.scoring.metric_items import SameRecord, record_of
from adept_eval.suites import VSTYLE
from adept_eval.corpora.vstyle import (
    CATEGORIES,
    load_records,
    locate,
    normalise_ability,
    subcategory_weights,
)

HEADLINE = VSTYLE.headline  # the metric whose logged value carries the whole record

# --metadata key -> JudgeConfig field. Keys are never secrets: a key is named by the environment
# variable that holds it (judge_api_key_env).
JUDGE_KEYS = judge_option_names()


def _prompts_table(value) -> dict:
    """``judge_prompts``: a folder of ``<category>.txt`` (VStyle's layout), a JSON object
    (category -> template file or text) given inline or in a ``.json`` file, or a dict."""
    if not isinstance(value, str):
        return dict(value)
    text = value.strip()
    if not text.startswith("{"):
        path = Path(text).expanduser()
        if path.is_dir():  # VStyle's layout: one <category>.txt per category
            table = {p.stem: str(p.resolve()) for p in sorted(path.glob("*.txt"))}
            if not table:
                raise OptionError(f"judge_prompts={value}: the folder holds no "
                                        "<category>.txt prompt files")
            return table
        if not path.is_file():
            raise OptionError(
                f"judge_prompts={value}: no such folder or file (give a folder of "
                "<category>.txt prompts, VStyle's layout, or a JSON object of category -> "
                "prompt file)")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise OptionError(f"judge_prompts={value}: cannot be read ({exc})") from None
    try:
        table = json.loads(text)
    except ValueError as exc:
        raise OptionError(f"judge_prompts={value}: not a folder of prompts nor a JSON "
                                f"object ({exc})") from None
    if not isinstance(table, dict):
        raise OptionError(f"judge_prompts={value}: the JSON is not an object of "
                                "category -> prompt file")
    return table


def _is_prompt_folder(value) -> bool:
    """Whether a ``judge_prompts`` value names a folder (rather than holding a JSON object).

    Args:
        value: the ``judge_prompts`` value as given.

    Returns:
        True when it is a string naming an existing folder.
    """
    return isinstance(value, str) and not value.strip().startswith("{") \
        and Path(value.strip()).expanduser().is_dir()


def _category_key(key, value, what: str, folder: bool) -> str:
    """The judge's lookup key (``category`` or ``category/subcategory``) of one prompt name.

    Args:
        key: the prompt's name (a file stem or a JSON key).
        value: the ``judge_prompts`` value, for the message.
        what: how the message names the prompt.
        folder: whether the prompts come from a folder (the message then omits the
            ``category/subcategory`` hint, which only a JSON key can spell).

    Returns:
        The lookup key.

    Raises:
        OptionError: the name matches no VStyle category (or subcategory).
    """
    cat, sub = normalise_ability(str(key))
    if cat not in CATEGORIES or (sub and sub not in CATEGORIES[cat]):
        raise OptionError(
            f"judge_prompts={value}: {what} matches no VStyle category"
            f"{' and subcategory' if sub else ''}; name it after one of "
            f"{', '.join(CATEGORIES)} (VStyle's spellings acoustic_properties and "
            "role_playing are read as acoustic_attributes and role_play)"
            + ("" if folder else ", or category/subcategory for one subcategory"))
    return f"{cat}/{sub}" if sub else cat


def _by_category(table: dict, value) -> dict:
    """``judge_prompts`` keyed the way the judge looks prompts up: by a VStyle category, or
    ``category/subcategory``, read with the rule that reads VStyle's abilities
    (``normalise_ability``: ``acoustic_properties.txt`` -> acoustic_attributes, ``role_playing``
    -> role_play). A prompt whose name matches none is refused, naming it: the judge would
    otherwise never use it and judge that category with the built-in prompt, without a word.

    Args:
        table: prompt name -> prompt file.
        value: the ``judge_prompts`` value as given, for messages.

    Returns:
        Lookup key -> prompt file.

    Raises:
        OptionError: a name matches no category, or two names are the same category.
    """
    folder = _is_prompt_folder(value)
    out, named = {}, {}
    for key, prompt in table.items():
        what = f"prompt file {Path(str(prompt)).name}" if folder else f"prompt key {key!r}"
        key = _category_key(key, value, what, folder)
        if key in out:
            raise OptionError(f"judge_prompts={value}: {named[key]} and {what} are both the "
                              f"prompt for {key}; keep one")
        out[key], named[key] = prompt, what
    return out


def _resolve_prompts(cfg: dict) -> None:
    """Read the ``prompts`` and ``prompt`` settings into the form ``JudgeConfig`` takes, in place.

    Args:
        cfg: JudgeConfig field -> value; ``prompts`` becomes sorted (lookup key, file) pairs and
            an existing ``prompt`` file its absolute path.

    Raises:
        OptionError: ``judge_prompts`` cannot be read or names no VStyle category.
    """
    prompts = cfg.get("prompts")
    if prompts:
        prompts = _prompts_table(prompts)
    if prompts:
        prompts = _by_category(prompts, cfg["prompts"])
        cfg["prompts"] = sorted((str(k), str(v)) for k, v in dict(prompts).items())
    if cfg.get("prompt") and Path(str(cfg["prompt"])).expanduser().is_file():
        cfg["prompt"] = str(Path(str(cfg["prompt"])).expanduser().resolve())


def judge_config(judge_share: dict) -> dict:
    """JudgeConfig keyword arguments (JSON-able) from the run's judge settings.

    Args:
        judge_share: the ``judge`` share of ``settings.split``, which has already refused an
            unknown ``judge_*`` key.

    Returns:
        JudgeConfig field -> value, as read (``judge_concurrency="8"`` -> 8).

    Raises:
        OptionError: a value cannot be used (one message naming its ``judge_*`` option).
    """
    cfg = {JUDGE_KEYS[key]: value for key, value in judge_share.items()}
    option = {field: key for key, field in JUDGE_KEYS.items()}
    _resolve_prompts(cfg)
    # fail now, not after the model has run: bad values, unreadable or placeholder-less prompts
    try:
        config = JudgeConfig(**{k: tuple(map(tuple, v)) if k == "prompts" else v
                                for k, v in cfg.items()})
    except JudgeOptionError as exc:
        raise OptionError(f"--metadata {option.get(exc.field, exc.field)}={exc.value!r}: "
                                f"{exc.problem}") from None
    config.prompt_set()
    # the values as read (judge_concurrency="8" -> 8), JSON-able
    return {k: getattr(config, k) if k != "prompts" else v for k, v in cfg.items()}


def check_judge_server(cfg: dict) -> None:
    """Stop before any work if the judge's server does not answer: otherwise every answer would
    be produced, then fail to be judged. Each server is asked once per run.

    Args:
        cfg: the judge settings (``judge_config``).

    Raises:
        LLMUnavailable: the server does not answer (one message naming judge_base_url and the
            URL).
    """
    from adept_eval.judge.runner import JudgeRunner
    from adept_eval.llm import check_server

    config = _config_from({"judge": json.dumps(cfg)})
    connection = config.connection(JudgeRunner.model_of(config))
    run_context.current().once("judge server", connection,
                               lambda: check_server(connection, **SERVER_OPTIONS))


def _config_from(doc: dict) -> JudgeConfig:
    raw = json.loads(doc["judge"])
    if "prompts" in raw:
        raw["prompts"] = tuple(tuple(p) for p in raw["prompts"])
    return JudgeConfig(**raw)


def load_vstyle(category: str, language: str = "en", vstyle_dir: str | None = None, **metadata):
    """lm-eval ``custom_dataset``: one VStyle category's instructions as a one-split DatasetDict.

    The run's share of work - the options routed, the judge settings read and its server
    asked, the records read and identified - is done by the first task of a run and found by
    the others in the run's context.

    Args:
        category: the VStyle category (set by the task's YAML).
        language: "en" or "zh" (set by the task's YAML).
        vstyle_dir: ``--metadata vstyle_dir=`` (None: the default folder).
        **metadata: the rest of lm-eval's merged ``--model_args`` and ``--metadata``.

    Returns:
        ``datasets.DatasetDict`` with one ``test`` split, one row per instruction.

    Raises:
        ValueError: an unknown category, or one without records.
        SettingsError: an option nobody owns, or a secret.
        OptionError: a judge setting that cannot be used.
        LLMUnavailable: the judge's server does not answer.
    """
    import datasets

    if category not in CATEGORIES:
        raise ValueError(f"unknown VStyle category {category!r}; known: {', '.join(CATEGORIES)}")
    context = run_context.current()
    options = {"language": language, "vstyle_dir": vstyle_dir, **metadata}
    share = context.once(
        "settings", ("vstyle", None, settings.routing_key(options)),
        lambda: settings.split(options, suite="vstyle", model_keys=context.model_keys,
                               model=context.model))
    cfg = judge_config(share.judge)
    given_dir = str(vstyle_dir) if vstyle_dir else None
    folder = locate(language, given_dir)
    check_judge_server(cfg)
    context.note_identity(
        f"vstyle_{language}_{category}",
        scorer=context.once("judge identity", json.dumps(cfg, sort_keys=True),
                            lambda: judge_identity(cfg)),
        corpus=context.once("vstyle corpus", (str(folder), language),
                            lambda: _identified(folder, language)))
    weights = subcategory_weights()
    rows = []
    records = context.once("vstyle records", (language, given_dir),
                           lambda: load_records(locate(language, given_dir)))
    for rec in records:
        if rec.category != category:
            continue
        rows.append({
            "record_id": rec.record_id, "instruct_id": rec.instruct_id, "text": rec.text,
            "ability": rec.ability, "category": rec.category, "subcategory": rec.subcategory,
            "instruction_type": f"{rec.category}/{rec.subcategory}", "language": language,
            "instruction_audio": rec.audio_path,
            "stimuli": [rec.record_id], "stimulus_texts": [rec.text],
            "stimulus_references": [rec.audio_path], "compare_duration": False,
            "weight": weights.get((rec.category, rec.subcategory), 0.0),
            "judge": json.dumps(cfg, sort_keys=True),
        })
    if not rows:
        raise ValueError(f"no VStyle {language} records in category {category!r}")
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def _identified(folder: Path, language: str) -> dict:
    """The VStyle copy's identity (``identity.vstyle_corpus``), a synthetic one announced on
    stderr, where ``lm_eval`` logs, once per run."""
    corpus = identity.vstyle_corpus(folder, language)
    if corpus.get("synthetic"):
        logging.getLogger(__name__).warning(
            "SYNTHETIC VStyle, not VStyle results: %s is adept-eval make-synthetic --vstyle's "
            "stand-in, for trying the pipeline only", folder)
    return corpus


def judge_identity(cfg: dict) -> dict:
    """The judge's own identity (backend, model, prompt hashes, sampling) plus its server."""
    from adept_eval.llm.backends import server_name

    config = _config_from({"judge": json.dumps(cfg)})
    try:
        from adept_eval.judge.runner import JudgeRunner

        ident = dict(JudgeRunner(config).identity())
    except Exception:  # the identity must not depend on the runner's internals
        ident = {k: v for k, v in asdict(config).items() if k not in ("cache_path",)}
    if config.base_url and "server" not in ident:
        ident["server"] = server_name(config.base_url)
    return ident


def doc_to_text(doc: dict) -> str:
    """lm-eval's prompt text of a VStyle document (shown in logs only).

    Args:
        doc: the lm-eval document.

    Returns:
        ``[instruction type] text``.
    """
    return f"[{doc['instruction_type']}] {doc['text']}"


def doc_to_target(doc: dict) -> str:
    """lm-eval's target of a VStyle document: its instruction type.

    Args:
        doc: the lm-eval document.

    Returns:
        The instruction type.
    """
    return doc["instruction_type"]


def _read_response(resp, doc: dict) -> tuple[dict, JudgeItem | None]:
    """One document's record fields, and what to judge if its response is usable.

    Args:
        resp: the document's response (the system's JSON output).
        doc: the lm-eval document.

    Returns:
        ``(record, item)``: with an item, the record holds the base fields the verdict is
        added to; without one, it is the document's finished record (``failed`` for an
        unreadable output, ``bad_input`` for a missing or refused sample).
    """
    base = {"record_id": doc["record_id"], "instruction_type": doc["instruction_type"]}
    try:
        produced = json.loads(resp[0] if isinstance(resp, (list, tuple)) else resp)
        sample = produced["samples"][0]
        base["system"] = produced.get("system", "")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return {**base, "status": "failed", "detail": f"unreadable system output: {exc}"}, None
    if sample.get("status") != "ok" or not sample.get("path"):
        return {**base, "status": "bad_input",
                "detail": sample.get("problem") or "no response audio"}, None
    return base, JudgeItem(sample["path"], doc["text"], doc["instruction_type"],
                           doc.get("instruction_audio"), doc["record_id"])


def judge_responses(resps, docs) -> list[str]:
    """lm-eval filter: judge every response of the task in one concurrent batch.

    Args:
        resps: each document's response (the system's JSON output).
        docs: the task's lm-eval documents; the first carries the judge settings.

    Returns:
        One JSON record per document, in order.
    """
    if not docs:
        return []
    cfg = _config_from(docs[0])
    records: list[dict | None] = [None] * len(docs)
    items, where = [], []
    for i, (resp, doc) in enumerate(zip(resps, docs)):
        base, item = _read_response(resp, doc)
        if item is None:
            records[i] = base
            continue
        items.append(item)
        where.append((i, base))
    if items:
        result = judge(items, cfg)
        for (i, base), item in zip(where, result["items"]):
            records[i] = {**base, **{k: item[k] for k in ("status", "score", "scores", "spread",
                                                           "verdicts", "detail", "cached",
                                                           "prompt", "prompt_sha256")},
                          "judge": result["judge"]}
    return [json.dumps(r, ensure_ascii=False) for r in records]


@dataclass(frozen=True)
class JudgedRecord:
    """What one instruction scored: the one record ``process_results`` returns, logged once
    (under ``score``) and read back by the Hub's details table."""

    record_id: str
    sub: str
    weight: float
    score: float | None  # None: not judged (a counted failure, never a score)
    failed: int
    status: str | None
    detail: str = ""
    prompt: str | None = None
    prompt_sha256: str | None = None
    system: str = ""

    def to_json(self) -> dict:
        """The record as JSON-able data.

        Returns:
            The record's fields.
        """
        return asdict(self)


def process_results(doc: dict, results: list[str]) -> dict:
    """lm-eval's per-document results: the document's ``JudgedRecord`` under every metric
    of its task (the headline holds it; the others point at it).

    Args:
        doc: the lm-eval document.
        results: the filter's output for it (one JSON record).

    Returns:
        Metric name -> the record (or its ``SameRecord`` reference).
    """
    try:
        rec = json.loads(results[0])
    except (ValueError, TypeError, IndexError) as exc:
        rec = {"status": "failed", "detail": f"unreadable judge output: {exc}"}
    ok = rec.get("status") == "ok" and rec.get("score") is not None
    record = JudgedRecord(record_id=doc["record_id"], sub=doc["subcategory"], weight=doc["weight"],
                          score=float(rec["score"]) if ok else None, failed=int(not ok),
                          status=rec.get("status"), detail=rec.get("detail", "") or "",
                          prompt=rec.get("prompt"), prompt_sha256=rec.get("prompt_sha256"),
                          system=rec.get("system", "") or "").to_json()
    same = SameRecord(record, HEADLINE)
    return {name: record if name == HEADLINE else same
            for name in metric_names(f"vstyle_{doc['language']}_{doc['category']}")}


@cache
def metric_names(task: str) -> tuple[str, ...]:
    """The task's metrics, headline first (the order lm-eval prints them in): VStyle's metric
    table (``suites.VSTYLE_METRICS``), read once per task and process.

    Args:
        task: a VStyle task name.

    Returns:
        The metric names.
    """
    return tuple(m.name for m in VSTYLE.task_metrics(task))


# ----------------------------------------------------------------------------- aggregation
def _recs(items) -> list[dict]:
    return [record_of(it) for it in items]


def _by_sub(items) -> dict[str, list[float]]:
    out = defaultdict(list)
    for it in _recs(items):
        if it["score"] is not None:
            out[it["sub"]].append(it["score"])
    return out


def _stratified(items) -> tuple[float, float, float, float, float]:
    """VStyle's category score - the weighted mean of subcategory means over the subcategories
    present - with its stratified interval (``stats.stratified_mean_interval``)."""
    return stats.stratified_mean_interval(_by_sub(items), {it["sub"]: it["weight"]
                                                           for it in _recs(items)})


def category_score(items) -> float:
    """lm-eval aggregation: the category's score, stratified by subcategory.

    Args:
        items: the category's per-instruction records.

    Returns:
        The score.
    """
    return _stratified(items)[0]


def _interval(items) -> tuple[float, float]:
    """95% interval of the category score: the stratified mean's t interval on Satterthwaite's
    degrees of freedom (``stats.stratified_mean_interval``: why, and what a subcategory of one
    judged answer contributes)."""
    from adept_eval.judge.verdict import SCORE_RANGE

    _, low, high, _, _ = _stratified(items)
    return stats.within(low, high, SCORE_RANGE)  # a mean of 1-5 scores


def ci_low(items) -> float:
    """lm-eval aggregation: the lower end of the score's interval.

    Args:
        items: the per-instruction records.

    Returns:
        The lower bound.
    """
    return _interval(items)[0]


def ci_high(items) -> float:
    """lm-eval aggregation: the upper end of the score's interval.

    Args:
        items: the per-instruction records.

    Returns:
        The upper bound.
    """
    return _interval(items)[1]


def plain_mean(items) -> float:
    """lm-eval aggregation: the unweighted mean of the judged instructions' scores.

    Args:
        items: the per-instruction records.

    Returns:
        The mean, NaN when none was judged.
    """
    scores = [it["score"] for it in _recs(items) if it["score"] is not None]
    return sum(scores) / len(scores) if scores else float("nan")


def n_judged(items) -> int:
    """The n behind the scores: instructions whose response was judged."""
    return sum(1 for it in _recs(items) if it["score"] is not None)


def n_failed(items) -> int:
    """lm-eval aggregation: how many instructions were not judged.

    Args:
        items: the per-instruction records.

    Returns:
        The count.
    """
    return sum(it["failed"] for it in _recs(items))


def failure_rate(items) -> float:
    """lm-eval aggregation: the share of instructions not judged.

    Args:
        items: the per-instruction records.

    Returns:
        The share, NaN with no records.
    """
    return n_failed(items) / len(items) if items else float("nan")


def _sub_mean(sub: str):
    def agg(items) -> float:
        v = _by_sub(items).get(sub, [])
        return sum(v) / len(v) if v else float("nan")

    agg.__name__ = f"score_{sub}"
    return agg


SUBCATEGORY_SCORES = {f"score_{s}": _sub_mean(s) for subs in CATEGORIES.values() for s in subs}
