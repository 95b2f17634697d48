"""Results on the Hugging Face Hub: publish a run, write a model's eval results, push a Space.

Tokens come only from the environment (``HF_TOKEN`` or a ``hf auth login``), and every file is
scanned for the values of secret-looking environment variables before it is uploaded. Uploads
are retried on 429/5xx and connection errors; a push that still fails leaves every local file as
it was and says where the prepared upload is, so rerunning retries it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from adept_eval.corpora import vstyle
from adept_eval.errors import PublishError
from adept_eval.identity import answered, limited
from adept_eval.results.formatting import missing
from adept_eval.results.runs import Run, audio_files, changed_audio, load_run, logged_samples
from adept_eval.secrecy import find_secrets
from adept_eval.suites import ADEPT, SUITES, VSTYLE

log = logging.getLogger(__name__)


def _endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def require_token(what: str) -> None:
    """Refuse, before any network call, a push that has no Hugging Face token to push with.

    The token is looked up the way huggingface_hub's own calls will look it up
    (``huggingface_hub.get_token``: ``HF_TOKEN``, then the token file that ``hf auth login``
    writes), so this never refuses a push the client could make. The token itself is never
    part of a message."""
    from huggingface_hub import get_token

    if not get_token():
        raise _no_token(what)


def _no_token(what: str) -> PublishError:
    """The one message for a call that has no token to send, however it was found missing:
    before the call (``require_token``) or by huggingface_hub during it (``with_retries``)."""
    return PublishError(f"{what}: no Hugging Face token - set HF_TOKEN or log in with "
                        "`hf auth login` (the hf CLI), then run the same command again")


def hub_api():
    """A Hub client for the configured endpoint (``HF_ENDPOINT``, else the public Hub).

    Returns:
        A ``huggingface_hub.HfApi``.
    """
    from huggingface_hub import HfApi

    return HfApi(endpoint=_endpoint())


def _transient(exc: BaseException) -> bool:
    """Whether a failed Hub call may succeed if simply made again: the Hub busy or failing
    (429, 5xx) or the network in the way (a connection refused, reset or dropped, a timeout),
    also when huggingface_hub reports it as another error raised from it (``snapshot_download``
    raises "cannot find the requested files" from the connection error). Anything else - no
    token, a token the Hub refuses (401, 403), any other 4xx, a local error - fails the same
    way every time: retrying only delays the message by the back-off."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        verdict = _transient_by_itself(exc)
        if verdict is not None:
            return verdict
        exc = exc.__cause__ or exc.__context__
    return False


def _transient_by_itself(exc: BaseException) -> bool | None:
    """Whether one error in a chain decides ``_transient``: True or False, or None to look at
    the error it was raised from."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(exc, HfHubHTTPError):
        status = getattr(exc.response, "status_code", None)
        return status is None or status == 429 or status >= 500
    if isinstance(exc, OfflineModeIsEnabled):  # HF_HUB_OFFLINE: no call will be made
        return False
    if isinstance(exc, (ConnectionError, TimeoutError)) or _transport_error(exc):
        return True
    return None


def _transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an HTTP client's own transport error (requests: huggingface_hub < 1;
    httpx/httpx2 after), told by name so that no client is imported that the installed hub
    does not use."""
    return any((cls.__module__.split(".")[0], cls.__name__) in _TRANSPORT_ERRORS
               for cls in type(exc).__mro__)


#: (top-level module, class) of the HTTP clients' errors for a failed connection or a timeout
_TRANSPORT_ERRORS = frozenset({("requests", "ConnectionError"), ("requests", "Timeout"),
                               ("httpx", "TransportError"), ("httpx2", "TransportError")})


