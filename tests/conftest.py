"""Shared fixtures: one synthetic ADEPT per test session, built by the tests themselves."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# The loopback servers live in the repository's top-level ``testing/`` (not in the installed
# package): make ``import testing.judge_server`` work however pytest was started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def built_once(tmp_path_factory, builds: dict) -> dict[str, object]:
    """What each ``build(folder)`` of ``builds`` returns, built once per test run: under
    pytest-xdist the workers share the builds out, each taking one no other worker holds, and
    wait only when every build left is held (the synthetic corpus and its four systems cost
    ~35 s of CPU, before once per worker; one lock for them all left the other worker
    waiting). Read-only for the tests, as any session fixture shared between them already was."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # gw0, gw1...: their common parent is this run's
        base = base.parent
    pending = list(builds)
    while pending:
        taken = [name for name in pending if _build_under_lock(base, name, builds[name], 0)]
        if not taken:  # all held by other workers: wait for one
            _build_under_lock(base, pending[0], builds[pending[0]], -1)
            taken = pending[:1]
        pending = [name for name in pending if name not in taken]
    return {name: json.loads((base / f"{name}.built").read_text()) for name in builds}


def _build_under_lock(base: Path, name: str, build, timeout: float) -> bool:
    """Build ``name`` (a folder under ``base``, perhaps nested: "systems/copy") unless built;
    False when another worker holds its lock past ``timeout`` seconds."""
    import shutil

    from filelock import FileLock, Timeout

    folder, done = base / name, base / f"{name}.built"
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(base / f"{name}.lock"), timeout=timeout):
            if not done.exists():
                if folder.exists():  # a build that died half-way
                    shutil.rmtree(folder)
                done.write_text(json.dumps(build(folder)))
    except Timeout:
        return False
    return True


SYSTEM_RECIPES = {"copy": {}, "partial": {"transfer_fraction": 0.5}, "flat": {"transfer": 0.0},
                  "swap": {"swap": ("fear", "joy")}}


@pytest.fixture(scope="session")
def _synthetic_material(tmp_path_factory) -> dict[str, Path]:
    """The synthetic corpus ("adept") and the simulated systems, built together."""
    from adept_eval.corpora.synthetic import build_corpus, build_system

    builds = {"adept": lambda folder: str(build_corpus(folder))}
    for name, kw in SYSTEM_RECIPES.items():
        builds[f"systems/{name}"] = lambda folder, kw=kw: str(build_system(folder, **kw))
    return {name: Path(p) for name, p in built_once(tmp_path_factory, builds).items()}


@pytest.fixture(scope="session")
def synthetic_root(_synthetic_material) -> Path:
    return _synthetic_material["adept"]


@pytest.fixture(scope="session")
def synthetic_zip(tmp_path_factory, synthetic_root) -> Path:
    from adept_eval.corpora.synthetic import zip_corpus

    return zip_corpus(synthetic_root, tmp_path_factory.mktemp("zenodo") / "ADEPT.zip")


@pytest.fixture(scope="session")
def corpus(synthetic_root):
    from adept_eval.corpora.corpus import Corpus

    return Corpus(synthetic_root)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Every test gets its own cache and no inherited corpus or Zenodo settings."""
    monkeypatch.setenv("ADEPT_EVAL_HOME", str(tmp_path / "adept_home"))
    for var in ("ADEPT_EVAL_CORPUS", "ADEPT_EVAL_ZENODO_URL"):
        monkeypatch.delenv(var, raising=False)
    yield


def shared_or_skip(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared exists only in the project's own checkouts)")
    return path


os.environ.setdefault("TQDM_DISABLE", "1")


@pytest.fixture(scope="session")
def systems(_synthetic_material) -> dict[str, Path]:
    """Simulated prosody-transfer systems built from the synthetic corpus' prosody profiles."""
    return {name: _synthetic_material[f"systems/{name}"] for name in SYSTEM_RECIPES}


@pytest.fixture
def use_corpus(corpus, monkeypatch):
    """The synthetic corpus as ADEPT_EVAL_CORPUS, with no run context left from another test."""
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    from adept_eval.harness import run_context

    run_context.reset()
    return corpus


def run_lm_eval(model: str, tasks: list[str], *, model_args: dict | None = None,
                metadata: dict | None = None, log_samples: bool = True, limit=None):
    """lm-eval's own simple_evaluate, set up the way its CLI does (model_args join metadata)."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval.harness.startup import register, task_dir

    register()
    model_args = model_args or {}
    # only adept-eval's task folder: indexing lm-eval's own ~14,700 tasks costs ~9 s a run and
    # is what test_task_index.py and the subprocess tests exercise
    tm = TaskManager(include_path=str(task_dir()), include_defaults=False,
                     metadata={**model_args, **(metadata or {})})
    return simple_evaluate(model=model, model_args=model_args, tasks=tasks, task_manager=tm,
                           log_samples=log_samples, limit=limit, bootstrap_iters=0)


# Under CI=true (as .ci/run runs) a skip is a failure: the Debian packages, the test extras and
# ../shared are all there, so a skip means an install step broke and a test stopped testing.
# The one exception is test_readme's documented "not run" rules (commands that serve until
# stopped or would recurse), whose reasons start with "not run:".
CI_ALLOWED_SKIP = "not run:"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() != "true" or not report.skipped:
        return
    if hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if not reason.startswith(CI_ALLOWED_SKIP):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where nothing may be missing: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped while it is collected (a module-level
    ``pytest.importorskip``): without this, a missing extra made four listening-test modules
    vanish from a CI run that still passed."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() != "true" or not report.skipped:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if not reason.startswith(CI_ALLOWED_SKIP):
        report.outcome = "failed"
        report.longrepr = (f"{collector.nodeid}: skipped while collected under CI=true, where "
                           f"nothing may be missing: {reason}")
