"""Test sounds shared by the test files: a tone, synthetic speech, and real TTS speech from the
validation bench's engines (``benchmarks.validation.engines``, run from the repository root).

Importable from any test as ``from sounds import ...`` (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import numpy as np
import pytest

from adept_eval.signal.audio import Audio, from_array

#: the sample rate of every sound made here
RATE = 16000


def tone(seconds: float = 2.0, vibrato: float = 0.0) -> np.ndarray:
    """A 220 Hz sine at 0.2 of full scale, optionally with a 5 Hz vibrato: a sound that is not
    speech, for the checks that must refuse one.

    Args:
        seconds: its length.
        vibrato: the vibrato's depth in semitones (0: a steady tone).

    Returns:
        float32 samples at ``RATE``.
    """
    t = np.arange(int(seconds * RATE)) / RATE
    f = 220 * 2 ** (vibrato * np.sin(2 * np.pi * 5 * t) / 12)
    return (0.2 * np.sin(2 * np.pi * np.cumsum(f) / RATE)).astype(np.float32)


def synthetic_speech() -> np.ndarray:
    """One sentence of the synthetic corpus's speech (female, joy): speech-like audio made
    without any TTS engine.

    Returns:
        float32 samples at ``RATE``.
    """
    from adept_eval.corpora import synthetic

    text = synthetic.sentence("emotion", "0001")
    return synthetic.render(text, "female", synthetic.PROFILES[("emotion", "joy")], rate=RATE)


def tts_engine(name: str):
    """The validation bench's TTS engine (or voice set) ``name``, for tests on real speech.

    Args:
        name: a key of ``benchmarks.validation.engines.ENGINES``.

    Returns:
        The engine.

    Raises:
        pytest.skip.Exception: the engine is not installed; the reason names the Debian
            packages that bring it (a failure under ``CI=true``).
    """
    from benchmarks.validation import engines

    if name not in engines.available():
        pytest.skip(f"TTS engine {name} not installed ({engines.install_hint([name])})")
    return engines.ENGINES[name]


# ----------------------------------------------------------------------------- Praat's PSOLA
def _sound(audio: Audio):
    """``audio`` as a Praat sound."""
    import parselmouth

    return parselmouth.Sound(audio.samples.astype(np.float64), audio.rate)


def _audio(sound) -> Audio:
    """A Praat sound as ``Audio``."""
    return from_array(sound.values[0], int(sound.sampling_frequency))


def pitch_shifted(audio: Audio, semitones: float) -> Audio:
    """Praat PSOLA: every F0 point multiplied, durations and formants kept."""
    from parselmouth.praat import call

    snd = _sound(audio)
    manipulation = call(snd, "To Manipulation", 0.01, 75, 600)
    tier = call(manipulation, "Extract pitch tier")
    call(tier, "Multiply frequencies", snd.xmin, snd.xmax, 2 ** (semitones / 12))
    call([tier, manipulation], "Replace pitch tier")
    return _audio(call(manipulation, "Get resynthesis (overlap-add)"))


def time_stretched(audio: Audio, factor: float) -> Audio:
    """Praat PSOLA: durations multiplied by ``factor``, pitch and formants kept."""
    from parselmouth.praat import call

    return _audio(call(_sound(audio), "Lengthen (overlap-add)", 75, 600, factor))
