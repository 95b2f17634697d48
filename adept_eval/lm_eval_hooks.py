"""The wrappers the start-up hook (``lm_eval_plugin``) installs into lm-eval and evaluate.

Kept apart from ``lm_eval_plugin`` so interpreter start-up only loads the few lines that
install the post-import hook; this module is imported when lm-eval itself is. Every wrapper
falls back to lm-eval's own behaviour on an unexpected error of ours (``_fell_back``).
"""

from __future__ import annotations

import contextvars
import functools
import math
import os
import re
import sys

from .names import EVALUATE_MODULES, MODELS, task_dir


def _register_models(registry_module) -> None:
    reg = registry_module.model_registry
    for name in MODELS.names():
        if name not in reg:
            reg.register(name, target=MODELS.target(name))
    from .errors import install_excepthook

    install_excepthook()  # our user errors reach the lm_eval console as one message


#: the task names of the run whose TaskManager lm-eval is building (see ``_patch_config``)
_REQUESTED: contextvars.ContextVar = contextvars.ContextVar("adept_eval_requested", default=None)
_NAME_LINE = re.compile(r"^(?:task|group|tag):[ \t]*['\"]?([A-Za-z][A-Za-z0-9_.-]*)", re.M)


@functools.lru_cache(maxsize=1)
def own_task_names() -> frozenset[str]:
    """Every task, group and tag name adept-eval's task folder defines (read from the YAMLs'
    ``task:``/``group:``/``tag:`` lines: ~20 small files, no YAML parser needed)."""
    names = set()
    for path in task_dir().rglob("*.yaml"):
        names.update(_NAME_LINE.findall(path.read_text(encoding="utf-8")))
    return frozenset(names)


def _only_ours(tasks) -> bool:
    """True when ``tasks`` (lm-eval's --tasks value: a comma-separated string or a list) names
    only adept-eval's tasks and groups: then lm-eval's own ~14,700 need not be indexed."""
    if isinstance(tasks, str):
        tasks = [tasks]
    names = [n.strip() for t in tasks or () if isinstance(t, str) for n in t.split(",")]
    names = [n for n in names if n]
    return bool(names) and all(n in own_task_names() for n in names)


def _patch_task_manager(manager_module) -> None:
    """Every TaskManager also indexes our task folder (before ``--include_path``); one built
    for a run that asks only for our tasks skips lm-eval's own folder (~9 s of indexing).
    Written against lm-eval 0.4.13's ``TaskManager(include_path, include_defaults, ...)``."""
    cls = manager_module.TaskManager
    if getattr(cls.__init__, "_adept_eval", False):
        return
    original = cls.__init__

    def __init__(self, *args, include_path=None, **kwargs):
        try:
            ours = str(task_dir())
            if include_path is None:
                paths = [ours]
            elif isinstance(include_path, (list, tuple)):
                paths = [ours, *include_path]
            else:
                paths = [ours, include_path]
            requested = _REQUESTED.get()
            if not args and kwargs.get("include_defaults", True) and requested is not None \
                    and _only_ours(requested):
                kwargs["include_defaults"] = False
        except Exception as exc:
            _fell_back("TaskManager", exc)
            paths = include_path
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
        try:
            if model_source in MODELS:
                from lm_eval.api.registry import get_model
                from lm_eval.utils import sanitize_model_name, simple_parse_args_string

                parsed = simple_parse_args_string(model_args) if isinstance(model_args, str) \
                    else dict(model_args or {})
                self.model_name = get_model(model_source).name_from_args(parsed)
                self.model_name_sanitized = sanitize_model_name(self.model_name)
        except Exception as exc:
            _fell_back("results naming", exc)

    log_experiment_args._adept_eval = True  # type: ignore[attr-defined]
    cls.log_experiment_args = log_experiment_args

    # lm-eval 0.4.13 builds its Hub dataset card from pushed *sample* files and crashes (an
    # empty max() or [0]) when a run pushes results only. Then skip the card, with a warning:
    # the results themselves are already pushed by that point.
    tracker = tracker_module.EvaluationTracker
    card = tracker.recreate_metadata_card
    if not getattr(card, "_adept_eval", False):
        def recreate_metadata_card(self, *args, **kwargs):
            if not getattr(self, "push_samples_to_hub", False):  # plain attribute: cannot fail
                import logging

                logging.getLogger("adept_eval").warning(
                    "lm-eval's Hub dataset card needs pushed samples (--log_samples with "
                    "push_samples_to_hub=True); results were pushed, the card was skipped")
                return None
            return card(self, *args, **kwargs)

        recreate_metadata_card._adept_eval = True  # type: ignore[attr-defined]
        tracker.recreate_metadata_card = recreate_metadata_card

    # results and samples are scanned for the values of secret environment variables before
    # lm-eval writes (or pushes) them
    save = tracker.save_results_aggregated
    if not getattr(save, "_adept_eval", False):
        def save_results_aggregated(self, results, samples=None, *args, **kwargs):
            _refuse_leaks(results, samples)
            return save(self, results, samples, *args, **kwargs)

        save_results_aggregated._adept_eval = True  # type: ignore[attr-defined]
        tracker.save_results_aggregated = save_results_aggregated
    save_samples = getattr(tracker, "save_results_samples", None)
    if save_samples is not None and not getattr(save_samples, "_adept_eval", False):
        def save_results_samples(self, task_name, samples, *args, **kwargs):
            _refuse_leaks(None, samples)
            return save_samples(self, task_name, samples, *args, **kwargs)

        save_results_samples._adept_eval = True  # type: ignore[attr-defined]
        tracker.save_results_samples = save_results_samples


