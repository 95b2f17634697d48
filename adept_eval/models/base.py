"""The system under test is lm-eval's ``--model``: it turns stimuli into audio files.

``SpeechSystem`` adapts lm-eval's request/response protocol: for ``generate_until`` requests
from adept-eval tasks, it makes (or finds) the audio for every stimulus of every question once,
checks it, and answers each request with a JSON record of the files it produced. The task's
``process_results`` hands those files to the chosen listener. Subclasses implement only
``produce``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lm_eval.api.model import LM
from tqdm.auto import tqdm

from adept_eval.errors import SystemSetupError
from adept_eval.signal.audio import check_audio
from adept_eval.options import yes_no
from adept_eval.suites import suite_of

log = logging.getLogger(__name__)

# keyword arguments lm-eval passes to every model that a speech system has no use for
LM_EVAL_GENERIC = {"batch_size", "max_batch_size", "device"}


@dataclass(frozen=True)
class Stimulus:
    """What a system needs to produce one sample: the text and the reference to follow."""

    stimulus_id: str  # "emotion/fear/ad00_0001" (ADEPT) or a record id (VStyle)
    text: str
    reference_audio: str  # ADEPT: the recording whose prosody to transfer; VStyle: the instruction
    speaker: str = ""
    compare_duration: bool = True  # a sample far longer/shorter than the reference is unusable


@dataclass(frozen=True)
class Produced:
    """One stimulus' sample as a system produced it: its file when usable, else why not."""
    stimulus_id: str
    path: str | None
    status: str  # "ok" | "failed"
    problem: str = ""
    #: the sha256 (first 32 hex digits) of the file as it was scored: the logged samples name a
    #: path, and ``publish --audio`` refuses a file that no longer has these bytes
    sha256: str = ""

    def to_json(self) -> dict:
        """The sample as its JSON record (the digest only when known).

        Returns:
            The record.
        """
        return {"id": self.stimulus_id, "path": self.path, "status": self.status,
                "problem": self.problem, **({"sha256": self.sha256} if self.sha256 else {})}


class SampleObserver(Protocol):
    """What a higher layer registers (``observe_samples``) to hear of a run's samples as soon as
    they exist, before lm-eval scores them: the ADEPT harness hands them to its listener then,
    so the listener can start its work in the background."""

    def samples_produced(self, requests, produced: dict[str, Produced]) -> None:
        """Every sample of the run exists and passed or failed its check.

        Args:
            requests: lm-eval's requests, in the order lm-eval will score them (each has the
                document it came from as ``doc``).
            produced: stimulus id -> the ``Produced`` record of its sample.
        """

    def samples_abandoned(self) -> None:
        """The run stops before scoring: drop whatever ``samples_produced`` started."""


#: the observers told of every run's samples, in the order they registered
SAMPLE_OBSERVERS: list[SampleObserver] = []


def observe_samples(observer: SampleObserver) -> None:
    """Register ``observer`` to hear of every run's samples (once: registering it again does
    nothing).

    Args:
        observer: an object with the ``SampleObserver`` methods.
    """
    if not any(known is observer for known in SAMPLE_OBSERVERS):
        SAMPLE_OBSERVERS.append(observer)


