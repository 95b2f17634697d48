"""adept-eval's parts where lm-eval and evaluate look for them: our models found by lm-eval's
``get_model``, our bare evaluate names resolving to the installed modules. Any other name is
looked up exactly as lm-eval and evaluate look it up."""

from __future__ import annotations

from adept_eval.names import EVALUATE_MODULES, MODELS
from adept_eval.harness.integration.fallback import fell_back, mark, patched


def register_models(registry_module) -> None:
    """Our models are found by lm-eval's ``get_model(name)``: the first time it is asked for one
    of ours, that model joins ``lm_eval.api.registry.model_registry`` as the same lazy
    ``"module:attr"`` placeholder lm-eval uses for its own (written against lm-eval 0.4.13,
    which reads no entry points).

    Nothing is registered when lm-eval's registry is imported: lm-eval fills it with its own
    models (``hf``, ``vllm``, ``dummy``, ...) only when ``get_model`` finds it *empty*, so a
    registry holding ours from the start would have to be filled with all of lm-eval's at
    import too, and a user registering a model of their own under a built-in name not yet
    loaded would be told it is "already registered". Asked for one of ours, the wrapper fills
    an empty registry first, as ``get_model`` itself would, then adds that model; any other
    name goes to lm-eval's ``get_model`` untouched (its "Supported model names" included).

    Args:
        registry_module: ``lm_eval.api.registry``, whose ``get_model`` is wrapped in place.
    """
    original = registry_module.get_model
    if patched(original):
        return

    def get_model(model_name, *args, **kwargs):
        try:
            if isinstance(model_name, str) and model_name in MODELS:
                reg = registry_module.model_registry
                if model_name not in reg:
                    if len(reg) == 0:
                        import lm_eval.models  # noqa: F401  (lm-eval's own, lazily)
                    reg.register(model_name, target=MODELS.target(model_name))
        except Exception as exc:
            fell_back("model registration", exc)
        return original(model_name, *args, **kwargs)

    registry_module.get_model = mark(get_model, original)


def patch_evaluate(loading_module) -> None:
    """``evaluate.load("speech_judge")`` (and every bare name in ``EVALUATE_MODULES``) loads the
    installed module, offline, with no Hub call.

    Written against evaluate 0.4.6 (as installed with lm-eval 0.4.13): it has no plugin hook;
    bare names are looked up on the Hub (``evaluate-metric/NAME``) and then in its module
    cache, both in ``evaluation_module_factory``. Only our bare names are redirected; a Hub
    path such as ``my-org/speech_judge`` still goes to the Hub.
    """
    original = loading_module.evaluation_module_factory
    if patched(original):
        return

    def evaluation_module_factory(path, *args, **kwargs):
        try:
            if path in EVALUATE_MODULES and not kwargs.get("force_local_path"):
                path = str(EVALUATE_MODULES[path]())
        except Exception as exc:
            fell_back("evaluate module lookup", exc)
        return original(path, *args, **kwargs)

    loading_module.evaluation_module_factory = mark(evaluation_module_factory)