def _refuse_leaks(results, samples) -> None:
    try:
        import json

        from .settings import environment_secrets

        secrets = environment_secrets()
        if not secrets:
            return
        text = json.dumps([results, samples], default=str, ensure_ascii=False)
        leaked = sorted(name for name, value in secrets.items() if value in text)
    except Exception as exc:
        _fell_back("secret scan", exc)
        return
    if leaked:
        from .settings import SettingsError

        raise SettingsError("refusing to write results or samples that contain the value of "
                            f"${', $'.join(leaked)}; an option or a system's output echoes a "
                            "secret (pass secrets only through environment variables)")


def _fell_back(what: str, exc: BaseException) -> None:
    print(f"adept-eval: {what}: falling back to lm-eval's own behaviour ({type(exc).__name__}: "
          f"{exc})", file=sys.stderr)


def _ours(model, tasks) -> bool:
    """Does this run involve adept-eval's models or tasks?"""
    from .suites import suite_of

    if isinstance(model, str) and model in MODELS:
        return True
    if model is not None and not isinstance(model, str) and \
            type(model).__module__.startswith("adept_eval"):
        return True
    names = tasks.split(",") if isinstance(tasks, str) else list(tasks or [])
    return any(isinstance(t, str) and suite_of(t) is not None for t in names)


def _patch_evaluator(evaluator_module) -> None:
    """``simple_evaluate``: refuse secret options before lm-eval logs them; note which keys
    are the model's; attach the run's identity to the results."""
    original = evaluator_module.simple_evaluate
    if getattr(original, "_adept_eval", False):
        return
    import functools

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        from .settings import SettingsError

        model, model_args = kwargs.get("model", args[0] if args else None), \
            kwargs.get("model_args", args[1] if len(args) > 1 else None)
        ours = False
        try:
            from . import identity, settings

            ours = _ours(model, kwargs.get("tasks"))
            if ours:
                parsed = model_args
                if isinstance(model_args, str):
                    from lm_eval.utils import simple_parse_args_string

                    parsed = simple_parse_args_string(model_args) if model_args.strip() else {}
                settings.refuse_secrets(dict(parsed or {}), "--model_args")
                settings.refuse_secrets(dict(kwargs.get("metadata") or {}), "--metadata")
                settings.note_run(model, model_args)
                identity.reset()
        except SettingsError:
            raise
        except Exception as exc:
            _fell_back("settings", exc)
        requested = _REQUESTED.set(kwargs.get("tasks", args[2] if len(args) > 2 else None)
                                   if kwargs.get("task_manager") is None else None)
        try:
            results = original(*args, **kwargs)
            if ours:
                try:
                    identity.attach(results, model, model_args)
                except Exception as exc:
                    _fell_back("run identity", exc)
            return results
        finally:
            _REQUESTED.reset(requested)
            if ours:
                try:
                    settings.forget_run()
                except Exception:
                    pass

    simple_evaluate._adept_eval = True  # type: ignore[attr-defined]
    evaluator_module.simple_evaluate = simple_evaluate


