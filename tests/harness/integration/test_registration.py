"""lm-eval's model registry is lm-eval's own until one of our models is asked for."""

from __future__ import annotations

import os
import subprocess
import sys

# registers a model of the user's own under a built-in name not yet loaded, then asks lm-eval
# for an unknown name (its "Supported model names") and for lm-eval's dummy
_SCRIPT = """
import sys
import lm_eval.api.registry as r
import lm_eval.evaluator, lm_eval.tasks, lm_eval._cli.harness  # every module the hook patches
print("size at import", len(r.model_registry))
print("excepthook", sys.excepthook is sys.__excepthook__)
from lm_eval.api.model import LM
try:
    r.register_model("textsynth")(type("Mine", (LM,), {}))
    print("registered textsynth")
except Exception as exc:
    print("refused", type(exc).__name__, exc)
try:
    r.get_model("no-such-model")
except ValueError as exc:
    print(exc)
"""


def _run(script: str, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "ADEPT_EVAL_NO_LM_EVAL_HOOK"}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**full, **env}, timeout=300)


def test_the_registry_is_lm_evals_own_for_everyone_else():
    """With the plugin, importing the registry loaded all 41 models, ``textsynth`` could not be
    registered by a user ("already registered") and "Supported model names" listed ours; the
    process's excepthook was replaced. Now the output is the same as without the plugin."""
    plain, guest = _run(_SCRIPT, ADEPT_EVAL_NO_LM_EVAL_HOOK="1"), _run(_SCRIPT)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert "size at import 0" in plain.stdout and "registered textsynth" in plain.stdout
    assert "excepthook True" in plain.stdout
    assert guest.stdout == plain.stdout, guest.stderr[-2000:]
    assert "adept-natural" not in guest.stdout


def test_our_models_and_lm_evals_are_found_when_asked_for():
    done = _run("import lm_eval.api.registry as r\n"
                "print(r.get_model('adept-natural').__name__, r.get_model('dummy').__name__)\n"
                "print(len(r.model_registry) > 30, 'tts-command' in r.model_registry)\n")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["NaturalSystem", "DummyLM", "True", "False"], done.stdout
