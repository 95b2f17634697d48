"""``integration.run``: the ``simple_evaluate`` wrapper begins the run's context with the keys
``--model_args`` gave, ends it when the run returns (or fails), attaches the identities its
tasks noted, and refuses what a run of ours cannot take before lm-eval sees it."""

from types import SimpleNamespace

import pytest

from adept_eval.errors import SettingsError, UnsupportedOptionError
from adept_eval.harness import run_context
from adept_eval.harness.integration.run import patch_evaluator


def _evaluator(seen: list):
    """A stand-in for ``lm_eval.evaluator`` whose ``simple_evaluate`` notes a task's identity in
    the current run context, as the ADEPT harness does, and returns lm-eval-shaped results."""

    def simple_evaluate(model=None, model_args=None, tasks=None, use_cache=None,
                        cache_requests=False, metadata=None, task_manager=None):
        context = run_context.current()
        seen.append(context)
        if tasks == "boom":
            raise RuntimeError("lm-eval failed")
        context.note_identity("adept_emotion_female", scorer={"listener": "acoustic"},
                              corpus={"name": "ADEPT", "sha256": "a" * 64})
        return {"results": {"adept_emotion_female": {"acc,none": 1.0}},
                "configs": {}, "n-samples": {}}

    module = SimpleNamespace(simple_evaluate=simple_evaluate)
    patch_evaluator(module)
    return module


def test_a_run_of_ours_has_its_own_context_and_gets_its_identity():
    run_context.reset()
    outside = run_context.current()
    seen = []
    evaluator = _evaluator(seen)
    results = evaluator.simple_evaluate(model="adept-natural", model_args="name=x,path=/s",
                                        tasks=["adept_emotion_female"])
    context, = seen
    assert context is not outside and context.model == "adept-natural"
    assert context.model_keys == frozenset({"name", "path"})
    assert run_context.current() is outside  # ended with the run
    suite = results["adept_eval"]["suites"]["adept"]
    assert suite["scorer"] == {"listener": "acoustic"} and suite["corpus"]["name"] == "ADEPT"


def test_a_failed_run_ends_its_context_too():
    run_context.reset()
    outside = run_context.current()
    seen = []
    with pytest.raises(RuntimeError, match="lm-eval failed"):
        _evaluator(seen).simple_evaluate(model="adept-natural", model_args="", tasks="boom")
    assert seen[0] is not outside and run_context.current() is outside


def test_a_run_of_others_is_left_alone():
    run_context.reset()
    outside = run_context.current()
    seen = []
    results = _evaluator(seen).simple_evaluate(model="hf", model_args="pretrained=gpt2",
                                               tasks=["hellaswag"])
    assert seen == [outside] and "adept_eval" not in results


@pytest.mark.parametrize("kwargs, error, says", [
    ({"use_cache": "/tmp/cache"}, UnsupportedOptionError, "--use_cache: not for adept-eval's"),
    ({"cache_requests": True}, UnsupportedOptionError, "--cache_requests: not for adept-eval's"),
    ({"model_args": "api_key=abc"}, SettingsError, "_env"),
    ({"metadata": {"task": "adept_emotion_male"}}, SettingsError, "'task' is not a --metadata"),
])
def test_what_a_run_of_ours_cannot_take_is_refused_before_lm_eval_runs(kwargs, error, says):
    seen = []
    with pytest.raises(error, match=says):
        _evaluator(seen).simple_evaluate(**{"model": "adept-natural", "model_args": "",
                                            "tasks": ["adept_emotion_female"], **kwargs})
    assert seen == []
