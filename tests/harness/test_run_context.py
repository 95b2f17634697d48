"""One run's context (``harness.run_context``): begun where a run starts, found by every task,
its once-per-run work done once; and the sample observers the models declare."""

import pytest

from adept_eval.harness import run_context
from adept_eval.harness.run_context import RunContext


def test_once_computes_on_the_first_call_and_keeps_no_failure():
    context = RunContext()
    calls = []
    assert context.once("corpus", "/c", lambda: calls.append(1) or "opened") == "opened"
    assert context.once("corpus", "/c", lambda: calls.append(1) or "again") == "opened"
    assert context.once("listener", "/c", lambda: "another kind") == "another kind"
    assert len(calls) == 1

    def broken():
        calls.append(1)
        raise RuntimeError("no corpus")

    for _ in range(2):  # a failure is not kept: the next call tries again
        with pytest.raises(RuntimeError):
            context.once("corpus", "/missing", broken)
    assert len(calls) == 3


def test_a_run_s_context_is_current_until_it_ends():
    run_context.reset()
    standalone = run_context.current()
    assert run_context.current() is standalone and standalone.model is None
    token = run_context.begin("audio-dir", frozenset({"path"}))
    running = run_context.current()
    assert running is not standalone and running.model_keys == frozenset({"path"})
    running.note_identity("adept_emotion_female", scorer={"listener": "acoustic"})
    running.note_identity("adept_emotion_female", corpus={"name": "ADEPT"})
    assert run_context.end(token) is running
    assert running.identities == {"adept_emotion_female": {"scorer": {"listener": "acoustic"},
                                                           "corpus": {"name": "ADEPT"}}}
    assert run_context.current() is standalone
    run_context.reset()
    assert run_context.current() is not standalone


def test_a_run_routes_options_and_identifies_its_corpus_once(use_corpus, monkeypatch):
    """Two tasks of one run: the options are routed and the corpus recognised once; each task's
    identity reaches the results; the next run starts afresh."""
    from conftest import run_lm_eval

    from adept_eval import identity
    from adept_eval.harness import settings

    counted = {"split": 0, "corpus": 0}
    real_split, real_corpus = settings.split, identity.adept_corpus

    def split(*args, **kwargs):
        counted["split"] += 1
        return real_split(*args, **kwargs)

    def adept_corpus(corpus):
        counted["corpus"] += 1
        return real_corpus(corpus)

    monkeypatch.setattr(settings, "split", split)
    monkeypatch.setattr(identity, "adept_corpus", adept_corpus)
    tasks = ["adept_emotion_female", "adept_marked_tonicity_female"]
    res = run_lm_eval("adept-natural", tasks, limit=1)
    assert counted == {"split": 1, "corpus": 1}
    suite = res["adept_eval"]["suites"]["adept"]
    assert suite["tasks"] == sorted(tasks) and suite["scorer"]["listener"] == "acoustic"
    assert suite["corpus"]["synthetic"] is True
    run_lm_eval("adept-natural", tasks[:1], limit=1)
    assert counted == {"split": 2, "corpus": 2}


def test_the_harness_observes_the_models_samples_once(use_corpus):
    from adept_eval.harness import adept as harness
    from adept_eval.models.base import SAMPLE_OBSERVERS, observe_samples

    harness.load_questions("adept_emotion_female")
    harness.load_questions("adept_emotion_male")
    assert sum(o is harness.SAMPLES_TO_LISTENER for o in SAMPLE_OBSERVERS) == 1
    observe_samples(harness.SAMPLES_TO_LISTENER)
    assert sum(o is harness.SAMPLES_TO_LISTENER for o in SAMPLE_OBSERVERS) == 1
