"""Make ``lm_eval --model adept-natural --tasks adept_...`` and ``evaluate.load("speech_judge")``
work with no paths.

lm-eval 0.4.x discovers neither external tasks nor external models. adept-eval therefore installs
a one-line ``adept_eval_lm_eval.pth`` into site-packages that imports this module at start-up.
It does nothing but put a post-import hook on two lm-eval modules, so a process that never
imports lm-eval is untouched, and when lm-eval is imported:

- after ``lm_eval.api.registry`` loads: our four models are added to its model registry as lazy
  placeholders (the same mechanism lm-eval uses for its own models);
- after ``lm_eval.tasks.manager`` loads: every ``TaskManager`` also indexes adept-eval's task
  folder, *before* any ``--include_path`` (so a user's own copies of our tasks still override);
- after ``lm_eval.loggers.evaluation_tracker`` loads: runs of our models are named after the
  system (``name=``), which is what results folders and Hub uploads then carry;
- after ``evaluate.loading`` loads: the bare name ``speech_judge`` resolves to our installed
  evaluate module (see ``_patch_evaluate``);
- after ``lm_eval._cli.utils`` loads: ``--model_args``/``--metadata`` in ``key=value`` form may
  contain ``{...}`` (``command=... {text} ...``, ``pattern={id}-Kimi``), and a malformed JSON
  object is reported without echoing it (see ``_patch_cli_args``).

Newer lm-eval reads models from the ``lm_eval.models`` entry-point group, which setup.cfg
declares too. Set ``ADEPT_EVAL_NO_LM_EVAL_HOOK=1`` to switch the hook off (``--include_path``
with ``adept_eval.lm_eval_plugin.task_dir()`` then still works), or call ``register()`` to
apply it by hand (e.g. from an editable install, where the .pth is not installed).
"""

from __future__ import annotations

# Runs in every Python start-up of the environment: import only what the interpreter has
# already loaded (no importlib.abc, typing or pathlib: ~3 ms at start-up instead of ~30 ms).
import os
import sys

MODELS = {
    "adept-natural": "adept_eval.models.natural:NaturalSystem",
    "audio-dir": "adept_eval.models.audio_dir:AudioDirSystem",
    "tts-command": "adept_eval.models.tts_command:TTSCommandSystem",
    "openai-speech": "adept_eval.models.openai_speech:OpenAISpeechSystem",
}


def task_dir():
    """Where the task YAMLs live: ``adept_eval/tasks`` once installed, ``tasks/`` in a checkout."""
    from pathlib import Path

    installed = Path(__file__).resolve().parent / "tasks"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[1] / "tasks"


def _register_models(registry_module) -> None:
    reg = registry_module.model_registry
    for name, target in MODELS.items():
        if name not in reg:
            reg.register(name, target=target)


def _patch_task_manager(manager_module) -> None:
    cls = manager_module.TaskManager
    if getattr(cls.__init__, "_adept_eval", False):
        return
    original = cls.__init__

    def __init__(self, *args, include_path=None, **kwargs):
        ours = str(task_dir())
        if include_path is None:
            paths = [ours]
        elif isinstance(include_path, (list, tuple)):
            paths = [ours, *include_path]
        else:
            paths = [ours, include_path]
        original(self, *args, include_path=paths, **kwargs)

    __init__._adept_eval = True  # type: ignore[attr-defined]
    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__init__ = __init__


def _patch_tracker(tracker_module) -> None:
    """Results and Hub uploads are named after the *system* (``name=``, else its default),
    not after whatever ``path=`` happens to be, for adept-eval's models."""
    cls = tracker_module.GeneralConfigTracker
    if getattr(cls.log_experiment_args, "_adept_eval", False):
        return
    original = cls.log_experiment_args

    def log_experiment_args(self, model_source, model_args, *args, **kwargs):
        original(self, model_source, model_args, *args, **kwargs)
        if model_source in MODELS:
            from lm_eval.api.registry import get_model
            from lm_eval.utils import sanitize_model_name, simple_parse_args_string

            parsed = simple_parse_args_string(model_args) if isinstance(model_args, str) \
                else dict(model_args or {})
            self.model_name = get_model(model_source).name_from_args(parsed)
            self.model_name_sanitized = sanitize_model_name(self.model_name)

    log_experiment_args._adept_eval = True  # type: ignore[attr-defined]
    cls.log_experiment_args = log_experiment_args

    # lm-eval 0.4.13 builds its Hub dataset card from pushed *sample* files and crashes (an
    # empty max() or [0]) when a run pushes results only. Then skip the card, with a warning:
    # the results themselves are already pushed by that point.
    tracker = tracker_module.EvaluationTracker
    card = tracker.recreate_metadata_card
    if not getattr(card, "_adept_eval", False):
        def recreate_metadata_card(self, *args, **kwargs):
            if not getattr(self, "push_samples_to_hub", False):
                import logging

                logging.getLogger("adept_eval").warning(
                    "lm-eval's Hub dataset card needs pushed samples (--log_samples with "
                    "push_samples_to_hub=True); results were pushed, the card was skipped")
                return None
            return card(self, *args, **kwargs)

        recreate_metadata_card._adept_eval = True  # type: ignore[attr-defined]
        tracker.recreate_metadata_card = recreate_metadata_card