def with_retries(action, what: str, attempts: int = 4, backoff: float = 1.0):
    """Run a Hub call, retrying what may pass on a second try (``_transient``: 429, 5xx,
    connection errors, timeouts) with exponential back-off. Everything else fails at once, in
    one message: no token, or one the Hub refuses (401/403), says so; any other Hub refusal
    is a PublishError with the Hub's answer; another error is left to propagate."""
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError

    for attempt in range(attempts):
        try:
            return action()
        except LocalTokenNotFoundError:
            raise _no_token(what) from None
        except Exception as exc:
            if not _transient(exc):
                if not isinstance(exc, HfHubHTTPError):
                    raise
                status = getattr(exc.response, "status_code", None)
                if status in (401, 403):
                    said = getattr(exc, "server_message", None) or ""
                    raise PublishError(
                        f"{what}: the Hugging Face Hub refused the token (HTTP {status}"
                        f"{': ' + said if said else ''}): it is not valid, or may not write "
                        "there - set HF_TOKEN to a valid token with write access, or log in "
                        "with `hf auth login`, then run the same command again") from None
                raise PublishError(f"{what}: {exc}") from None
            error = exc
        if attempt + 1 < attempts:
            wait = backoff * 2 ** attempt
            log.warning("%s failed (%s); retrying in %.0f s", what, error, wait)
            time.sleep(wait)
    raise PublishError(f"{what} failed after {attempts} attempts: {error}")



def _details_table(samples_file: Path) -> pa.Table:
    """Per-question (ADEPT) or per-instruction (VStyle) details of one task, flat columns.

    Args:
        samples_file: the task's logged-samples file.

    Returns:
        One row per logged sample; a column absent from a row is null there.

    Raises:
        PublishError: a line of the file is not JSON.
    """
    rows = [_details_row(sample) for _, sample in logged_samples(samples_file)]
    columns = sorted({k for r in rows for k in r})
    return pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows])



#: the logged document's fields a details row copies as they are
_DOC_FIELDS = ("question_id", "record_id", "task", "class", "category", "speaker",
               "subcategory", "target", "text", "question", "instruction_type")
#: the scored record's fields a details row copies (lists and dicts as JSON text)
_RECORD_FIELDS = ("correct_answer", "answer", "correct", "n", "failed", "status", "detail",
                  "listener", "system", "agreement", "score", "prompt", "prompt_sha256")


def _scored_record(sample: dict) -> dict:
    """The suite's scored record of one logged sample (its headline metric's value), or {}."""
    rec = next((sample[su.headline] for su in SUITES.values()
                if isinstance(sample.get(su.headline), (dict, list))), None)
    rec = rec[0] if isinstance(rec, list) else rec
    return rec if isinstance(rec, dict) else {}


def _details_row(sample: dict) -> dict:
    """One logged sample as a flat details row: its document's fields, then its score's."""
    doc = sample.get("doc", {})
    rec = _scored_record(sample)
    row = {"doc_id": sample.get("doc_id")}
    for key in _DOC_FIELDS:
        if key in doc:
            row[key] = doc[key]
    if "stimuli" in doc:
        row["stimuli"] = json.dumps(doc["stimuli"])
        row["choices"] = json.dumps(doc.get("choices", []), ensure_ascii=False)
    for key in _RECORD_FIELDS:
        if key in rec:
            value = rec[key]
            row[key] = json.dumps(value) if isinstance(value, (list, dict)) else value
    return row


@dataclass
class PublishReport:
    """What ``publish`` did: where the run went, how many files, and the model repo's outcome.

    Attributes:
        repo_id: the results dataset.
        path_in_repo: the run's folder in it.
        staged: the local folder uploaded.
        files: how many files were uploaded.
        model_repo: the model repo asked for, or None.
        model_repo_written: whether scores were written to it.
        note: why not, or what was written.
        chosen: how the run was chosen among several ("" when there was one).
    """
    repo_id: str
    path_in_repo: str
    staged: Path
    files: int
    model_repo: str | None = None
    model_repo_written: bool = False
    note: str = ""
    chosen: str = ""


def stage_run(run: Run, staging: Path, *, samples: bool = True, audio: bool = False) -> Path:
    """Lay the upload out locally: results.json, details/<task>.parquet, audio/...

    Args:
        run: the run to publish.
        staging: the folder to lay it out in, under ``<system>/<timestamp>``.
        samples: also write each task's details table.
        audio: also copy every scored audio file.

    Returns:
        The run's staged folder.

    Raises:
        PublishError: with ``audio``, a scored file is missing or has changed since the run
            scored it (the staged folder is removed).
    """
    target = staging / _safe(run.system) / run.timestamp
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copy(run.results_path, target / "results.json")
    if samples:
        for task, path in run.samples.items():
            (target / "details").mkdir(exist_ok=True)
            pq.write_table(_details_table(path), target / "details" / f"{task}.parquet")
    if audio:
        _stage_audio(run, target)
    return target


