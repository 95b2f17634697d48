"""The package's structure: imports run downwards through the layers, no cycle, no
``sys.modules`` look-up, at most twelve modules at the top, a cheap start-up hook and a lean
acoustic run."""

import os
from pathlib import Path


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