def _patch_group(group_module) -> None:
    """Group rows of our suites pool what was actually scored: the headline of ADEPT over
    responses, VStyle's ``score_mean`` over judged answers, counts summed."""
    cls = group_module.Group
    original = cls.aggregate
    if getattr(original, "_adept_eval", False):
        return

    def aggregate(self, task_metrics, *args, **kwargs):
        out = original(self, task_metrics, *args, **kwargs)
        try:
            from .suites import suite_of

            suite = suite_of(self.name)
            if suite is not None and isinstance(out, dict):
                pool_group(suite, [t.task_name for t in self.get_all_tasks()], task_metrics, out)
        except Exception as exc:
            _fell_back("group pooling", exc)
        return out

    aggregate._adept_eval = True  # type: ignore[attr-defined]
    cls.aggregate = aggregate


def pool_group(suite, leaves, task_metrics, out) -> None:
    from .stats import pooled_mean

    present = [task_metrics[t] for t in leaves if t in task_metrics]
    if not present:
        return
    for metric, weight in suite.pooled.items():
        key, wkey = suite.key(metric), suite.key(weight)
        if not any(key in r for r in present):
            continue
        mean, n = pooled_mean((r.get(key), r.get(wkey)) for r in present)
        out[key] = mean
        out[f"{metric}_stderr,{suite.filter_key}"] = "N/A"
    for metric in suite.counts:
        key = suite.key(metric)
        if all(key in r for r in present):
            values = [r[key] for r in present]
            if all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                out[key] = int(sum(int(v) for v in values))


def _patch_table(utils_module) -> None:
    """lm-eval's printed table: our headline metric first, counts as integers, no arrows on
    counts or chance."""
    original = utils_module.make_table
    if getattr(original, "_adept_eval", False):
        return

    def make_table(result_dict, column="results", *args, **kwargs):
        text = original(result_dict, column, *args, **kwargs)
        try:
            return tidy_table(text, result_dict, column)
        except Exception as exc:
            _fell_back("table", exc)
            return text

    make_table._adept_eval = True  # type: ignore[attr-defined]
    utils_module.make_table = make_table


