#!/usr/bin/env python3
"""CI: adept-eval changes nothing in lm-eval outside its own tasks, models and options.

For each supported lm-eval version: a fresh venv with ``lm_eval[dev]`` at that version and
adept-eval (from this checkout) runs

1. lm-eval's own test suite, from lm-eval's sdist on PyPI, offline (``HF_HUB_OFFLINE`` and
   friends: the tests that need the Hub fail alike in both runs, quickly), and
2. ``lm_eval --model dummy`` on two ordinary local YAML tasks (``testing/lm_eval_guest.py``),
   with ``--log_samples``;

then adept-eval is uninstalled (its start-up ``.pth`` with it; every other package stays, so
adept-eval is the only difference) and both run again. Any test whose outcome differs, any
byte of the dummy run's results or samples that differs (timestamps and the run's own folder
aside), and any line of its console log that differs (timestamps and progress bars aside)
fails the check. Prints each run's counts and times.

Usage: ``python .ci/lm_eval_guest.py [--work DIR] [--versions 0.4.13,...]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from testing.lm_eval_guest import (  # noqa: E402
    TASKS, differences, log_differences, outcome_differences, read_expected_failures,
    read_junit, unexpected_failures, write_local_tasks)

#: the lm-eval versions adept-eval supports (setup.cfg: lm-eval>=0.4.13,<0.5), each checked
SUPPORTED = ("0.4.13",)
#: each version's tests that fail offline without adept-eval, with the reason: ``VERSION.txt``
EXPECTED = REPO / ".ci" / "lm_eval_offline_failures"

#: offline: lm-eval's tests that need the Hub fail alike, and fast, with adept-eval or without
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}


def run(argv, **kwargs) -> subprocess.CompletedProcess:
    """Run a command, echoing it; raise on failure unless ``check=False``."""
    print("+", " ".join(map(str, argv)), flush=True)
    kwargs.setdefault("check", True)
    return subprocess.run(list(map(str, argv)), **kwargs)


def make_venv(folder: Path, version: str) -> Path:
    """A fresh venv with lm-eval's test extra at ``version`` and adept-eval from this checkout.

    Returns:
        The venv's ``bin`` folder.
    """
    run([sys.executable, "-m", "venv", folder])
    pip = [folder / "bin" / "python", "-m", "pip", "install", "--quiet"]
    run([*pip, "--upgrade", "pip"])
    run([*pip, f"lm_eval[dev]=={version}"])
    run([*pip, REPO])
    return folder / "bin"


def lm_eval_sources(version: str, work: Path) -> Path:
    """lm-eval's sdist from PyPI, unpacked (its ``tests/`` read files beside them, such as
    ``lm_eval/tasks/bbh``: they run from the unpacked folder, against the installed lm-eval).

    Returns:
        The unpacked folder.
    """
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
         "--no-deps", f"lm_eval=={version}", "-d", work])
    archive, = work.glob(f"lm_eval-{version}.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return work / f"lm_eval-{version}"


def lm_eval_tests(bin_dir: Path, sources: Path, report: Path, env: dict) -> float:
    """Run lm-eval's own tests (two workers) into a JUnit report.

    Runs ``bin/pytest`` from the sdist folder with ``PYTHONSAFEPATH``: the folder is not put on
    ``sys.path``, so the tests import the *installed* lm-eval (and adept-eval's hook, when it is
    installed), not the sdist's copy.

    Returns:
        The wall time, in seconds.
    """
    start = time.monotonic()
    done = run([bin_dir / "pytest", "tests", "-n", "2", "-q", "-p", "no:cacheprovider",
                "-o", "addopts=", f"--junitxml={report}", "-o", "junit_family=xunit1"],
               cwd=sources, env={**env, "PYTHONSAFEPATH": "1"}, check=False,
               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
    print("  ", *tail, flush=True)
    if not report.exists():
        print(done.stdout[-5000:])
        raise SystemExit(f"error: lm-eval's tests wrote no report ({report})")
    return time.monotonic() - start


def dummy_run(bin_dir: Path, tasks: Path, output: Path, env: dict) -> tuple[str, float]:
    """``lm_eval --model dummy`` on the local tasks, samples logged.

    Returns:
        (its stderr and stdout, the wall time in seconds).
    """
    start = time.monotonic()
    done = run([bin_dir / "lm_eval", "--model", "dummy", "--tasks", ",".join(TASKS),
                "--include_path", tasks, "--output_path", output, "--log_samples"],
               cwd=output.parent, env=env, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-5000:])
        raise SystemExit(f"error: the dummy run failed (exit status {done.returncode})")
    return done.stderr + done.stdout, time.monotonic() - start


def check_version(version: str, work: Path) -> list[str]:
    """Both runs of one lm-eval version, compared.

    Returns:
        The differences (empty: adept-eval changed nothing).
    """
    work.mkdir(parents=True, exist_ok=True)
    bin_dir = make_venv(work / "venv", version)
    sources = lm_eval_sources(version, work)
    tasks = write_local_tasks(work / "tasks")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ADEPT_EVAL_NO_LM_EVAL_HOOK", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OFFLINE, ADEPT_EVAL_HOME=str(work / "adept-eval-home"),
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    results = {}
    for label in ("with", "without"):
        # a fresh Hugging Face cache for each: a dataset built once is not built again, and
        # lm-eval's log says so
        env["HF_HOME"] = str(work / f"hf-home-{label}")
        if label == "without":
            run([bin_dir / "python", "-m", "pip", "uninstall", "--quiet", "--yes",
                 "adept-eval"])
            left = list((work / "venv").glob("lib/python*/site-packages/adept_eval*"))
            if left:
                raise SystemExit(f"error: adept-eval left {left[0]} behind after uninstalling")
        seconds = lm_eval_tests(bin_dir, sources, work / f"{label}.xml", env)
        output = work / f"dummy-{label}" / "out"
        output.parent.mkdir()
        log, dummy_seconds = dummy_run(bin_dir, tasks, output, env)
        results[label] = (read_junit(work / f"{label}.xml"), output, log)
        print(f"lm-eval {version} {label} adept-eval: "
              f"{results[label][0].summary()} in {seconds:.0f} s; "
              f"dummy run {dummy_seconds:.1f} s", flush=True)
    (plain, plain_out, plain_log), (guest, guest_out, guest_log) = \
        results["without"], results["with"]
    paths = {str(plain_out): "<output>", str(guest_out): "<output>",
             str(plain_out.relative_to(plain_out.parent.parent)): "<output>",
             str(guest_out.relative_to(guest_out.parent.parent)): "<output>"}
    found = [f"lm-eval's tests: {d}" for d in outcome_differences(plain, guest)]
    expected = EXPECTED / f"{version}.txt"
    if expected.exists():
        unlisted, passing = unexpected_failures(plain, read_expected_failures(expected))
        found += [f"lm-eval's tests: {t} fails without adept-eval too, and is not in {expected}"
                  for t in unlisted]
        for test in passing:
            print(f"note: {test} is in {expected} but did not fail")
    else:
        found.append(f"no list of lm-eval {version}'s offline failures ({expected})")
    found += [f"dummy run: {d}" for d in differences(plain_out, guest_out)]
    found += [f"dummy run log: {d}" for d in log_differences(plain_log, guest_log, paths)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--versions", default=",".join(SUPPORTED),
                        help="lm-eval versions to check (default: %(default)s)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="adept-eval-lm-eval-guest-"))
    start, failed = time.monotonic(), False
    try:
        for version in args.versions.split(","):
            found = check_version(version, work / version)
            for line in found:
                print(f"DIFFERENCE lm-eval {version}: {line}")
            print(f"lm-eval {version}: {len(found)} difference(s) with adept-eval installed")
            failed |= bool(found)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"lm-eval guest check: {time.monotonic() - start:.0f} s in all")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