class SpeechSystem(LM):
    """Base class of systems that answer adept-eval requests with audio files."""

    #: how the system is named in results, tables and on the Hub
    default_name = "speech-system"

    #: what happens when samples are missing or unusable: "error" stops before any scoring
    #: with a list of them; "wrong" goes on without them (``ON_MISSING_WRONG`` says what each
    #: suite makes of that)
    default_on_missing = "error"

    def __init__(self, name: str | None = None, on_missing: str | None = None,
                 check_samples: bool = True, **kwargs):
        super().__init__()
        self.refuse_unknown_args(kwargs)
        self.name = str(name or self.default_name)
        self.on_missing = str(on_missing or self.default_on_missing)
        if self.on_missing not in ("error", "wrong"):
            raise SystemSetupError(f"on_missing must be 'error' or 'wrong', not {on_missing!r}")
        self.check_samples = yes_no(check_samples, "check_samples", "--model_args")

    @classmethod
    def refuse_unknown_args(cls, kwargs: dict) -> None:
        """One message naming any ``--model_args`` key the system does not take, with the keys
        it does; called first by a subclass whose own checks would otherwise speak first
        (``dir=`` for ``path=`` read "needs path=FOLDER", not that ``dir`` is unknown)."""
        unknown = set(kwargs) - LM_EVAL_GENERIC - set(model_args_keys(cls))
        if unknown:
            raise SystemSetupError(
                f"{cls.__name__}: unknown --model_args {', '.join(sorted(unknown))}; its keys "
                f"are {', '.join(model_args_keys(cls))} (the run's, the listener's and the "
                "judge's options - corpus, listener, responses, judge_... - go in --metadata)")

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        """The system name a run with these model_args gets (results, Hub): ``name=`` or the
        class default."""
        return str(args.get("name") or cls.default_name)

    # -- what subclasses implement ----------------------------------------------------------
    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        """Produce each stimulus' sample.

        Args:
            stimuli: the stimuli.

        Returns:
            One ``Produced`` per stimulus, in order.

        Raises:
            NotImplementedError: a subclass must implement it.
        """
        raise NotImplementedError

    def describe(self) -> dict:
        """Identity recorded with every sample (no secrets)."""
        return {"system": self.name, "model": type(self).__name__, "on_missing": self.on_missing}

    # -- lm-eval protocol -------------------------------------------------------------------
    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """lm-eval's generation: produce every sample the requests need, check it, and
        answer each request with the JSON record of its samples.

        Args:
            requests: lm-eval's requests (each with its document as ``doc``).
            disable_tqdm: ignored (lm-eval's signature).

        Returns:
            One JSON record per request, in order.

        Raises:
            SystemSetupError: samples are missing or unusable beyond what ``on_missing`` allows.
        """
        wanted: dict[str, Stimulus] = {}
        for req in requests:
            for stim in stimuli_of(req.doc):
                wanted.setdefault(stim.stimulus_id, stim)
        produced = {p.stimulus_id: p for p in self.produce(list(wanted.values()))}
        if self.check_samples:
            produced = self._checked(produced, wanted)
        # refused before anything else is done with them: no digest read, no analysis started
        self._refuse_unusable(requests, produced)
        produced = with_digests(produced)
        # the observers (the ADEPT harness: its listener) may start on the samples in the
        # background; a refused file is marked failed, so none of them analyses it
        observers = tuple(SAMPLE_OBSERVERS)
        for observer in observers:
            observer.samples_produced(requests, produced)
        try:
            return self._answers(requests, produced)
        except BaseException:
            for observer in observers:
                observer.samples_abandoned()
            raise

    def _refuse_unusable(self, requests, produced: dict[str, Produced]) -> None:
        """Stop the run, with one message, when a sample is missing or unusable and
        ``on_missing`` is "error"; or, whatever ``on_missing`` says, when none of the samples
        a suite's tasks asked for is usable: ``on_missing=wrong`` goes on without some
        samples, not without all of them - a run with none (a mistyped path=, a pattern= that
        matches nothing) would report an ADEPT accuracy of 0, or VStyle's every instruction
        failed, for a system never heard. Checked per suite, so ``--tasks adept,vstyle`` with
        a VStyle pattern that matches nothing is refused too.

        Args:
            requests: lm-eval's requests (each with its document as ``doc``).
            produced: stimulus id -> its sample.

        Raises:
            SystemSetupError: as above.
        """
        failed = [p for p in produced.values() if p.status != "ok"]
        if failed and self.on_missing == "error":
            self._refuse_any_failed(requests, produced, failed)
        if not failed:
            return
        self._refuse_suite_without_samples(_produced_by_suite(requests, produced))
        log.warning("%s: %d of %d samples missing or unusable; on_missing=wrong %s. %s",
                    self.name, len(failed), len(produced),
                    on_missing_wrong(requests, failed, "does"), first_reasons(failed))

    def _refuse_any_failed(self, requests, produced: dict[str, Produced],
                           failed: list[Produced]) -> None:
        """Stop the run over failed samples (``on_missing=error``), listing up to 50 of them.

        Args:
            requests: lm-eval's requests.
            produced: stimulus id -> its sample.
            failed: the samples that are missing or unusable (not empty).

        Raises:
            SystemSetupError: always.
        """
        shown = [f"{p.stimulus_id}: {p.problem}" for p in failed[:50]]
        more = [f"... and {len(failed) - 50} more"] if len(failed) > 50 else []
        raise SystemSetupError(
            f"{self.name}: {len(failed)} of {len(produced)} samples are missing or unusable; "
            "nothing was scored. Fix them, or pass on_missing=wrong in --model_args to "
            f"{on_missing_wrong(requests, failed, 'do')}:\n  " + "\n  ".join(shown + more))

    def _refuse_suite_without_samples(self, by_suite: dict[str, dict[str, Produced]]) -> None:
        """Stop the run when a suite's tasks have no usable sample at all.

        Args:
            by_suite: suite name ("" for none) -> stimulus id -> sample its tasks ask for.

        Raises:
            SystemSetupError: a suite's samples are all missing or unusable.
        """
        for suite, mine in by_suite.items():
            if mine and all(p.status != "ok" for p in mine.values()):
                whose = f" its {suite} tasks ask for" if len(by_suite) > 1 and suite else ""
                dead = list(mine.values())
                raise SystemSetupError(
                    f"{self.name}: none of the {len(dead)} samples{whose} is usable, so there "
                    "is nothing to score (on_missing=wrong goes on without some samples, not "
                    f"without all of them). {first_reasons(dead, logged=False)}")

    def _answers(self, requests, produced: dict[str, Produced]) -> list[str]:
        """Each request's answer: the JSON record of its samples."""
        out = []
        for req in requests:
            records = [produced[s.stimulus_id].to_json() for s in stimuli_of(req.doc)]
            out.append(json.dumps({**self.describe(), "samples": records}, ensure_ascii=False))
        return out

    def _checked(self, produced: dict[str, Produced], wanted: dict[str, Stimulus]):
        """Unusable audio (unreadable, silent, far off in length...) fails that stimulus."""
        out = {}
        for sid, p in tqdm(produced.items(), desc=f"{self.name}: checking audio", unit="file",
                           disable=len(produced) < 20):
            if p.status == "ok" and p.path:
                problem = sample_problem(p.path, wanted[sid])
                if problem:
                    p = Produced(sid, p.path, "failed", problem)
            out[sid] = p
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        """Refuse likelihood tasks: a speech system produces audio.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(f"{type(self).__name__} produces audio; it can only run "
                                  "adept-eval tasks (generate_until), not likelihood tasks")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        """Refuse likelihood tasks: a speech system produces audio.

        Raises:
            NotImplementedError: always.
        """
        return self.loglikelihood(requests)

    @property
    def tokenizer_name(self) -> str:
        """lm-eval's tokenizer name: the system's name (it has no tokenizer).

        Returns:
            The name.
        """
        return self.name


#: what ``on_missing=wrong`` makes of a missing sample, per suite (as "to do" and "it does"):
#: an ADEPT question without its sample is answered wrong; the VStyle judge cannot judge an
#: answer it does not have, so the instruction is a counted failure (``n_failed``), never a score
ON_MISSING_WRONG = {
    "adept": ("score the ADEPT questions that need them as wrong answers",
              "scores the ADEPT questions that need them as wrong answers"),
    "vstyle": ("count the VStyle instructions left unanswered as failed judgements "
               "(n_failed; never scored)",
               "counts the VStyle instructions left unanswered as failed judgements "
               "(n_failed; never scored)"),
}


def _produced_by_suite(requests, produced: dict[str, Produced]) -> dict[str, dict[str, Produced]]:
    """The samples each suite's tasks ask for.

    Args:
        requests: lm-eval's requests (each with ``task_name`` and ``doc``).
        produced: stimulus id -> its sample.

    Returns:
        Suite name ("" for a task of no suite) -> stimulus id -> sample.
    """
    by_suite: dict[str, dict[str, Produced]] = {}
    for req in requests:
        suite = suite_of(getattr(req, "task_name", None) or "")
        mine = by_suite.setdefault(suite.name if suite is not None else "", {})
        mine.update((s.stimulus_id, produced[s.stimulus_id]) for s in stimuli_of(req.doc)
                    if s.stimulus_id in produced)
    return by_suite


def _on_missing_suite(req) -> str:
    """The ``ON_MISSING_WRONG`` entry that describes a request's task ("adept" by default).

    Args:
        req: an lm-eval request.

    Returns:
        A key of ``ON_MISSING_WRONG``.
    """
    suite = suite_of(getattr(req, "task_name", None) or "")
    return suite.name if suite is not None and suite.name in ON_MISSING_WRONG else "adept"


def on_missing_wrong(requests, failed: list[Produced], form: str) -> str:
    """What ``on_missing=wrong`` does with these failed samples, in the words of the suites
    whose tasks asked for them (a VStyle run told "scored as wrong answers" would expect scores
    where it gets failures).

    Args:
        requests: lm-eval's requests.
        failed: the missing or unusable samples.
        form: "do" (to follow "to") or "does".

    Returns:
        The phrase, one clause per suite joined by "and".
    """
    ids = {p.stimulus_id for p in failed}
    names = []
    for req in requests:
        name = _on_missing_suite(req)
        if name not in names and ids & {s.stimulus_id for s in stimuli_of(req.doc)}:
            names.append(name)
    return " and ".join(ON_MISSING_WRONG[n][form == "does"] for n in names or ["adept"])


def model_args_keys(cls) -> list[str]:
    """The ``--model_args`` keys a system class takes: its constructors' named parameters,
    down its base classes (a subclass passes the rest on as ``**kwargs``)."""
    import inspect

    keys: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or not issubclass(klass, SpeechSystem):
            continue
        for param in inspect.signature(klass.__init__).parameters.values():
            if param.name != "self" and param.kind in (param.POSITIONAL_OR_KEYWORD,
                                                       param.KEYWORD_ONLY) \
                    and param.name not in keys:
                keys.append(param.name)
    return keys


def with_digests(produced: dict[str, Produced]) -> dict[str, Produced]:
    """Each usable sample with the digest of its bytes (``Produced.sha256``). Read through the
    feature cache's index of content keys (``content_keys``), so the listener, keying its
    features by the same digests, does not read the files a second time, and a rerun reads
    none whose ``stat`` has not changed."""
    import os
    from dataclasses import replace

    from adept_eval.signal.content_keys import for_directory
    from adept_eval.paths import cache_home

    out = {}
    keys = None
    for sid, p in produced.items():
        if p.status == "ok" and p.path and not p.sha256:
            if keys is None:
                keys = for_directory(os.path.abspath(cache_home() / "features"))
            try:
                p = replace(p, sha256=keys.digest(p.path))
            except OSError:  # gone or unreadable since it was checked: the listener says so
                pass
        out[sid] = p
    return out


def first_reasons(failed: list[Produced], shown: int = 3, logged: bool = True) -> str:
    """The first few failures with their reasons, for a console that would otherwise say only
    how many failed; ``logged``: the run goes on, so every reason will be in the logged
    samples (a run refused before scoring logs none)."""
    lines = [f"{p.stimulus_id}: {p.problem or p.status}" for p in failed[:shown]]
    where = "; every reason is in the logged samples" if logged else ""
    more = f" (and {len(failed) - shown} more{where})" if len(failed) > shown else ""
    return "First: " + "; ".join(lines) + more


def sample_problem(path: str | Path, stimulus: Stimulus) -> str:
    """Why the file ``path`` is not a usable sample of ``stimulus`` (the audio check's errors,
    its length against the reference's included), or "" when it is."""
    import soundfile as sf

    ref = stimulus.reference_audio
    ref_dur = sf.info(ref).duration if stimulus.compare_duration and ref and \
        Path(ref).exists() else None
    report = check_audio(path, reference_duration=ref_dur)
    if report.ok:
        return ""
    return "; ".join(x.message for x in report.problems if x.severity == "error")


def stimuli_of(doc: dict) -> list[Stimulus]:
    """The stimuli an adept-eval document asks the system to produce."""
    compare = bool(doc.get("compare_duration", True))
    return [Stimulus(sid, text, ref, doc.get("speaker", ""), compare)
            for sid, text, ref in zip(doc["stimuli"], doc["stimulus_texts"],
                                      doc["stimulus_references"])]
