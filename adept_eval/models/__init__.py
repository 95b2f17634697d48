"""Systems under test, registered as lm-eval models (``--model NAME``; the list of names is
``adept_eval.lm_eval_plugin.MODELS``)."""

from .base import Produced, SpeechSystem, Stimulus, SystemSetupError
from .synthesizing import InProcessTTS, SynthesizingSystem

__all__ = ["InProcessTTS", "Produced", "SpeechSystem", "Stimulus", "SynthesizingSystem",
           "SystemSetupError"]