def tidy_table(text: str, result_dict: dict, column: str = "results") -> str:
    from .suites import suite_of

    lines = text.strip("\n").splitlines()
    if len(lines) < 3:
        return text
    headers = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[2:]]
    by_display = {}
    for k, v in (result_dict.get(column) or {}).items():
        by_display[str((v or {}).get("alias", k)).strip()] = k
    blocks, touched = [], False
    for row in rows:
        if row[0] or not blocks:
            blocks.append([row])
        else:
            blocks[-1].append(row)
    out = []
    for block in blocks:
        name = block[0][0].strip().lstrip("- ").strip()
        suite = suite_of(by_display.get(name, name))
        if suite is None:
            out += block
            continue
        touched = True
        order = _metric_order(by_display.get(name, name), suite)
        head = block[0][:4]
        body = sorted(block, key=lambda r: (order.get(r[4], len(order)), r[4]))
        for i, r in enumerate(body):
            r = list(r)
            r[:4] = head if i == 0 else ["", "", "", ""]
            if len(r) > 8 and r[8] == "N/A":  # our intervals are metrics of their own
                r[7:9] = ["", ""]
            if r[4] in suite.counts:
                try:
                    r[6] = str(int(round(float(r[6]))))
                except ValueError:
                    pass
                r[5] = ""
                r[7:9] = ["", ""]
            elif r[4] in ("chance", "p_chance"):
                r[5] = ""
            out.append(r)
    if not touched:
        return text
    return markdown_table(headers, out)


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """The Markdown table lm-eval prints (pytablewriter's layout: headers centred, cells
    left-aligned, columns at least 3 wide), written directly: pytablewriter infers a type for
    every cell and spent ~1 s of a 4 s ADEPT run on a table whose cells are already text."""
    widths = [max([3, _width(h), *(_width(r[i]) for r in rows if i < len(r))])
              for i, h in enumerate(headers)]

    def line(cells):
        return "|" + "|".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths)) + "|"

    head = "|" + "|".join(_centre(h, w) for h, w in zip(headers, widths)) + "|"
    rule = "|" + "|".join("-" * w for w in widths) + "|"
    body = [line([*(r[:len(widths)]), *[""] * (len(widths) - len(r))]) for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


def _width(text: str) -> int:
    """Display width in a terminal: East Asian wide and full-width characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _centre(text: str, width: int) -> str:
    pad = width - _width(text)
    left = pad // 2
    return " " * left + text + " " * (pad - left)


def _metric_order(task: str, suite) -> dict[str, int]:
    if task in suite.tasks:
        if suite.name == "adept":
            from .harness import metric_names
            names = metric_names(task)
        else:
            from .vstyle_harness import metric_names
            names = metric_names(task.split("_", 2)[2])
    else:
        names = [suite.headline, *suite.pooled, *suite.counts]
    return {m: i for i, m in enumerate(names)}


def _patch_git(loggers_utils) -> None:
    """``git describe`` outside a git checkout printed ``fatal: not a git repository``."""
    original = loggers_utils.get_git_commit_hash
    if getattr(original, "_adept_eval", False):
        return

    def get_git_commit_hash():
        try:
            import subprocess

            done = subprocess.run(["git", "describe", "--always"], capture_output=True,
                                  text=True, check=False)
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
            return loggers_utils.get_commit_from_path(os.getcwd())
        except Exception:
            return original()

    get_git_commit_hash._adept_eval = True  # type: ignore[attr-defined]
    loggers_utils.get_git_commit_hash = get_git_commit_hash


class _QuietCustomKwargs:
    """Drops lm-eval's "Custom kwargs can be passed to --metadata" hint for our tasks (it is
    logged once per task, and our tasks document their --metadata keys)."""

    def filter(self, record) -> bool:
        try:
            msg = record.getMessage()
            if "Custom kwargs can be passed to `--metadata`" in msg:
                from .suites import suite_of

                return suite_of(msg.split(":", 1)[0].strip()) is None
        except Exception:
            pass
        return True


def _patch_task_logging(task_module) -> None:
    import logging

    log = logging.getLogger(task_module.__name__)
    if not any(isinstance(f, _QuietCustomKwargs) for f in log.filters):
        log.addFilter(_QuietCustomKwargs())


def _patch_cli(run_module) -> None:
    """A deliberate refusal (``SettingsError``) is one line on stderr, exit status 2."""
    cls = getattr(run_module, "Run", None)
    original = getattr(cls, "_execute", None) if cls is not None else None
    if original is None or getattr(original, "_adept_eval", False):
        return

    def _execute(args):
        from .settings import SettingsError

        try:
            return original(args)
        except SettingsError as exc:
            print(f"adept-eval: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None

    _execute._adept_eval = True  # type: ignore[attr-defined]
    cls._execute = staticmethod(_execute)


def _patch_evaluate(loading_module) -> None:
    """``evaluate.load("speech_judge")`` (and every bare name in ``EVALUATE_MODULES``) loads the
    installed module, offline, with no Hub call.

    evaluate has no plugin hook: bare names are looked up on the Hub (``evaluate-metric/NAME``)
    and then in its module cache. Only our bare names are redirected; a Hub path such as
    ``my-org/speech_judge`` still goes to the Hub.
    """
    original = loading_module.evaluation_module_factory
    if getattr(original, "_adept_eval", False):
        return

    def evaluation_module_factory(path, *args, **kwargs):
        try:
            if path in EVALUATE_MODULES and not kwargs.get("force_local_path"):
                path = str(EVALUATE_MODULES[path]())
        except Exception as exc:
            _fell_back("evaluate module lookup", exc)
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


def _patch_config(config_module) -> None:
    """``lm_eval run`` builds its TaskManager in ``EvaluatorConfig.process_tasks``, which knows
    the requested tasks (``self.tasks``): expose them to the TaskManager wrapper while it runs.
    Written against lm-eval 0.4.13; without that method nothing changes."""
    cls = getattr(config_module, "EvaluatorConfig", None)
    original = getattr(cls, "process_tasks", None) if cls is not None else None
    if original is None or getattr(original, "_adept_eval", False):
        return

    @functools.wraps(original)
    def process_tasks(self, *args, **kwargs):
        try:
            token = _REQUESTED.set(getattr(self, "tasks", None))
        except Exception as exc:
            _fell_back("task index", exc)
            return original(self, *args, **kwargs)
        try:
            return original(self, *args, **kwargs)
        finally:
            _REQUESTED.reset(token)

    process_tasks._adept_eval = True  # type: ignore[attr-defined]
    cls.process_tasks = process_tasks