def _stage_audio(run: Run, target: Path) -> None:
    """Copy every scored audio file, as scored, into ``target/audio``, or none.

    A file deleted since the run, left out without a word, would make the uploaded audio a
    silent subset of what the results were computed from; a file re-synthesised since would
    be uploaded beside results it did not earn.

    Raises:
        PublishError: a file is missing or changed; ``target`` is removed first.
    """
    files = audio_files(run)
    missing = sorted(str(p) for p in files.values() if not p.is_file())
    changed = [] if missing else changed_audio(run, files)
    if missing or changed:
        shutil.rmtree(target)
        raise _audio_refusal(run, len(files), missing, changed)
    for sid, path in files.items():
        dest = target / "audio" / f"{sid}{path.suffix}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest)


def _audio_refusal(run: Run, total: int, missing: list[str], changed: list[str]) -> PublishError:
    """The error naming the run's missing audio files, else its changed ones (ten at most)."""
    bad = missing or changed
    shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
    if missing:
        return PublishError(
            f"{run.results_path}: --audio: {len(missing)} of the run's {total} audio "
            f"files are missing: {shown}. Restore them (paths relative to the folder lm_eval "
            "ran in: run publish from there), or publish without --audio")
    return PublishError(
        f"{run.results_path}: --audio: {len(changed)} of the run's {total} audio "
        f"files have changed since the run scored them: {shown}. Publish the audio "
        "with the run that scored it (evaluate again, then publish that run), or "
        "publish without --audio")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "system"


def publish(results: str | Path, repo_id: str, *, samples: bool = True, audio: bool = False,
            model_repo: str | None = None, benchmark_dataset: str | None = None,
            private: bool = False, staging: str | Path | None = None,
            run_id: str | None = None, allow_partial: bool = False) -> PublishReport:
    """Push one run to a results dataset and, when the user owns it, onto the model repo.

    A run made with lm-eval's ``--limit`` is refused for the model repo before anything is
    pushed (``refuse_partial_scores``), unless ``allow_partial``: the whole command fails
    rather than leave the run half published. So are repo ids the Hub would refuse
    (``check_repo_id``): a bad ``--model-repo`` found only after the dataset was pushed would
    leave the run half published, with a misleading "belongs to someone else" note and exit 0.
    """
    check_repo_id(repo_id, "--repo")
    if model_repo is not None:
        check_repo_id(model_repo, "--model-repo", owner=True)
    require_token(f"publishing to {repo_id}")
    run = load_run(results, run_id)
    check_publishable(run)
    if model_repo and not allow_partial:
        refuse_partial_scores(run, model_repo)
    staging = Path(staging) if staging else run.results_path.parent / "hub_upload"
    staged = stage_run(run, staging, samples=samples, audio=audio)
    leaks = find_secrets(staged)
    if leaks:
        raise PublishError("refusing to upload: secret values found in " + "; ".join(leaks))
    api = hub_api()
    path_in_repo = f"runs/{_safe(run.system)}/{run.timestamp}"
    try:
        with_retries(lambda: api.create_repo(repo_id, repo_type="dataset", private=private,
                                             exist_ok=True), f"creating {repo_id}")
        with_retries(lambda: api.upload_folder(
            repo_id=repo_id, repo_type="dataset", folder_path=staged, path_in_repo=path_in_repo,
            commit_message=f"adept-eval: {run.system} ({run.timestamp})"), f"uploading to {repo_id}")
        card = _results_card(repo_id, api)
        with_retries(lambda: api.upload_file(path_or_fileobj=card.encode(), path_in_repo="README.md",
                                             repo_id=repo_id, repo_type="dataset",
                                             commit_message="adept-eval: update card"),
                     f"updating the card of {repo_id}")
    except PublishError as exc:
        raise PublishError(f"{exc}\nNothing local was changed; the prepared upload is at "
                           f"{staged}; run the same command again to retry.") from None
    report = PublishReport(repo_id, path_in_repo, staged, sum(1 for p in staged.rglob("*")
                                                              if p.is_file()), chosen=run.chosen)
    if model_repo:
        report.model_repo = model_repo
        report.model_repo_written, report.note = write_model_results(
            run, model_repo, results_repo=repo_id, path_in_repo=path_in_repo,
            benchmark_dataset=benchmark_dataset, allow_partial=True)  # checked above, before any push
    return report


