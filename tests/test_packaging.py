"""What the wheel ships: what users run, and nothing of the maintainers' bench.

The wheel is built from a copy of the checkout (so the build leaves nothing in it) without build
isolation, offline, with the setuptools and wheel of the test extra. It must hold the task
YAMLs, the evaluate modules' READMEs, the listening test's static files and the lm-eval
start-up hook, and none of the validation bench (``benchmarks/validation``: TTS-engine
renderers), the simulated crowd (``testing/crowd.py``) or the repository-root packages.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: what the build reads (setup.cfg names the rest: the package and ``tasks/``)
BUILD_FILES = ("setup.cfg", "setup.py", "pyproject.toml", "README.md", "LICENSE",
               "adept_eval_lm_eval.pth")
BUILD_FOLDERS = ("adept_eval", "tasks")
#: what the build never needs: earlier builds and caches
NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.egg-info")


def build_wheel(source: Path, folder: Path) -> Path:
    """Builds the wheel of the project at ``source`` from a copy of what the build reads (the
    checkout stays as it was; a virtual environment or data inside it is not copied).

    Args:
        source: the project's root (setup.cfg, setup.py, pyproject.toml).
        folder: an empty folder for the copy and the wheel.

    Returns:
        The wheel's path.

    Raises:
        AssertionError: pip fails to build it (its output is the message).
    """
    copy = folder / "source"
    for name in BUILD_FOLDERS:
        shutil.copytree(source / name, copy / name, ignore=NOT_COPIED)
    for name in BUILD_FILES:
        shutil.copy2(source / name, copy / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--no-index", "-q", "-w", str(folder), "."],
                          cwd=copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    wheels = list(folder.glob("adept_eval-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The checkout's wheel, built once for this module's tests."""
    with zipfile.ZipFile(build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))) as built:
        yield built


def test_the_wheel_holds_no_bench_no_crowd_and_no_repository_root_package(wheel):
    """No validation bench (its TTS-engine renderers included), no simulated crowd, and at the
    top only the package, the start-up hook and the wheel's metadata."""
    names = wheel.namelist()
    bench = [n for n in names if n.startswith(("adept_eval/validation/", "benchmarks/",
                                               "testing/"))
             or Path(n).stem in ("simulate", "crowd", "engines", "_rhvoice")]
    assert not bench, bench
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"adept_eval", "adept_eval_lm_eval.pth"}, tops


def test_the_wheel_holds_what_users_run(wheel):
    """Every task YAML (the folder ``tasks/`` ships as ``adept_eval/tasks``), both evaluate
    modules' READMEs, every static file of the listening test and the start-up hook."""
    names = set(wheel.namelist())
    expected = {f"adept_eval/tasks/{p.relative_to(ROOT / 'tasks')}"
                for p in (ROOT / "tasks").rglob("*") if p.suffix == ".yaml" or
                p.name.endswith("_yaml")}
    expected |= {f"adept_eval/metrics/{name}/README.md"
                 for name in ("speech_judge", "prosody_transfer")}
    static = ROOT / "adept_eval" / "listening_test" / "static"
    expected |= {f"adept_eval/listening_test/static/{p.name}" for p in static.iterdir()
                 if p.suffix in (".html", ".css", ".js")}
    expected.add("adept_eval_lm_eval.pth")
    assert len([n for n in expected if n.endswith(".yaml")]) >= 12
    assert not expected - names, sorted(expected - names)
    hook = wheel.read("adept_eval_lm_eval.pth").decode()
    assert hook == (ROOT / "adept_eval_lm_eval.pth").read_text()


def test_the_wheel_offers_no_bench_extra(wheel):
    """The bench's one dependency beyond the package (pyloudnorm) comes with the test extra,
    which a maintainer installs in a clone; no extra exists for the bench alone."""
    metadata_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    metadata = Parser().parsestr(wheel.read(metadata_name).decode())
    extras = set(metadata.get_all("Provides-Extra"))
    assert "validation" not in extras and "test" in extras, extras
    test_requires = [r for r in metadata.get_all("Requires-Dist") if "extra == \"test\"" in r]
    assert any(r.startswith("pyloudnorm") for r in test_requires), test_requires


def test_the_package_imports_nothing_it_does_not_ship():
    """``benchmarks`` and ``testing`` are repository-root packages, absent from an install: no
    module of the package may import them (in-function imports count)."""
    root = ROOT / "adept_eval"
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom)
                       and not node.level else [])
            found += [f"{path.relative_to(ROOT)}: {m}" for m in modules
                      if m.split(".")[0] in ("benchmarks", "testing")]
    assert not found, found


def test_the_listening_test_extra_installs_what_the_rehearsal_crowd_imports():
    """docs/listening-test.md sends a user to ``testing/crowd.py`` to rehearse a test; it
    imports httpx, which the ``[listening-test]`` extra did not install."""
    import configparser
    import sys

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    names = {re.split(r"[<>=!;\[ ]", line.strip())[0].lower()
             for key in ("install_requires",) for line in cfg["options"][key].splitlines()}
    names |= {re.split(r"[<>=!;\[ ]", line.strip())[0].lower()
              for line in cfg["options.extras_require"]["listening-test"].splitlines()}
    imported = set()
    for node in ast.walk(ast.parse((ROOT / "testing" / "crowd.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported.add((node.module or "").split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "adept_eval"}
    assert third_party and third_party <= names, third_party - names
