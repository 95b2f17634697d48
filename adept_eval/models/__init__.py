"""Systems under test, registered as lm-eval models (``--model NAME``).

Their registry is ``adept_eval.names.MODELS`` (lazy ``"module:attr"`` entries, the shape of
every registry here): it lives there, not in this package, because the start-up hook hands it
to lm-eval at interpreter start-up, when importing this package (and lm-eval's model layer with
it) would cost a second. A new model is a ``SpeechSystem`` subclass here plus one entry there.
"""

from adept_eval.models.base import Produced, SpeechSystem, Stimulus
from adept_eval.models.synthesizing import InProcessTTS, SynthesizingSystem

__all__ = ["InProcessTTS", "Produced", "SpeechSystem", "Stimulus", "SynthesizingSystem"]
