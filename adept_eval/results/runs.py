"""Reading lm-eval runs: results files, their logged samples and the audio they scored.

A run is read only from what it recorded: its results JSON (and ``results["adept_eval"]``, its
identity, see ``adept_eval.identity``) and the ``samples_<task>_<stamp>.jsonl`` files beside it.
Nothing here publishes: pushing runs to the Hub is ``adept_eval.results.publish``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from adept_eval.errors import PublishError
from adept_eval.identity import RunIdentity, SuiteIdentity, label
from adept_eval.suites import SUITES, Suite, suite_of, tasks_by_suite

log = logging.getLogger(__name__)


@dataclass
class Run:
    """One lm-eval run: its results JSON and, when logged, its per-sample files. Its identity
    (system, scorer, corpus, task set) is read only from what the run recorded
    (``results["adept_eval"]``, see ``adept_eval.identity``)."""

    results_path: Path
    results: dict
    samples: dict[str, Path] = field(default_factory=dict)  # task -> samples_*.jsonl
    chosen: str = ""  # how load_run chose this run among several ("" when it was the only one)

    @property
    def identity(self) -> RunIdentity | None:
        """The adept-eval identity the run records, or None for a run without one."""
        return RunIdentity.of(self.results)

    @property
    def system(self) -> str:
        """The system's name: the recorded identity's, else lm-eval's model name or model."""
        if self.identity is not None:
            return self.identity.system
        name = self.results.get("model_name") or \
            (self.results.get("config", {}).get("model_args") or {}).get("name")
        return str(name or self.results.get("config", {}).get("model", "unknown"))

    @property
    def timestamp(self) -> str:
        """The results file name's stamp, else the name without its suffix."""
        return stamp_of(self.results_path.name) or self.results_path.stem

    @property
    def file_id(self) -> tuple[int, int]:
        """The results file itself (device, inode), whatever path reached it: a folder and a
        folder inside it, a link, the file named directly. The one test of "is this the same
        run": the file decides, not its contents - a copy of it, or one system evaluated twice
        with identical samples, is another run."""
        info = self.results_path.stat()
        return info.st_dev, info.st_ino

    @property
    def when(self) -> float:
        """When the run was made: lm-eval's ``date`` (seconds), else the file name's stamp
        (``_stamp_time``)."""
        date = self.results.get("date")
        if isinstance(date, (int, float)):
            return float(date)
        return _stamp_time(self.results_path)

    def task_names(self) -> list[str]:
        """The run's ADEPT and VStyle tasks (groups left out), in the results' order."""
        return [t for t in self.results.get("results", {}) if suite_of(t) is not None
                and t in suite_of(t).tasks]

    def suite(self, name: str) -> SuiteIdentity | None:
        """What the run recorded of one suite (its scorer, corpus, tasks), or None.

        Args:
            name: the suite's name (``suites.SUITES``).

        Returns:
            The suite's recorded identity; None when the run records none or did not run it.
        """
        ident = self.identity
        return ident.suites.get(name) if ident is not None else None

    def scorer(self, suite: str) -> str | None:
        """The recorded scorer of a suite, as a short label (None: the suite was not run)."""
        if not tasks_by_suite(self.results.get("results", {})).get(suite):
            return None
        s = self.suite(suite)
        return label(s.scorer) if s is not None else "unrecorded"

    def _scored_by(self, kind: str) -> Suite | None:
        """The suite the run scored with a component of ``kind`` (``Suite.scorer``), if any."""
        return next((s for s in SUITES.values() if s.scorer == kind
                     and tasks_by_suite(self.results.get("results", {})).get(s.name)), None)

    def listener(self) -> str | None:
        """The label of the listener that scored the run's questions (None: none were run)."""
        suite = self._scored_by("listener")
        return self.scorer(suite.name) if suite is not None else None

    @property
    def people(self) -> bool:
        """Whether people answered the run's listening-test questions (the ``human``
        listener), read from the recorded scorer's kind: its label also names the responses
        file and counts."""
        suite = self._scored_by("listener")
        recorded = self.suite(suite.name) if suite is not None else None
        return recorded is not None and recorded.people

    def judge(self) -> str | None:
        """The label of the judge that scored the run's answers (None: none were run)."""
        suite = self._scored_by("judge")
        return self.scorer(suite.name) if suite is not None else None


#: lm-eval 0.4.13's run stamp, ``datetime.now().isoformat()`` with ``-`` for ``:``
STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"


