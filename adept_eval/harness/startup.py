"""Make ``lm_eval --model adept-natural --tasks adept_...`` and ``evaluate.load("speech_judge")``
work with no paths.

lm-eval 0.4.x discovers neither external tasks nor external models. adept-eval therefore installs
a one-line ``adept_eval_lm_eval.pth`` into site-packages that imports this module at start-up.
It does nothing but put a post-import hook on a few lm-eval modules, so a process that never
imports lm-eval is untouched, and when lm-eval is imported the patches below run. Every patch
acts only on what is adept-eval's - our tasks, our models, our options, our runs - and leaves
anyone else's evaluation as lm-eval runs it (docs/reliability-and-speed.md says how CI checks
that against lm-eval's own test suite):

- after ``lm_eval.api.registry`` loads: ``get_model`` asked for one of our four models adds it
  to lm-eval's model registry as a lazy placeholder (the mechanism lm-eval uses for its own);
  nothing is registered at import;
- after ``lm_eval.tasks.manager`` loads: a ``TaskManager`` that indexes lm-eval's own tasks also
  indexes adept-eval's task folder, *before* any ``--include_path`` (so a user's own copies of
  our tasks still override); one built with ``include_defaults=False`` is left alone;
- after ``lm_eval.tasks._factory`` loads: a task of ours reports the metrics its YAML's
  ``metric_list`` names (a user's edited copy may leave some out), and a list it cannot report
  is one message naming the YAML (``integration.metric_list``);
- after ``lm_eval.config.evaluate_config`` loads: the TaskManager of an ``lm_eval run`` whose
  tasks are all adept-eval's does not index lm-eval's own ~14,700 (``simple_evaluate`` without
  a ``task_manager`` likewise);
- after ``lm_eval.loggers.evaluation_tracker`` loads: runs of our models are named after the
  system (``name=``), which is what results folders and Hub uploads then carry; results and
  samples of our runs have secret values redacted, and a save that failed is fatal;
- after ``evaluate.loading`` loads: the bare names ``speech_judge`` and ``prosody_transfer``
  resolve to our installed evaluate modules (see ``integration.registration``);
- after ``lm_eval.evaluator`` loads: ``simple_evaluate`` of our models or tasks refuses
  secret-looking options before lm-eval logs them, checks ``--output_path``, begins the run's
  context (``run_context``: which keys came from ``--model_args``, the work done once per run),
  and adds the run's identity (``identity``) to the results lm-eval then writes;
- after ``lm_eval.api.group`` loads: group figures of adept-eval's suites are pooled over what
  was actually scored (responses, judged answers), not over documents;
- after ``lm_eval.utils`` / ``lm_eval.loggers.utils`` / ``lm_eval.api.task`` load: a printed
  table with our tasks shows our headline metric first and counts as integers; ``git
  describe`` outside a git checkout stays quiet in our runs; lm-eval's "Custom kwargs" hint is
  not repeated for each of our tasks;
- after ``lm_eval._cli.utils`` / ``lm_eval._cli.harness`` / ``lm_eval._cli.run`` load: in a
  command line of our models or tasks, ``--model_args``/``--metadata`` in ``key=value`` form may
  contain ``{...}`` (``command=... {text} ...``, ``pattern={id}-Kimi``), a malformed JSON
  object is reported without echoing it, and our user errors end ``lm_eval`` as one line with
  exit status 2 (see ``integration.arguments``).

Every wrapper falls back to lm-eval's own behaviour on any unexpected error of ours: a change in
lm-eval can cost adept-eval a feature, never break ``lm_eval`` for the environment. (Deliberate
refusals, ``settings.SettingsError``, are not errors of ours and do propagate.)

lm-eval 0.4.x reads no entry points, so this hook is the only way our models and tasks are
found. A run whose tasks are all ours skips indexing lm-eval's own task folder
(``integration.task_index``). The patches live in ``adept_eval/harness/integration/``, one module per
purpose, each naming the lm-eval version it was written against (0.4.13). Editable installs
get the .pth too (setup.py). Set ``ADEPT_EVAL_NO_LM_EVAL_HOOK=1`` to switch the hook off
(``--include_path`` with ``task_dir()`` then still finds the tasks, but lm-eval knows none of
our models), or call ``register()`` to apply it by hand (from Python, before lm-eval runs).
"""

from __future__ import annotations

# Runs in every Python start-up of the environment: import only what the interpreter has
# already loaded (no importlib.abc, typing or pathlib: ~3 ms at start-up instead of ~30 ms).
import os
import sys

from adept_eval.names import (
    EVALUATE_MODULES,
    MODELS,
    prosody_transfer_path,
    speech_judge_path,
    task_dir,
)
from adept_eval.registry import Registry


#: lm-eval (or evaluate) module -> the patch run once it is imported: lazy ``"module:attr"``
#: targets in ``integration/`` (nothing of it is imported before lm-eval is)
HOOKS = Registry("lm-eval hook", {
    "lm_eval._cli.utils": "adept_eval.harness.integration.arguments:patch_cli_args",
    "evaluate.loading": "adept_eval.harness.integration.registration:patch_evaluate",
    "lm_eval.api.registry": "adept_eval.harness.integration.registration:register_models",
    "lm_eval.tasks.manager": "adept_eval.harness.integration.task_index:patch_task_manager",
    "lm_eval.tasks._factory": "adept_eval.harness.integration.metric_list:patch_task_factory",
    "lm_eval.config.evaluate_config": "adept_eval.harness.integration.task_index:patch_config",
    "lm_eval.loggers.evaluation_tracker": "adept_eval.harness.integration.results:patch_tracker",
    "lm_eval.evaluator": "adept_eval.harness.integration.run:patch_evaluator",
    "lm_eval.api.group": "adept_eval.harness.integration.groups:patch_group",
    "lm_eval.utils": "adept_eval.harness.integration.display:patch_table",
    "lm_eval.loggers.utils": "adept_eval.harness.integration.display:patch_git",
    "lm_eval.api.task": "adept_eval.harness.integration.display:patch_task_logging",
    "lm_eval._cli.run": "adept_eval.harness.integration.arguments:patch_cli",
    "lm_eval._cli.harness": "adept_eval.harness.integration.arguments:patch_harness_cli",
})


def _apply(name: str, module) -> None:
    """Run the patch for ``module`` (its ``integration`` module is imported only now)."""
    HOOKS.get(name)(module)


class _HookedLoader:
    """Wraps a module's real loader; runs ``hook(module)`` after the module has executed."""

    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _apply(self._name, module)
        except Exception as exc:  # never break lm-eval itself
            print(f"adept-eval: could not register with lm-eval ({exc})", file=sys.stderr)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _PostImportFinder:
    """A meta-path finder that only wraps the loaders of the few modules in ``HOOKS``."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in HOOKS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _HookedLoader(spec.loader, fullname)
                return spec
        return None


def install() -> None:
    """Called from the .pth at interpreter start-up: cheap, imports nothing of lm-eval."""
    if os.environ.get("ADEPT_EVAL_NO_LM_EVAL_HOOK"):
        return
    if any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        return
    for name in HOOKS.names():
        if name in sys.modules:  # lm-eval already imported: apply right away
            try:
                _apply(name, sys.modules[name])
            except Exception as exc:  # never break lm-eval itself
                print(f"adept-eval: could not register with lm-eval ({exc})", file=sys.stderr)
    sys.meta_path.insert(0, _PostImportFinder())


def register() -> None:
    """Apply the registration now (imports lm-eval)."""
    import importlib

    for name in HOOKS.names():
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        _apply(name, module)
