"""Is adept-eval a good guest in lm-eval? The pieces that check it against lm-eval running
without adept-eval: an ordinary local YAML task for lm-eval's ``dummy`` model, the comparison of
two runs' results and samples (timestamps and paths aside), and the comparison of two runs of
lm-eval's own test suite (JUnit XML). Used by ``.ci/lm_eval_guest.py`` (lm-eval with adept-eval
installed against lm-eval without it) and by the tests (the start-up hook on against off).
Standard library only: the CI script runs it before anything is installed.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

#: the ordinary local tasks (neither name nor data is adept-eval's)
TASKS = ("guest_choice", "guest_generate")

_DOCS = [
    {"question": "Which is a colour?", "choices": ["red", "seven", "Tuesday"], "answer": 0},
    {"question": "Which is a number?", "choices": ["blue", "nine", "Friday"], "answer": 1},
    {"question": "Which is a day?", "choices": ["green", "three", "Monday"], "answer": 2},
    {"question": "Which is a month?", "choices": ["June", "four", "Sunday"], "answer": 0},
    {"question": "Which is an animal?", "choices": ["stone", "cat", "river"], "answer": 1},
]

_CHOICE_YAML = """task: guest_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: answer
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

_GENERATE_YAML = """task: guest_generate
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{choices[answer]}}}}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

#: what differs between two runs of the same evaluation whatever is installed: when it ran
TIMESTAMP_KEYS = frozenset({"date", "start_time", "end_time", "total_evaluation_time_seconds"})
_STAMP_IN_NAME = re.compile(r"_\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+")


def write_local_tasks(folder: Path) -> Path:
    """Write two ordinary lm-eval tasks (multiple choice and generation) over a local JSON
    Lines file, the way an lm-eval user writes their own.

    Args:
        folder: where the YAMLs and data go (created).

    Returns:
        The folder, for ``--include_path``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "guest.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in _DOCS), encoding="utf-8")
    (folder / "guest_choice.yaml").write_text(_CHOICE_YAML.format(data=data), encoding="utf-8")
    (folder / "guest_generate.yaml").write_text(_GENERATE_YAML.format(data=data),
                                                encoding="utf-8")
    return folder


def run_files(output: Path) -> dict[str, Path]:
    """The results and samples files one run wrote under ``--output_path``, by name with the
    timestamp taken out.

    Args:
        output: the run's ``--output_path`` folder.

    Returns:
        Name (relative to ``output``, timestamp removed) -> file.
    """
    return {_STAMP_IN_NAME.sub("", str(p.relative_to(output))): p
            for p in sorted(output.rglob("*.json*")) if p.is_file()}


def _without_stamps(value, paths: dict[str, str]):
    """A results document with its timestamps dropped and its run's own paths named alike."""
    if isinstance(value, dict):
        return {k: _without_stamps(v, paths) for k, v in value.items()
                if k not in TIMESTAMP_KEYS}
    if isinstance(value, list):
        return [_without_stamps(v, paths) for v in value]
    if isinstance(value, str):
        for path, name in paths.items():
            value = value.replace(path, name)
    return value


def differences(first: Path, second: Path, paths: dict[str, str] | None = None) -> list[str]:
    """How two runs' outputs differ: the same files, and each file the same byte for byte once
    timestamps are dropped and each run's own folders are named alike.

    Args:
        first: one run's ``--output_path``.
        second: the other's.
        paths: extra text -> placeholder replacements (each run's folder is replaced
            already).

    Returns:
        One line per difference; empty when the runs agree.
    """
    out = []
    files = [run_files(first), run_files(second)]
    for name in sorted(set(files[0]) ^ set(files[1])):
        out.append(f"{name}: written by one run only")
    for name in sorted(set(files[0]) & set(files[1])):
        texts = []
        for run, root in zip(files, (first, second)):
            names = {str(root): "<output>", **(paths or {})}
            text = run[name].read_text(encoding="utf-8")
            docs = [json.loads(line) for line in text.splitlines() if line.strip()] \
                if name.endswith(".jsonl") else [json.loads(text)]
            texts.append(json.dumps(_without_stamps(docs, names), ensure_ascii=False,
                                    sort_keys=False))
        if texts[0] != texts[1]:
            at = next(i for i, (a, b) in enumerate(zip(*texts)) if a != b) \
                if any(a != b for a, b in zip(*texts)) else min(map(len, texts))
            out.append(f"{name}: differs at character {at}: "
                       f"{texts[0][max(0, at - 60):at + 60]!r} vs "
                       f"{texts[1][max(0, at - 60):at + 60]!r}")
    return out