def check_publishable(run: Run) -> None:
    """Refuse a run whose identity is missing or mixes scorers or corpora: what it is a result
    of could not be told from the published copy.

    Args:
        run: the run about to be published.

    Raises:
        PublishError: naming the results file and what is wrong with its identity.
    """
    ident = run.identity
    if ident is None:
        raise PublishError(f"{run.results_path}: the run records no adept-eval identity "
                           "(made before adept-eval recorded it); run it again")
    for name, s in ident.suites.items():
        if s.mixed:
            raise PublishError(f"{run.results_path}: {name} tasks scored by different "
                               "scorers or on different corpora; publish them as separate runs")


def check_repo_id(repo_id: str, option: str, *, owner: bool = False) -> None:
    """A ``PublishError`` naming ``option`` unless ``repo_id`` is an id the Hub accepts
    (huggingface_hub's own rule), with an owner (``owner/name``) when ``owner``: the model repo's
    owner decides whether its card is written. Checked before any network call."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
        ok = not owner or "/" in repo_id
    except HFValidationError:
        ok = False
    if not ok:
        raise PublishError(f"{option} {repo_id!r}: not a Hugging Face repo id; expected "
                           f"{'owner/name' if owner else 'owner/name or name'} (letters, digits, "
                           "'-', '_' and '.', at most 96 characters)")


def _results_card(repo_id: str, api) -> str:
    files = api.list_repo_files(repo_id, repo_type="dataset")
    runs = sorted({"/".join(f.split("/")[1:3]) for f in files if f.startswith("runs/")
                   and f.endswith("results.json")})
    lines = ["---", "tags:", "- adept-eval", "- evaluation", "---", "",
             f"# {repo_id.split('/')[-1]}: adept-eval results", "",
             "Evaluation runs published by [adept-eval](https://pypi.org/project/adept-eval/): "
             "prosody transfer on ADEPT and spoken dialogue on VStyle. Each run folder holds "
             "lm-eval's `results.json`, per-question `details/<task>.parquet` and, optionally, the "
             "system's `audio/`.", "", "| system | run |", "|---|---|"]
    lines += [f"| {r.split('/')[0]} | {r.split('/')[1]} |" for r in runs]
    lines += ["", "Build a leaderboard from it: `adept-eval leaderboard --from-hub "
              f"{repo_id} -o leaderboard/`.", ""]
    return "\n".join(lines)


def refuse_partial_scores(run: Run, model_repo: str) -> None:
    """Refuse to write the scores of a run made with lm-eval's ``--limit`` onto a model repo.

    A model-index entry, and an ``.eval_results`` entry (which the benchmark dataset's Hub
    leaderboard lists), reads as the model's result on the whole task; a run that answered only
    some of its questions is no such result - adept-eval's own leaderboard lists it apart,
    never ranked. A run short of some tasks is not refused: each task it ran is whole; nor
    one on the synthetic stand-in corpus, whose scores never reach a card. The message names
    the run and how much it answered; ``--allow-partial`` (``allow_partial``) writes the
    scores anyway, each labelled partial."""
    ident = run.identity
    for s in (ident.suites.values() if ident is not None else ()):
        if s.limited and not s.synthetic:
            raise PublishError(
                f"{run.system} ({run.results_path}) is a partial run: made with lm-eval's "
                f"--limit, it answered {answered(s.limited)} of its {len(s.tasks)} "
                f"{SUITES[s.suite].title} tasks, so its scores are not written to "
                f"{model_repo} as the model's results; run every question (lm_eval without "
                "--limit), publish without --model-repo, or pass --allow-partial to write "
                "them labelled partial")


@dataclass(frozen=True)
class ModelScore:
    """One task's score as a model card states it: the Hub dataset it is a result on, its
    value and metric, and the notes beside it (scorer, n, interval)."""

    dataset: str
    value: float
    metric: str
    notes: str


#: why a task's score is not written to a model card (counted, then said in one hint)
NO_BENCHMARK_DATASET, SYNTHETIC_CORPUS, PUBLISHED_SAMPLE = "no-dataset", "synthetic", "sample"


def model_score(run: Run, task: str, benchmark_dataset: str | None) -> ModelScore | str | None:
    """A task's score for the system's model card.

    ADEPT has no canonical Hub copy: its scores are written only with ``benchmark_dataset``
    (the copy ``scripts/publish_corpus.py`` makes), never from the synthetic stand-in corpus;
    VStyle's are results on its Hub dataset, never from its published sample.

    Args:
        run: the run.
        task: one of its tasks.
        benchmark_dataset: the Hub copy of ADEPT its scores are of (``--benchmark-dataset``).

    Returns:
        The score; a reason it is skipped (``NO_BENCHMARK_DATASET``, ``SYNTHETIC_CORPUS``,
        ``PUBLISHED_SAMPLE``); None when the task has no score to write.
    """
    result = run.results["results"][task]
    if task in ADEPT.tasks and ADEPT.key("acc") in result:
        recorded = run.suite(ADEPT.name)
        if recorded is not None and recorded.synthetic:
            return SYNTHETIC_CORPUS
        if not benchmark_dataset:
            return NO_BENCHMARK_DATASET
        return ModelScore(benchmark_dataset, result[ADEPT.key("acc")], "accuracy",
                          f"recognition accuracy, listener {run.listener()}, n="
                          f"{result.get(ADEPT.key('n'))}, 95% CI "
                          f"{result.get(ADEPT.key('acc_ci_low')):.3f}-"
                          f"{result.get(ADEPT.key('acc_ci_high')):.3f}")
    if task in VSTYLE.tasks and VSTYLE.key("score") in result:
        recorded = run.suite(VSTYLE.name)
        if recorded is not None and recorded.sample:
            return PUBLISHED_SAMPLE
        return ModelScore(vstyle.HUB_REPO, result[VSTYLE.key("score")], "speech_judge_score",
                          f"speech-judge score 1-5, judge {run.judge()}, "
                          f"n={result.get(VSTYLE.key('n'))}")
    return None


def _skipped_hint(skips: Counter) -> str:
    """What the model card was not given, and why, from the counts of ``model_score``'s
    reasons (empty when nothing was skipped)."""
    hint = ""
    if skips[NO_BENCHMARK_DATASET]:
        hint += (f"; {skips[NO_BENCHMARK_DATASET]} ADEPT scores skipped: pass "
                 "--benchmark-dataset with the Hub copy of ADEPT they refer to "
                 "(scripts/publish_corpus.py makes one)")
    if skips[SYNTHETIC_CORPUS]:
        hint += (f"; {skips[SYNTHETIC_CORPUS]} ADEPT scores skipped: the run used the synthetic "
                 "stand-in corpus, whose scores are not ADEPT results")
    if skips[PUBLISHED_SAMPLE]:
        hint += (f"; {skips[PUBLISHED_SAMPLE]} VStyle scores skipped: the run used VStyle's "
                 f"published sample ({vstyle.SAMPLE_METADATA}, the project page's examples), "
                 f"whose scores are not results on {vstyle.HUB_REPO}")
    return hint


def write_model_results(run: Run, model_repo: str, *, results_repo: str, path_in_repo: str,
                        benchmark_dataset: str | None,
                        allow_partial: bool = False) -> tuple[bool, str]:
    """Scores onto the system's model repo: ``.eval_results/*.yaml`` and the card's model-index.

    Only when the token's user (or one of their organisations) owns the repo. A run made with
    ``--limit`` only when ``allow_partial``; then each score of a task it cut short says so in
    the entry's notes and the model-index metric's name (with that task's questions answered),
    where a reader of the card or of the benchmark's leaderboard sees the value.

    Each task's score is its own model-index entry, whose dataset config is the task's name:
    huggingface_hub groups model-index results by task type, dataset, config, split and
    revision - not by task name - so without a config per task every score would land in one
    entry under the first task's name, and a reader of the card could not tell the tasks apart.
    The Hub copy of ADEPT (``scripts/publish_corpus.py``) has exactly these configs, one per
    task; VStyle's Hub dataset has none per category, so there the config names the lm-eval
    task the score is of. The ``.eval_results`` entry of the same score carries the same task
    (``task_id``), dataset and value. Publishing again replaces the scores adept-eval wrote
    before for the same tasks (``replace_model_index_scores``)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    if not allow_partial:
        refuse_partial_scores(run, model_repo)
    api = hub_api()
    not_owned = _not_owned_note(api, model_repo)
    if not_owned:
        return False, not_owned
    source = (f"{(_endpoint() or 'https://huggingface.co').rstrip('/')}/datasets/"
              f"{results_repo}/tree/main/{path_in_repo}")
    entries, index, partial, skips = _model_scores(run, benchmark_dataset, source)
    hint = _skipped_hint(skips)
    if not entries:
        return False, "no scores written" + (hint or ": no ADEPT or VStyle scores in the run")
    content = yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False).encode()
    with_retries(lambda: api.upload_file(path_or_fileobj=content, repo_id=model_repo,
                                         path_in_repo=f".eval_results/adept-eval-{_safe(run.system)}.yaml",
                                         commit_message="adept-eval: evaluation results"),
                 f"writing eval results to {model_repo}")
    with_retries(lambda: replace_model_index_scores(model_repo, run.system, index),
                 f"updating the card of {model_repo}")
    labelled = (f", {partial} of them labelled partial (run with --limit: "
                f"{answered(limited(run.results, run.task_names()))})") if partial else ""
    return True, f"wrote {len(entries)} scores to {model_repo}{labelled}{hint}"


