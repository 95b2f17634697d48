"""The benchmark and maintenance scripts: bad input is one message naming the option (exit
status 2, no traceback), and what they print is computed from their inputs, with its n."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(path: str, *args: str, env: dict | None = None, timeout: int = 300):
    return subprocess.run([sys.executable, str(ROOT / path), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _one_message(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr
    for w in words:
        assert w in done.stderr, (w, done.stderr)


@pytest.mark.parametrize("args, words", [
    (["--simulations", "0"], ["--simulations", "at least 1"]),
    (["--accuracy", "1.5"], ["--accuracy", "above 0 and below 1"]),
    (["--accuracy", "1"], ["--accuracy", "above 0 and below 1"]),
    (["--bootstrap", "9"], ["--bootstrap", "at least 40"]),
    (["--bootstrap", "39"], ["--bootstrap", "at least 40"]),
])
def test_human_comparison_level_refuses_bad_input(args, words):
    _one_message(_script("benchmarks/human_comparison_level.py", *args), *words)


def test_human_comparison_level_methods_draw_from_their_own_streams():
    """The new method's column is the same whether or not the old bootstrap runs (it drew
    from the tests' own stream, changing every test after the first chunk), and each rate
    is printed with its interval and n."""
    import numpy as np

    from adept_eval import spec, stats

    bench = _module("benchmarks/human_comparison_level.py")
    model = stats.ClusterModel(0.5, 1.0, 1.5, 1.0)
    sizes = [t.n_questions for t in spec.TASKS.values()]
    # 50 per system: 100 people x 165 questions, 121 tests per chunk: 130 tests are two chunks
    _, new_delta = bench.level(model, 50, sizes, simulations=130, seed=3)
    old_boot, new_boot = bench.level(model, 50, sizes, simulations=130, seed=3, bootstrap=40)
    assert new_boot == new_delta
    assert 0 <= old_boot <= 130
    low, high = stats.clopper_pearson(7, 130)
    assert bench.rate(7, 130) == f"{7 / 130:.1%} [{100 * low:.1f}, {100 * high:.1f}]"
    assert np.isfinite([low, high]).all()