def stamp_of(name: str) -> str | None:
    """The run stamp in a results file's name, or None when the name is not lm-eval's:
    ``results_<stamp>.json`` (``--output_path`` a folder) or ``<name>_<stamp>.json``
    (``--output_path <name>.json``, which lm-eval 0.4.13 writes beside its samples as
    ``samples_<task>_<stamp>.jsonl``). Both forms count: without the second such a run's logged
    samples would not be found (``report`` would print no subcategory or pooled tables and ask
    for ``--log_samples``), and a folder holding it would have "no results file".

    Args:
        name: a file name.

    Returns:
        The stamp, or None.
    """
    m = re.fullmatch(r"results_(.+)\.json", name) or re.fullmatch(rf".+_({STAMP})\.json", name)
    return m.group(1) if m else None


def run_files(path: Path) -> list[Path]:
    """The results files a folder holds (any depth, by lm-eval's names), or the file itself.

    Args:
        path: a folder or a file.

    Returns:
        The files, sorted.
    """
    return sorted(f for f in path.rglob("*.json") if stamp_of(f.name)) if path.is_dir() \
        else [path]


def load_run(path: str | Path, run: str | None = None) -> Run:
    """A results JSON, or a folder holding one or more: the newest by its timestamp, or the one
    whose timestamp or file name contains ``run``.

    Args:
        path: a results file, or a folder searched recursively for them.
        run: text the chosen run's path under ``path`` contains, or None for the newest.

    Returns:
        The run with its logged samples attached; ``Run.chosen`` says which run and among how
        many ("" for a file, or a folder holding one run).

    Raises:
        PublishError: no such file, no results file in the folder, none matching ``run``, a
            file that is not lm-eval results, or a damaged file that would change the choice.
    """
    path = Path(path)
    if path.is_dir():
        chosen = _choose_in_folder(path, run)
    elif not path.exists():
        raise PublishError(f"{path}: no such file")
    else:
        chosen = Run(path, _results_json(path))
        chosen.chosen = ""
    return attach_samples(chosen)


def _read_folder(path: Path) -> tuple[list[Run], list[tuple[Path, str]]]:
    """The folder's readable runs, and its damaged results files with why each is refused."""
    found, damaged = [], []
    for f in run_files(path):
        try:
            found.append(Run(f, _results_json(f)))
        except PublishError as exc:
            damaged.append((f, str(exc)))
    return found, damaged


def _matching_run(path: Path, run: str, found: list[Run],
                  damaged: list[tuple[Path, str]]) -> tuple[list[Run], list[tuple[Path, str]]]:
    """The runs and damaged files whose path under the folder contains ``run`` (``--run``).

    Raises:
        PublishError: nothing matches; the message lists the runs there are.
    """
    matching = [r for r in found if run in str(r.results_path.relative_to(path))]
    damaged = [d for d in damaged if run in str(d[0].relative_to(path))]
    if not matching and not damaged:
        raise PublishError(f"{path}: no run matching --run {run!r}; runs: " +
                           ", ".join(f"{r.system} {r.timestamp}" for r in found))
    return matching, damaged


def _choose_in_folder(path: Path, run: str | None) -> Run:
    """The run ``load_run`` takes from a folder, with ``Run.chosen`` set (see ``load_run``)."""
    found, damaged = _read_folder(path)
    if not found and not damaged:
        raise PublishError(f"{path}: no lm-eval results_*.json in it")
    if run:
        found, damaged = _matching_run(path, run, found, damaged)
    chosen = max(found, key=lambda r: r.when) if found else None
    _refuse_damaged(path, chosen, damaged)
    chosen.chosen = (f"{chosen.system} {chosen.timestamp} (the newest of {len(found)} runs "
                     f"under {path}; --run to choose another)") if len(found) > 1 else ""
    return chosen


def _stamp_time(path: Path) -> float:
    """When a results file was written, from its name's stamp (``results_<timestamp>.json``, else
    the name without its suffix, as ``Run.timestamp`` reads it) - the one thing known of a file
    that cannot be read - else its modification time."""
    from datetime import datetime

    try:
        day, _, clock = (stamp_of(path.name) or path.stem).partition("T")
        return datetime.fromisoformat(f"{day}T{clock.replace('-', ':', 2)}").timestamp()
    except ValueError:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0