def _not_owned_note(api, model_repo: str) -> str:
    """Why the token's user may not write ``model_repo``'s scores (another owner), or ""."""
    who = with_retries(lambda: api.whoami(), "who am I")
    owners = {who.get("name")} | {o.get("name") for o in who.get("orgs", [])}
    if model_repo.split("/")[0] in owners:
        return ""
    return (f"{model_repo} belongs to {model_repo.split('/')[0]}, not to "
            f"{', '.join(sorted(o for o in owners if o))}: its card was left alone")


def _model_scores(run: Run, benchmark_dataset: str | None, source: str):
    """The run's scores as ``.eval_results`` entries and model-index results.

    Args:
        run: the run.
        benchmark_dataset: the benchmark dataset the scores are of, or None.
        source: the URL of the published run, which every score links to.

    Returns:
        The entries, the model-index results, how many are labelled partial, and a Counter of
        why scores were skipped.
    """
    from huggingface_hub import EvalResult, EvalResultEntry

    entries, index, partial = [], [], 0
    skips: Counter[str] = Counter()
    for task in run.task_names():
        score = model_score(run, task, benchmark_dataset)
        if isinstance(score, str):
            skips[score] += 1
            continue
        if score is None or missing(score.value):
            continue
        part = limited(run.results, [task])
        flag = f"partial: run with lm-eval --limit, {answered(part)}" if part else None
        partial += part is not None
        entries.append(EvalResultEntry(dataset_id=score.dataset, task_id=task,
                                       value=round(score.value, 4), source_url=source,
                                       source_name="adept-eval",
                                       notes=f"{flag}; {score.notes}" if flag else score.notes))
        index.append(EvalResult(task_type="text-to-speech", dataset_type=score.dataset,
                                dataset_name=score.dataset.split("/")[-1], dataset_config=task,
                                task_name=task, metric_type=score.metric,
                                metric_value=round(score.value, 4),
                                metric_name=f"{score.metric} ({flag})" if flag else None,
                                source_name="adept-eval", source_url=source))
    return entries, index, partial, skips