@dataclass(frozen=True)
class Outcomes:
    """One run of a test suite, read from its JUnit XML.

    Attributes:
        by_test: test id (``file::class::name``) -> passed, failed, error or skipped.
    """

    by_test: dict

    def count(self, outcome: str) -> int:
        """How many tests ended so."""
        return sum(1 for o in self.by_test.values() if o == outcome)

    def summary(self) -> str:
        """``N passed, N failed, N error, N skipped`` (n tests)."""
        parts = [f"{self.count(o)} {o}" for o in ("passed", "failed", "error", "skipped")]
        return f"{', '.join(parts)} ({len(self.by_test)} tests)"


def read_junit(path: Path) -> Outcomes:
    """Read a JUnit XML report (pytest ``--junitxml``).

    Args:
        path: the report.

    Returns:
        Each test's outcome.
    """
    by_test = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        outcome = ("error" if "error" in tags else "failed" if "failure" in tags
                   else "skipped" if "skipped" in tags else "passed")
        # a test that fails and then errors in teardown is reported twice: keep the worse
        if by_test.get(test) not in ("error", "failed"):
            by_test[test] = outcome
    return Outcomes(by_test)


def read_expected_failures(path: Path) -> dict[str, str]:
    """A recorded list of tests that fail for reasons of their own (``.ci/lm_eval_offline_failures``).

    Args:
        path: the list: ``#`` comment lines, then one test a line, its id, a tab, the reason.

    Returns:
        Test id -> reason.
    """
    listed = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            test, _, reason = line.partition("\t")
            listed[test.strip()] = reason.strip()
    return listed


def unexpected_failures(outcomes: Outcomes, expected: dict[str, str]) -> tuple[list, list]:
    """Compare a run's failures with the recorded list.

    Args:
        outcomes: the run (without adept-eval).
        expected: the recorded failures (test id -> reason).

    Returns:
        (tests that failed or errored but are not listed, listed tests that did not fail).
    """
    failing = {t for t, o in outcomes.by_test.items() if o in ("failed", "error")}
    return sorted(failing - set(expected)), sorted(set(expected) - failing)


def outcome_differences(first: Outcomes, second: Outcomes) -> list[str]:
    """Tests whose outcome differs between two runs (or that ran in one only).

    Args:
        first: the run without adept-eval.
        second: the run with it.

    Returns:
        One line per test, ``test: first -> second``; empty when they agree.
    """
    tests = sorted(set(first.by_test) | set(second.by_test))
    return [f"{t}: {first.by_test.get(t, 'not run')} -> {second.by_test.get(t, 'not run')}"
            for t in tests if first.by_test.get(t) != second.by_test.get(t)]


_LOG_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}:\d{2}:\d{2}:\d{2} ")
#: a progress bar (tqdm's ``[00:00<00:01, ...]`` or ``[00:00, ...]``): its rates differ run to run
_PROGRESS = re.compile(r"\[\d+:\d\d[<,]")


def log_differences(first: str, second: str, paths: dict[str, str]) -> list[str]:
    """How two runs' console logs differ, line by line, once timestamps, progress bars and each
    run's own paths are set aside (the lines lm-eval logs, their source lines and how often
    each is logged all count).

    Args:
        first: one run's stderr (or stdout).
        second: the other's.
        paths: text -> placeholder, for each run's own folders (both runs' are replaced).

    Returns:
        One line per differing line; empty when the logs agree.
    """
    def lines(text):
        out = []
        for line in text.splitlines():
            if _PROGRESS.search(line):
                continue
            line = _LOG_STAMP.sub("", line)
            for path, name in paths.items():
                line = line.replace(path, name)
            out.append(line)
        return out

    a, b = lines(first), lines(second)
    import difflib

    return [d for d in difflib.unified_diff(a, b, "first", "second", lineterm="", n=0)
            if d.startswith(("+", "-")) and not d.startswith(("+++", "---"))]


def lm_eval_with_and_without(argv, cwd: Path, env: dict) -> dict:
    """Run the same ``lm_eval`` command line with adept-eval's start-up hook on and switched off
    (``ADEPT_EVAL_NO_LM_EVAL_HOOK=1``: lm-eval as it is without adept-eval).

    Args:
        argv: the command line, the ``lm_eval`` executable first; or a function of the run's
            label (``"with"``, ``"without"``) returning it (to give each run its own folder).
        cwd: the folder to run in.
        env: the environment (the hook switch is set or removed here).

    Returns:
        ``{"with": CompletedProcess, "without": CompletedProcess}`` (text output captured).
    """
    import subprocess

    base = {k: v for k, v in env.items() if k != "ADEPT_EVAL_NO_LM_EVAL_HOOK"}
    return {label: subprocess.run([str(a) for a in (argv(label) if callable(argv) else argv)],
                                  cwd=cwd, capture_output=True, text=True, timeout=600,
                                  env={**base, **extra})
            for label, extra in (("with", {}), ("without", {"ADEPT_EVAL_NO_LM_EVAL_HOOK": "1"}))}
