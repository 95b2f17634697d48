"""The structural seams: statistics, leaderboard ranking among equals, the newest run, CSV
safety, the start-up hook's fallbacks, and the package's layering (imports run downwards, no
cycle, no ``sys.modules`` look-up, a lean acoustic run)."""

import csv
import json
import math
import os
import time
from pathlib import Path

import pytest

from adept_eval.corpora import spec
from adept_eval.scoring import stats
from adept_eval.results.runs import Run, load_run
from adept_eval.results.leaderboard import build, write


# ----------------------------------------------------------------------------- statistics
def test_stats_one_home():
    from adept_eval.harness import adept as harness

    assert not hasattr(harness, "exact_interval")  # the alias is gone: stats is the one home
    lo, hi = stats.clopper_pearson(0, 20)
    assert lo == 0 and 0.15 < hi < 0.18
    assert stats.pooled_mean([(2.0, 3), (4.0, 1), (float("nan"), 0)]) == (2.5, 4)
    assert stats.competition_ranks([0.9, 1.0, 1.0, 0.5]) == [3, 1, 1, 4]
    lo, hi = stats.t_interval([1.0, 2.0, 3.0])
    assert lo < 2 < hi


def test_judge_mean_interval_is_the_t_interval():
    from adept_eval.judge.runner import mean_interval

    scores = [4.0, 5.0, 3.0, 4.0, 2.0, 5.0]
    low, high = stats.t_interval(scores)
    assert high > 5  # cut to the judge's 1-5 scale
    assert mean_interval(scores) == (low, 5.0)
    assert mean_interval([3.0, 3.5, 4.0]) == stats.t_interval([3.0, 3.5, 4.0])
    assert all(math.isnan(x) for x in mean_interval([3.0]))


def test_binomial_tests_one_and_two_sided():
    from scipy.stats import binomtest

    assert stats.binomial_p(9, 12, 1 / 3, alternative="greater") == \
        binomtest(9, 12, 1 / 3, alternative="greater").pvalue
    assert stats.binomial_p(9, 12, 1 / 3) == binomtest(9, 12, 1 / 3).pvalue
    assert math.isnan(stats.binomial_p(0, 0, 0.5))


def test_below_chance_p_is_the_poisson_binomial_lower_tail():
    from scipy.stats import binom

    # equal chance levels: the binomial lower tail
    assert stats.below_chance_p(2, [0.25] * 20) == pytest.approx(binom.cdf(2, 20, 0.25))
    # mixed levels: P(0 right) is the product of the misses, P(<=2 of 2) is 1
    assert stats.below_chance_p(0, [0.5, 0.25]) == pytest.approx(0.5 * 0.75)
    assert stats.below_chance_p(2, [0.5, 0.25]) == pytest.approx(1.0)
    assert stats.below_chance_p(0, []) == 1.0


def test_bootstrap_interval_resamples_whole_clusters():
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, 60)
    lo, hi = stats.bootstrap_interval(x, seed=1)
    assert lo < x.mean() < hi
    assert stats.bootstrap_interval(x, seed=1) == (lo, hi)  # seeded: reruns print the same
    # six clusters of identical values: the information is six values, not sixty
    clustered = np.repeat(rng.normal(0.0, 1.0, 6), 10)
    iid = stats.bootstrap_interval(clustered, seed=1)
    by_cluster = stats.bootstrap_interval(clustered, np.repeat(np.arange(6), 10), seed=1)
    assert by_cluster[1] - by_cluster[0] > 2 * (iid[1] - iid[0])
    assert all(math.isnan(v) for v in stats.bootstrap_interval([1.0]))
    assert all(math.isnan(v) for v in stats.bootstrap_interval([1.0, 2.0], ["a", "a"]))