def _refuse_damaged(folder: Path, chosen: Run | None, damaged: list[tuple[Path, str]]) -> None:
    """Refuse a run choice that a damaged results file would have changed: the only run(s)
    damaged, or a damaged one at least as new as the run that would be chosen. The newest run
    is what "this folder" means to its user - their latest work, most often one cut short while
    its results were written (a full disk, an interrupted lm_eval) - so quietly reporting or
    publishing the older intact run beside it would present stale results as the latest. An
    older damaged file does not change the choice; it is named in a warning, not ignored."""
    if not damaged:
        return
    newest = max(_stamp_time(f) for f, _ in damaged)
    if chosen is None or newest >= _stamp_time(chosen.results_path):
        why = ("the only results file there is damaged" if chosen is None and len(damaged) == 1
               else "the only results files there are damaged" if chosen is None else
               f"a results file newer than the newest intact run ({chosen.results_path.name}) "
               "is damaged")
        raise PublishError(
            f"{folder}: {why}; remove or repair it (lm-eval may have been stopped while writing "
            "it - run it again), or name the intact run with --run or its results file: " +
            "; ".join(msg for _, msg in damaged))
    for _, msg in damaged:
        log.warning("skipping an older damaged results file: %s", msg)


def _results_json(path: Path) -> dict:
    """An lm-eval results file's contents; PublishError naming the file when it is not one."""
    what = ("an lm-eval results JSON (results_<timestamp>.json, or the --output_path folder "
            "holding it)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PublishError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise PublishError(f"{path}: not {what}: it is not text") from None
    except ValueError as exc:
        raise PublishError(f"{path}: not {what}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise PublishError(f"{path}: not {what}: it has no \"results\" object")
    return data


def logged_samples(path: str | Path):
    """(line number, record) of every line of an lm-eval logged-samples file
    (``samples_<task>_<time>.jsonl``), blank lines skipped: the one reader of those files. A
    line that is not JSON is a PublishError naming the file and the line."""
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise PublishError(f"{path}:{line_no}: not a logged sample, the file is damaged "
                                   f"({exc})") from None
            yield line_no, record


def attach_samples(run: Run) -> Run:
    """Find the run's logged samples (``samples_<task>_<timestamp>.jsonl`` beside its results)."""
    stamp = run.timestamp
    for sample in run.results_path.parent.glob(f"samples_*_{stamp}.jsonl"):
        task = sample.name[len("samples_"): -len(f"_{stamp}.jsonl")]
        run.samples[task] = sample
    return run


def samples_mismatch(run: Run, tasks: list[str]) -> str | None:
    """Why a run's logged samples cannot stand for its results, or None: a task whose samples
    file holds fewer or more questions than the results say it ran (lm-eval's ``n-samples``),
    or - when the run logged samples at all - a task without its file. The pooled interval and
    the graded figures are read from the samples, so such a run (samples cut short or edited,
    a file lost) would be ranked as complete on a subset: 155 questions where the results say
    165, a prosody distance over 11 of the 12 tasks. ``compare`` refuses such a run (its pairing
    rests on the samples alone) and ``report`` reads its figures from the results alone."""
    if not run.samples:
        return None  # no samples logged: every figure comes from the results themselves
    counts = run.results.get("n-samples") or {}
    problems = []
    for task in tasks:
        if task not in run.samples:
            problems.append(f"{task}: no samples file")
            continue
        want = (counts.get(task) or {}).get("effective")
        if want is None:
            continue
        have = sum(1 for _ in logged_samples(run.samples[task]))
        if have != int(want):
            problems.append(f"{task}: {have} logged samples, the results say {int(want)}")
    if not problems:
        return None
    return "logged samples do not match the results (" + "; ".join(problems) + ")"


#: adept-eval's own working folders inside a results tree: ``publish``'s prepared upload (a copy
#: of a run's results.json without its samples) and ``leaderboard --from-hub``'s download. A
#: folder search never counts them as runs: publishing must not change what a later
#: ``leaderboard`` of the same folder computes.
STAGING_DIRS = frozenset({"hub_upload", "_hub_runs"})


#: the name lm-eval gives a results file
RESULTS_NAME = re.compile(r"results_.+\.json")


def find_runs(paths: list[str | Path]) -> list[Run]:
    """Every lm-eval run under ``paths`` (folders searched recursively, or results files),
    skipping adept-eval's own staging folders (``STAGING_DIRS``) inside a searched folder.

    Each results file is one run however many of the paths reach it (``Run.file_id``), so
    that ``out/ out/my-tts``, or a link to a run's folder, which name one run twice, count it
    once. Every path must hold a run (perhaps one an earlier path reached too): a mistyped or
    empty one beside good ones is a PublishError naming it, not a system left out without a
    word. So is a damaged (truncated, unreadable) ``results_*.json``: skipping it would leave its
    system off the table, or rank its older run, as though nothing were wrong.

    Args:
        paths: folders and results files.

    Returns:
        The runs, each once, with their logged samples attached.

    Raises:
        PublishError: a path that does not exist or holds no run, or a damaged results file.
    """
    runs: list[Run] = []
    seen: set[tuple[int, int]] = set()
    for source in paths:
        for run in _runs_at(source):
            if run.file_id not in seen:
                seen.add(run.file_id)
                # with its logged samples: the pooled figures' intervals need the stimuli
                runs.append(attach_samples(run))
    return runs


def _candidate_files(path: Path) -> list[Path]:
    """The JSON files under a folder that may be results files, outside ``STAGING_DIRS``; a
    file stands for itself."""
    if not path.is_dir():
        return [path]
    return sorted(f for f in path.rglob("*.json")
                  if (f.name.startswith("results") or stamp_of(f.name))
                  and not STAGING_DIRS & set(f.relative_to(path).parts[:-1]))


def _read_candidate(f: Path, source: Path):
    """A candidate file's JSON, or None when it is unreadable and not lm-eval's own file.

    Raises:
        PublishError: lm-eval's own results file (or the file named itself) is damaged: a run
            cut short, and leaving it out would rank the other systems as if its system had
            never been evaluated.
    """
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if not (RESULTS_NAME.fullmatch(f.name) or f == source):
            return None
        what = (f"cannot be read ({exc.strerror or exc})" if isinstance(exc, OSError) else
                "it is not text" if isinstance(exc, UnicodeDecodeError) else
                f"not JSON ({exc})")
        raise PublishError(
            f"{f}: a damaged lm-eval results file: {what}; remove or repair it "
            "(lm-eval may have been stopped while writing it - run it again)") from None


def _runs_at(source: str | Path) -> list[Run]:
    """The runs one of ``find_runs``' paths holds (samples not yet attached).

    Raises:
        PublishError: the path does not exist or holds no run, or a results file is damaged.
    """
    path = Path(source)
    if not path.exists():
        raise PublishError(f"{source}: no such file or folder")
    found = []
    for f in _candidate_files(path):
        data = _read_candidate(f, path)
        if isinstance(data, dict) and "results" in data and "configs" in data:
            found.append(Run(f, data))
    if not found:
        raise PublishError(f"{source}: no lm-eval results file (results_*.json) there")
    return found



def audio_files(run: Run) -> dict[str, Path]:
    """stimulus id -> the system's audio file, from the logged model outputs.

    A path is logged as the system gave it - relative to the folder lm_eval ran in when its
    ``path=`` was relative - and that folder is not recorded. So a relative path is resolved
    against the first of the results file's folder and the folders above it (where lm_eval ran
    when ``--output_path`` was relative too), then the current folder, where every logged file
    exists (else where most do); left as logged, ``publish --audio`` from anywhere else would
    find none and upload no audio without a word. Files found nowhere keep their logged path, for
    ``stage_run`` to name."""
    out = {item["id"]: Path(item["path"]).expanduser() for item in _scored_outputs(run)}
    relative = [p for p in out.values() if not p.is_absolute()]
    if relative:
        folder = run.results_path.resolve().parent
        bases = [folder, *folder.parents, Path.cwd()]
        found = [sum((b / p).is_file() for p in relative) for b in bases]
        if max(found):
            base = bases[found.index(max(found))]
            out = {sid: p if p.is_absolute() else base / p for sid, p in out.items()}
    return out


def _scored_outputs(run: Run):
    """The system's usable samples as its logged model outputs record them (id, path and,
    from runs that recorded it, the sha256 of the bytes scored)."""
    for samples_file in run.samples.values():
        for _, s in logged_samples(samples_file):
            for resp in (s.get("resps") or [[]])[0][:1]:
                try:
                    produced = json.loads(resp)
                except (TypeError, ValueError):
                    continue
                for item in produced.get("samples", []):
                    if item.get("status") == "ok" and item.get("path"):
                        yield item


def changed_audio(run: Run, files: dict[str, Path]) -> list[str]:
    """The files among ``files`` whose bytes are not those the run scored (the digest its
    logged outputs recorded); a run that recorded none (made before digests were logged)
    cannot be checked and gives none."""
    from adept_eval.signal.content_keys import file_digest

    recorded = {item["id"]: item["sha256"] for item in _scored_outputs(run)
                if isinstance(item.get("sha256"), str)}
    return sorted(str(path) for sid, path in files.items()
                  if sid in recorded and path.is_file() and file_digest(path) != recorded[sid])