def same_score(result) -> tuple | None:
    """What makes two model-index results one score for ``replace_model_index_scores``: the
    dataset config and the metric, of a result adept-eval wrote (its source is adept-eval);
    None for anyone else's.

    The config is the lm-eval task (one per task, see ``write_model_results``), so with the
    metric it names the score a reader of the card takes for one result. What a re-publish
    changes is left out: the source URL (the run's folder in the results dataset: a newer run,
    or the same one fixed, is another folder), the metric's name (it says a score is partial:
    a full run replaces a partial one) and the dataset (``--benchmark-dataset``, corrected or
    renamed, is still the same task's score). Only adept-eval's own results have a key: a score
    another tool wrote, even of the same task and metric, is its claim, not ours to remove."""
    if result.source_name != "adept-eval":
        return None
    return result.dataset_config, result.metric_type


def replace_model_index_scores(model_repo: str, model_name: str, results: list) -> None:
    """Write ``results`` (huggingface_hub ``EvalResult``s) into the card's model-index in one
    commit, replacing every result adept-eval wrote before for the same score (``same_score``)
    and keeping all other results and the rest of the card as they were.

    Not ``metadata_update``: it replaces a result only when every field but the value is equal,
    source URL and metric name included, so re-publishing (a run fixed, a newer run of the same
    model) added its scores beside the old ones and the card showed two values for one task.
    Duplicates left by that are removed with the rest of the old scores. A repo without a card
    gets huggingface_hub's default one, as ``metadata_update`` gives it. One limit stays, both
    ways the card is written: huggingface_hub writes the results of one task type, dataset,
    config, split and revision as one entry with one source, the first's, so another tool's
    text-to-speech score of the same dataset and task would be read back as having ours (or
    ours as having its); another tool's score of any other kind or dataset is not affected."""
    from huggingface_hub import ModelCard, ModelCardData
    from huggingface_hub.errors import EntryNotFoundError

    try:
        card = ModelCard.load(model_repo)
    except EntryNotFoundError:
        card = ModelCard.from_template(ModelCardData())
    new = {same_score(r) for r in results}
    kept = [r for r in card.data.eval_results or []
            if same_score(r) is None or same_score(r) not in new]
    if not card.data.eval_results:  # the model-index has one name: a card's own is kept
        card.data.model_name = model_name
    card.data.eval_results = kept + list(results)
    card.push_to_hub(model_repo, commit_message="adept-eval: evaluation results in the model-index")