# ----------------------------------------------------------------------------- leaderboard
def _results(system, accs, *, sha="a" * 64, listener="acoustic", synthetic=False, date=None,
             complete=None, identity=True):
    res = {}
    for task, acc in accs.items():
        n = spec.TASKS[task].n_questions
        res[task] = {"acc,none": acc, "n,none": n, "failed,none": 0,
                     "chance,none": spec.TASKS[task].chance}
    out = {"results": res, "configs": {t: {} for t in accs}, "date": date or time.time(),
           "model_name": system}
    if identity:
        out["adept_eval"] = {"version": "t", "system": system, "suites": {"adept": {
            "tasks": sorted(accs), "complete": len(accs) == 12 if complete is None else complete,
            "scorer": {"listener": listener, "listener_version": "features-v1"},
            "corpus": {"name": "ADEPT", "sha256": sha, "synthetic": synthetic}}}}
    return out


def _run(tmp, system, stamp, data):
    path = tmp / system / f"results_{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return Run(path, data)


def test_only_complete_runs_on_one_corpus_and_scorer_are_ranked_and_ties_share_a_rank(tmp_path):
    full = {t: 0.6 for t in spec.TASKS}
    two = {"adept_emotion_female": 1.0, "adept_syntactic_phrasing_male": 1.0}
    runs = [_run(tmp_path, "a", "2026-01-01T00-00-00", _results("a", full)),
            _run(tmp_path, "b", "2026-01-01T00-00-01", _results("b", full)),
            _run(tmp_path, "c", "2026-01-01T00-00-02", _results("c", {t: 0.4 for t in spec.TASKS})),
            _run(tmp_path, "partial", "2026-01-01T00-00-03", _results("partial", two)),
            _run(tmp_path, "synth", "2026-01-01T00-00-04",
                 _results("synth", {t: 0.9 for t in spec.TASKS}, sha="b" * 64, synthetic=True)),
            _run(tmp_path, "old", "2026-01-01T00-00-05", _results("old", full, identity=False))]
    rows = {r.system: r for r in build(runs)}
    rank = {name: row.figure("adept", "rank") for name, row in rows.items()}
    why = {name: row.figure("adept", "unranked") for name, row in rows.items()}
    assert rank["a"] == rank["b"] == 1 and rank["c"] == 3
    assert rank["partial"] is None and "partial" in why["partial"]
    assert rank["old"] is None and "identity" in why["old"]
    # another corpus: ranked only among its own, and marked synthetic
    assert rows["synth"].figure("adept", "rank") == 1 and rows["synth"].figure("adept", "synthetic")
    assert rows["synth"].group("adept") != rows["a"].group("adept")
    assert rows["a"].figure("adept", "chance") == pytest.approx(
        sum(t.chance * t.n_questions for t in spec.TASKS.values()) /
        sum(t.n_questions for t in spec.TASKS.values()))
    paths = write(list(rows.values()), tmp_path / "lb")
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "not ranked" in md and "SYNTHETIC" in md
    assert any(p.suffix == ".png" for p in paths)  # matplotlib is in the test extra


def test_leaderboard_csv_neutralises_formulas(tmp_path):
    name = "@SUM(1+1)*cmd|' /C calc'!A0"
    run = _run(tmp_path, "x", "2026-01-01T00-00-00",
               _results(name, {t: 0.5 for t in spec.TASKS}))
    write(build([run]), tmp_path / "lb")
    rows = list(csv.DictReader(open(tmp_path / "lb" / "leaderboard.csv", encoding="utf-8")))
    assert rows[0]["system"] == "'" + name
    from adept_eval.results.report import csv_safe

    assert [csv_safe(v) for v in ("=1+1", "+1", "-2", "\tx", "ok", -2.0)] == \
        ["'=1+1", "'+1", "'-2", "'\tx", "ok", -2.0]


