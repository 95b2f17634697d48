"""A run's identity, carried as data in every lm-eval results file (``results["adept_eval"]``).

While lm-eval runs, the suites' harnesses note in the run's context what scored each task (the
listener's or the judge's own ``identity()``) and which corpus the questions came from; when
``simple_evaluate`` returns, the start-up hook calls ``attach`` with those notes and lm-eval then
writes the identity into ``results_*.json`` with everything else. ``report``, ``leaderboard`` and ``publish`` read
identity only from there (``RunIdentity.of``): runs are compared only when their corpus, scorer
and task set match.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from adept_eval.suites import SUITES

KEY = "adept_eval"

def adept_corpus(corpus) -> dict:
    """Identify the ADEPT copy a run used.

    Args:
        corpus: The loaded corpus.

    Returns:
        Its name, sha256, and whether it is adept-eval's synthetic stand-in (recognised by its
        generated sentences, so a renamed or re-zipped copy is still recognised).
    """
    return {"name": "ADEPT", "sha256": corpus.fingerprint, "synthetic": is_synthetic(corpus)}


def is_synthetic(corpus) -> bool:
    """Tell adept-eval's synthetic stand-in from the real ADEPT by its sentences.

    About a dozen recordings spread over the corpus are checked, which is enough: the
    synthetic corpus's transcripts are generated, the real one's never match them.

    Args:
        corpus: The corpus (its ``recordings``).

    Returns:
        Whether every recording checked holds the synthetic corpus's sentence (False for a
        corpus without recordings).
    """
    from adept_eval.corpora.synthetic import sentence

    sample = corpus.recordings[:: max(1, len(corpus.recordings) // 12)] or corpus.recordings
    return bool(sample) and all(r.text.strip() == sentence(r.cls, r.sentence_id) for r in sample)


def vstyle_corpus(folder: Path, language: str) -> dict:
    """Identify the VStyle copy a run used.

    Args:
        folder: The language folder.
        language: The language.

    Returns:
        Its name, the sha256 and name of its metadata file, and whether it is the published
        sample (``sample``: the project page's examples, not the benchmark: its scores never
        reach a model card) or ``make-synthetic --vstyle``'s stand-in (``synthetic``).

    Raises:
        VStyleError: The folder holds no metadata.
        OSError: The metadata cannot be read.
    """
    from adept_eval.corpora.synthetic_vstyle import is_synthetic as synthetic_vstyle
    from adept_eval.corpora.vstyle import SAMPLE_METADATA, metadata_file

    path = metadata_file(folder)
    return {"name": f"VStyle-{language}", "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "file": path.name, "synthetic": synthetic_vstyle(path),
            "sample": path.name == SAMPLE_METADATA}


def label(scorer: dict | None) -> str:
    """Name a scorer identity shortly, for people (the full identity stays in the data).

    Args:
        scorer: A scorer identity (a listener's or a judge's ``identity()``), or None.

    Returns:
        The listener (or backend/model), then its other plain settings, cut to 90
        characters; "unknown" without an identity.
    """
    if not scorer:
        return "unknown"
    head = scorer.get("listener") or f"{scorer.get('backend', '?')}/{scorer.get('model') or '-'}"
    rest = _plain_settings(scorer)
    if scorer.get("listener") and scorer.get("model"):
        rest.insert(0, f"{scorer.get('backend', '')}/{scorer['model']}")
    text = " ".join([head, *rest])
    return text if len(text) <= 90 else text[:87] + "..."


def _plain_settings(scorer: dict) -> list[str]:
    """``key=value`` for each setting of ``scorer`` other than its name, sorted by key,
    leaving out empty values and nested ones (dicts, lists)."""
    return [f"{k}={v}" for k, v in sorted(scorer.items())
            if k not in ("listener", "backend", "model", "prompts_by_type") and v not in (None, "")
            and not isinstance(v, (dict, list))]


def scorer_key(scorer: dict | None) -> str:
    """A short key that is equal exactly when two scorer identities are.

    Args:
        scorer: A scorer identity, or None (keyed as ``{}``).

    Returns:
        The first 12 hex digits of the sha256 of its canonical JSON.
    """
    return hashlib.sha256(json.dumps(scorer or {}, sort_keys=True, default=str).encode()
                          ).hexdigest()[:12]


def attach(results: dict, model=None, model_args=None, noted: dict | None = None) -> dict:
    """Add the run's identity to lm-eval's results dict, in place.

    Args:
        results: what lm-eval's ``simple_evaluate`` returned.
        model: the run's ``--model`` (a name or a model object).
        model_args: the run's ``--model_args``.
        noted: task -> {"scorer": ..., "corpus": ...}, what the harnesses noted as each task
            loaded (the run context's ``identities``).

    Returns:
        ``results``, with the identity under ``KEY`` when any task is a suite's.
    """
    from adept_eval import __version__

    noted = noted or {}

    if not isinstance(results, dict) or "results" not in results:
        return results
    system = _system_name(model, model_args, results)
    suites = {}
    for name, suite in SUITES.items():
        tasks = [t for t in results["results"] if t in suite.tasks]
        if tasks:
            suites[name] = _suite_record(suite, tasks, results, noted)
    if suites:
        results[KEY] = {"version": __version__, "system": system,
                        "model": model if isinstance(model, str) else type(model).__name__,
                        "suites": suites}
    return results


def _suite_record(suite, tasks: list[str], results: dict, noted: dict) -> dict:
    """The identity of one suite's ``tasks`` in a run: its tasks, whether the run is complete,
    and the scorer and corpus the tasks were noted with (``{"mixed": [...]}`` when they
    differ)."""
    scorer = _one_or_mixed([json.dumps(noted.get(t, {}).get("scorer"), sort_keys=True,
                                       default=str) for t in tasks])
    corpus = _one_or_mixed([json.dumps(noted.get(t, {}).get("corpus"), sort_keys=True)
                            for t in tasks])
    part = limited(results, tasks)
    record = {"tasks": sorted(tasks), "complete": suite.complete(tasks) and not part,
              "scorer": scorer, "corpus": corpus}
    if part:  # for readers of the file (a Hub card, a person); RunIdentity.of reads
        # lm-eval's own record again, so that a file without this key is read the same way
        record["limited"] = {"documents": part[0], "of": part[1]}
    return record


def _one_or_mixed(encoded: list[str]):
    """The one value the JSON texts ``encoded`` hold, or ``{"mixed": [...]}`` (each decoded,
    None read as ``{}``, sorted) when they hold several."""
    distinct = set(encoded)
    if len(distinct) == 1:
        return json.loads(distinct.pop())
    return {"mixed": sorted(json.loads(text) or {} for text in distinct)}


def limited(results: dict, tasks) -> tuple[int, int] | None:
    """Tell whether lm-eval ran any of ``tasks`` on fewer documents than it holds
    (``--limit``), from its own ``n-samples`` record.

    Such a run answered only some questions of its tasks: its task set may be whole, but it
    is not a complete run, and must not be ranked or reported as one.

    Args:
        results: The results dict (or file contents) lm-eval wrote.
        tasks: The tasks to look at.

    Returns:
        (documents run, documents held) over ``tasks`` when any ran short; else None.
    """
    counts = results.get("n-samples") if isinstance(results, dict) else None
    if not isinstance(counts, dict):
        return None
    run = held = 0
    short = False
    for task in tasks:
        c = counts.get(task)
        try:
            effective, original = int(c["effective"]), int(c["original"])
        except (TypeError, KeyError, ValueError):
            continue
        run, held, short = run + effective, held + original, short or effective < original
    return (run, held) if short else None


def answered(part: tuple[int, int]) -> str:
    """Say how much of its tasks a run made with ``--limit`` answered.

    The one wording of report, leaderboard and publish, so a partial run reads the same
    wherever it is named.

    Args:
        part: ``limited``'s (documents run, documents held).

    Returns:
        "36 of 165 questions".
    """
    return f"{part[0]} of {part[1]} questions"


def _system_name(model, model_args, results) -> str:
    """The name of the system a run evaluated: its model class's ``name_from_args``, else its
    ``pretrained`` or ``model`` argument, else the model itself; never an exception (a model
    lm-eval cannot look up is named as given)."""
    try:
        from lm_eval.api.registry import get_model
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(model_args) if isinstance(model_args, str) \
            else dict(model_args or {})
        cls = get_model(model) if isinstance(model, str) else type(model)
        if hasattr(cls, "name_from_args"):
            return str(cls.name_from_args(args))
        return str(args.get("pretrained") or args.get("model") or model)
    except Exception:
        return str(getattr(model, "name", None) or model or "unknown")


@dataclass(frozen=True)
class SuiteIdentity:
    """What one suite's tasks in a run were scored by and on: the tasks, whether the run is
    complete, the scorer's and corpus's identities, and how much a run with ``--limit``
    answered."""

    suite: str
    tasks: tuple[str, ...]
    complete: bool
    scorer: dict
    corpus: dict
    limited: tuple[int, int] | None = None  # (documents run, held) of a run made with --limit

    @property
    def synthetic(self) -> bool:
        """Whether the corpus is adept-eval's synthetic stand-in, not the real ADEPT."""
        return bool(self.corpus.get("synthetic"))

    @property
    def sample(self) -> bool:
        """VStyle's published sample (``identity.vstyle_corpus``), not the benchmark."""
        return bool(self.corpus.get("sample"))

    @property
    def corpus_sha256(self) -> str:
        """The corpus's sha256 ("" when not recorded)."""
        return str(self.corpus.get("sha256") or "")

    @property
    def mixed(self) -> bool:
        """Whether the suite's tasks were scored by different scorers or on different
        corpora (such a run is compared with no other)."""
        return "mixed" in self.scorer or "mixed" in self.corpus

    @property
    def people(self) -> bool:
        """ADEPT questions answered by people (the ``human`` listener)."""
        return self.suite == "adept" and self.scorer.get("listener") == "human"

    def comparable_key(self) -> tuple:
        """Key the runs that may be ranked together: only runs whose keys are equal are.

        People are compared by the listener's kind only, as ``compare`` does: the runs of one
        listening test differ by design in their responses file, participants and counts,
        which the identity records.

        Returns:
            (suite, corpus sha256, the scorer's ``scorer_key``).
        """
        scorer = {"listener": "human"} if self.people else self.scorer
        return (self.suite, self.corpus_sha256, scorer_key(scorer))


@dataclass(frozen=True)
class RunIdentity:
    """A run's identity as its results file records it: the system, adept-eval's version, and
    each suite's ``SuiteIdentity``."""

    system: str
    version: str
    suites: dict[str, SuiteIdentity] = field(default_factory=dict)

    @classmethod
    def of(cls, results: dict) -> RunIdentity | None:
        """Read the identity recorded in a results file.

        A run made with ``--limit`` is partial whatever its file says: lm-eval's ``n-samples``
        record decides, so a file whose ``complete`` flag ignores ``--limit`` is read right.

        Args:
            results: a results file's contents, as lm-eval writes them.

        Returns:
            The run's identity, or None when the file records none.
        """
        data = results.get(KEY) if isinstance(results, dict) else None
        if not isinstance(data, dict):
            return None
        suites = {}
        for name, s in (data.get("suites") or {}).items():
            tasks = tuple(s.get("tasks", ()))
            part = limited(results, tasks)
            suites[name] = SuiteIdentity(name, tasks, bool(s.get("complete")) and part is None,
                                         s.get("scorer") or {}, s.get("corpus") or {}, part)
        return cls(str(data.get("system") or "unknown"), str(data.get("version") or ""), suites)