def speech_judge_path():
    """The installed evaluate module: ``evaluate.load(str(speech_judge_path()))`` always works."""
    from pathlib import Path

    return Path(__file__).resolve().parent / "metrics" / "speech_judge" / "speech_judge.py"


def _patch_evaluate(loading_module) -> None:
    """``evaluate.load("speech_judge")`` loads the installed module, offline, with no Hub call.

    evaluate has no plugin hook: bare names are looked up on the Hub (``evaluate-metric/NAME``)
    and then in its module cache. Only this one bare name is redirected; a Hub path such as
    ``my-org/speech_judge`` still goes to the Hub.
    """
    original = loading_module.evaluation_module_factory
    if getattr(original, "_adept_eval", False):
        return

    def evaluation_module_factory(path, *args, **kwargs):
        if path == "speech_judge" and not kwargs.get("force_local_path"):
            path = str(speech_judge_path())
        return original(path, *args, **kwargs)

    evaluation_module_factory._adept_eval = True  # type: ignore[attr-defined]
    loading_module.evaluation_module_factory = evaluation_module_factory


def _patch_cli_args(utils_module) -> None:
    """``key=value`` arguments may contain braces; malformed JSON is not echoed.

    lm-eval 0.4.13 parses ``--model_args``/``--metadata`` as JSON whenever the text contains
    ``{``, and refuses it otherwise, so ``command=my_tts --text {text}`` or ``pattern={id}-Kimi``
    never reach the ``key=value`` parser (which itself splits only at top-level commas, braces
    respected). A JSON object starts with ``{``: anything else falls back to ``key=value``. A
    text that does start with ``{`` and is not valid JSON is an error whose message says where
    it is broken but does not repeat the text, which may hold a secret.
    """
    original = utils_module.try_parse_json
    if getattr(original, "_adept_eval", False):
        return

    def try_parse_json(value):
        try:
            return original(value)
        except ValueError:
            if not isinstance(value, str) or not value.lstrip().startswith("{"):
                return value  # the key=value form, placeholders and all
            import json

            try:
                json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a valid JSON object ({exc}; the {len(value)}-character "
                                 "value is not shown, in case it holds a secret). Use "
                                 "key=value,key2=value2 or a JSON object with double quotes"
                                 ) from None
            raise

    try_parse_json._adept_eval = True  # type: ignore[attr-defined]
    try_parse_json.__wrapped__ = original  # type: ignore[attr-defined]
    utils_module.try_parse_json = try_parse_json

    action = getattr(utils_module, "MergeDictAction", None)
    call = getattr(action, "__call__", None)
    if call is not None and not getattr(call, "_adept_eval", False):
        def __call__(self, parser, namespace, values, option_string=None):
            try:
                return call(self, parser, namespace, values, option_string)
            except ValueError as exc:  # one line from argparse, not a traceback
                parser.error(f"argument {option_string or self.dest}: {exc}")

        __call__._adept_eval = True  # type: ignore[attr-defined]
        action.__call__ = __call__


_HOOKS = {
    "lm_eval._cli.utils": _patch_cli_args,
    "evaluate.loading": _patch_evaluate,
    "lm_eval.api.registry": _register_models,
    "lm_eval.tasks.manager": _patch_task_manager,
    "lm_eval.loggers.evaluation_tracker": _patch_tracker,
}


class _HookedLoader:
    """Wraps a module's real loader; runs ``hook(module)`` after the module has executed."""

    def __init__(self, loader, hook):
        self._loader, self._hook = loader, hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._hook(module)
        except Exception as exc:  # never break lm-eval itself
            print(f"adept-eval: could not register with lm-eval ({exc})", file=sys.stderr)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _PostImportFinder:
    """A meta-path finder that only wraps the loaders of the few modules in ``_HOOKS``."""

    def find_spec(self, fullname, path, target=None):
        hook = _HOOKS.get(fullname)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _HookedLoader(spec.loader, hook)
                return spec
        return None


def install() -> None:
    """Called from the .pth at interpreter start-up: cheap, imports nothing of lm-eval."""
    if os.environ.get("ADEPT_EVAL_NO_LM_EVAL_HOOK"):
        return
    if any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        return
    for name, hook in _HOOKS.items():
        if name in sys.modules:  # lm-eval already imported: apply right away
            hook(sys.modules[name])
    sys.meta_path.insert(0, _PostImportFinder())


def register() -> None:
    """Apply the registration now (imports lm-eval)."""
    import lm_eval.api.registry as registry
    import lm_eval.loggers.evaluation_tracker as tracker
    import lm_eval.tasks.manager as manager

    import evaluate.loading as loading

    _register_models(registry)
    try:
        import lm_eval._cli.utils as cli_utils
    except ImportError:  # an lm-eval without this CLI module: nothing to patch
        pass
    else:
        _patch_cli_args(cli_utils)
    _patch_task_manager(manager)
    _patch_tracker(tracker)
    _patch_evaluate(loading)