def test_report_and_publish_take_the_newest_run_by_timestamp(tmp_path):
    # "zzz" sorts last alphabetically but is the older run
    _run(tmp_path, "zzz-old", "2026-01-01T00-00-00",
         _results("zzz-old", {"adept_emotion_female": 0.5}, date=1000.0))
    _run(tmp_path, "aaa-new", "2026-01-02T00-00-00",
         _results("aaa-new", {"adept_emotion_female": 0.5}, date=2000.0))
    run = load_run(tmp_path)
    assert run.system == "aaa-new" and "newest of 2" in run.chosen
    assert load_run(tmp_path, "zzz").system == "zzz-old"
    from adept_eval.cli import main

    assert main(["report", str(tmp_path)]) == 0
    assert main(["report", str(tmp_path), "--run", "nothing-like-it"]) == 2


# ----------------------------------------------------------------------------- start-up hook
def test_hook_wrappers_fall_back_to_lm_eval_on_unexpected_errors(monkeypatch, capsys):
    import lm_eval.api.group as group_module
    import lm_eval.utils as utils_module

    from adept_eval.harness import startup as lm_eval_plugin
    from adept_eval import suites

    lm_eval_plugin.register()
    table = {"results": {"adept_emotion_female": {"alias": "adept_emotion_female", "n,none": 20.0,
                                                  "acc,none": 0.5, "acc_stderr,none": "N/A",
                                                  "n_stderr,none": "N/A"}},
             "versions": {"adept_emotion_female": 1.0}, "n-shot": {"adept_emotion_female": 0},
             "higher_is_better": {"adept_emotion_female": {"acc": True, "n": True}}}
    text = utils_module.make_table(table)
    lines = [ln for ln in text.splitlines() if "|" in ln][2:]
    assert "acc" in lines[0] and "| 20 " in lines[1].replace("|20", "| 20") and "↑" not in lines[1]
    # a broken suite registry (an error of ours) costs the feature, never lm-eval's table
    monkeypatch.setattr(suites, "suite_of", lambda name: 1 / 0)
    assert utils_module.make_table(table)
    assert "falling back" in capsys.readouterr().err
    assert getattr(group_module.Group.aggregate, "_adept_eval", False)


def test_the_startup_hook_stays_cheap():
    import subprocess
    import sys

    # cheap = loads nothing but itself at interpreter start-up (its time is a benchmark's job,
    # not a unit test's: a loaded machine would make any time bound flaky)
    # (-S: no site, so no .pth; os is what site itself would have loaded)
    code = ("import os, sys; before = set(sys.modules); import adept_eval.harness.startup as p; "
            "p.install(); print(sorted(set(sys.modules) - before))")
    env = {**os.environ, "ADEPT_EVAL_NO_LM_EVAL_HOOK": "1"}
    loaded = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                            env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                            check=True).stdout
    assert eval(loaded) == ["__future__", "adept_eval", "adept_eval.harness",
                            "adept_eval.harness.startup", "adept_eval.names",
                            "adept_eval.registry"], loaded


def _import_edges() -> dict[str, set[str]]:
    """module -> the package's modules it imports (module-level and in-function alike)."""
    import ast

    root = Path(__file__).resolve().parents[1] / "adept_eval"
    modules = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        modules[name] = path
    edges = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    edges[name].add(t)
    return edges


def test_no_import_cycle_in_the_package():
    """Imports run one way (in-function imports count): checked with the project's own tool
    where ../shared is there, and with this module's reading of the same rule everywhere."""
    edges = _import_edges()
    modules = edges
    seen, stack, on_stack, cycles = {}, [], set(), []

    def visit(m):
        seen[m] = True
        stack.append(m)
        on_stack.add(m)
        for n in edges[m]:
            if n in on_stack:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in seen:
                visit(n)
        stack.pop()
        on_stack.discard(m)

    for m in sorted(modules):
        if m not in seen:
            visit(m)
    # a package's __init__ importing its own submodules is not a cycle of the layers
    real = [c for c in cycles if not all(x.startswith(c[0] + ".") or x == c[0] for x in c)]
    assert not real, real


