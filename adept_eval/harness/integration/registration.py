"""adept-eval's parts where lm-eval and evaluate look for them: our models in lm-eval's model
registry, our bare evaluate names resolving to the installed modules."""

from __future__ import annotations

from adept_eval.names import EVALUATE_MODULES, MODELS
from adept_eval.harness.integration.fallback import fell_back, mark, patched


def register_models(registry_module) -> None:
    """Our models join ``lm_eval.api.registry.model_registry`` as the same lazy ``"module:attr"``
    placeholders lm-eval uses for its own (written against lm-eval 0.4.13, which reads no entry
    points); our user errors reach the ``lm_eval`` console as one message.

    lm-eval fills its registry with its own models (``hf``, ``vllm``, ``dummy``, ...) only when
    ``get_model`` finds it *empty*; ours would leave it non-empty and every built-in model
    unknown. So lm-eval's own lazy table (``lm_eval.models``: a dict of names, no model code) is
    registered first, as ``get_model`` itself would."""
    reg = registry_module.model_registry
    try:
        import lm_eval.models  # noqa: F401  (registers lm-eval's own models, lazily)
    except Exception as exc:
        fell_back("lm-eval's own model table", exc)
    for name in MODELS.names():
        if name not in reg:
            reg.register(name, target=MODELS.target(name))
    from adept_eval.errors import install_excepthook

    install_excepthook()


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