def publish_metric_space(argv: list[str] | None, *, name: str, module: Path, app: str,
                         card: str, description: str) -> int:
    """Build an evaluate-metric Space (module, Gradio ``app.py``, requirements, card) and push it.

    The command-line face of ``scripts/publish_*_space.py``: both metrics publish the same way
    (evaluate's module layout: the metric file under its own name beside ``app.py``), only the
    module, the app and the card differ.
    """
    import argparse
    import tempfile

    from adept_eval import __version__

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repo", required=True, help=f"Space id, e.g. my-org/{name}")
    parser.add_argument("--local-dir", help="build here (default: a temporary folder)")
    parser.add_argument("--no-push", action="store_true")
    args = parser.parse_args(argv)
    folder = Path(args.local_dir or tempfile.mkdtemp(prefix=f"{name}-space-"))
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(module, folder / f"{name}.py")
    (folder / "app.py").write_text(app, encoding="utf-8")
    (folder / "requirements.txt").write_text(f"adept-eval>={__version__}\n", encoding="utf-8")
    (folder / "README.md").write_text(card.replace(f'evaluate.load("{name}")',
                                                   f'evaluate.load("{args.repo}")'),
                                      encoding="utf-8")
    print(f"Space files in {folder}")
    if not args.no_push:
        push_space(folder, args.repo, f"{name} metric")
        print(f"published: evaluate.load({args.repo!r})")
    return 0


def push_space(folder: Path, repo: str, message: str) -> None:
    """Upload a built evaluate-metric Space (a Gradio app), refusing secret values in its files."""
    leaks = find_secrets(folder)
    if leaks:
        raise SystemExit("refusing to upload: secret values in " + "; ".join(leaks))
    try:
        require_token(f"publishing the Space {repo}")
    except PublishError as exc:
        raise SystemExit(str(exc)) from None
    api = hub_api()
    with_retries(lambda: api.create_repo(repo, repo_type="space", space_sdk="gradio",
                                         exist_ok=True), f"creating {repo}")
    with_retries(lambda: api.upload_folder(repo_id=repo, repo_type="space", folder_path=folder,
                                           commit_message=message), f"uploading {repo}")