#: the package's layers, bottom to top (docs/contributing.md): a module imports only from lower
#: layers or from its own package; entries sharing a number never import each other
LAYERS = {
    "adept_eval": 0, "adept_eval.errors": 0, "adept_eval.registry": 0,
    "adept_eval.options": 1, "adept_eval.secrecy": 1, "adept_eval.paths": 1, "adept_eval.names": 1,
    "adept_eval.signal": 2,
    "adept_eval.corpora": 3,
    "adept_eval.suites": 4, "adept_eval.identity": 5,
    "adept_eval.llm": 6,
    "adept_eval.scoring": 7,
    "adept_eval.judge": 8, "adept_eval.models": 8,
    "adept_eval.harness.settings": 9, "adept_eval.harness.run_context": 9,
    "adept_eval.harness.adept": 10, "adept_eval.harness.vstyle": 10,
    "adept_eval.harness.integration": 11, "adept_eval.harness.startup": 12,
    "adept_eval.results": 13,
    "adept_eval.listening_test": 14, "adept_eval.metrics": 14,
    "adept_eval.cli": 15,
}


def _home(module: str) -> str:
    """The ``LAYERS`` entry a module belongs to: its longest listed prefix."""
    homes = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    return max(homes, key=len)


def test_the_layers_import_downwards():
    """Lower layers never import higher ones, nor siblings on their own level (the two
    harnesses, the judge and the models, the listening test and the metrics); ``registry`` and
    ``names`` stay standard library only, since the start-up hook loads them at every
    interpreter start-up."""
    import ast

    wrong = []
    for module, targets in _import_edges().items():
        home = _home(module)
        for target in targets:
            there = _home(target)
            if there == home or there == "adept_eval" and target == "adept_eval":
                continue
            if LAYERS[there] >= LAYERS[home]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, wrong
    root = Path(__file__).resolve().parents[1] / "adept_eval"
    for name in ("registry.py", "names.py"):
        tree = ast.parse((root / name).read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert all(isinstance(n, ast.ImportFrom) and n.module in ("__future__", "adept_eval.registry")
                   for n in top), name


def test_at_most_twelve_modules_at_the_top():
    root = Path(__file__).resolve().parents[1] / "adept_eval"
    top = sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")
    assert len(top) <= 12, top


def test_no_lookup_of_the_package_s_own_modules_in_sys_modules():
    """A lower layer reaching a higher one through ``sys.modules`` hides the edge from the
    layering test: declared callbacks and extension points do that job."""
    root = Path(__file__).resolve().parents[1] / "adept_eval"
    found = [f"{path.relative_to(root)}:{n}" for path in root.rglob("*.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "sys.modules" in line and ("adept_eval" in line or "__module__" in line)]
    assert not found, found


def test_an_acoustic_adept_run_imports_nothing_of_the_judge(use_corpus, tmp_path):
    """A real ``lm_eval`` acoustic run through its CLI loads nothing of the judge, the LLM
    client (``adept_eval.llm`` and its submodules) or aiohttp."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from lm_eval.__main__ import cli_evaluate\n"
            "sys.argv = ['lm_eval', '--model', 'adept-natural', '--tasks', "
            "'adept_emotion_female', '--limit', '2']\n"
            "try:\n    cli_evaluate()\nexcept SystemExit as e:\n    assert not e.code\n"
            "bad = sorted(m for m in sys.modules if m in ('aiohttp', 'adept_eval.llm', "
            "'adept_eval.judge') or m.startswith(('adept_eval.judge.', 'adept_eval.llm.', "
            "'aiohttp.')))\n"
            "assert 'adept_eval.harness.adept' in sys.modules, 'the run loaded no ADEPT task'\n"
            "print('LOADED', bad)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TQDM_DISABLE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LOADED []" in done.stdout, done.stdout[-500:]
