"""Test sounds shared by the test files: a tone, synthetic speech, quiet takes of speech, steady
noise, and real TTS speech from the validation bench's engines (``benchmarks.validation.engines``,
run from the repository root).

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


def quiet_take(x: np.ndarray, rate: int, rms_dbfs: float = -58.0,
               noise_below_peak_db: float | None = None, seed: int = 0) -> np.ndarray:
    """``x`` as a quiet recording of it, as a real corpus holds some (a sad take at -58 dBFS
    RMS, peaks near -36 dBFS): 0.3 s of room before and after, the whole scaled to
    ``rms_dbfs``, over white noise at -100 dBFS (a good 16-bit recording's floor) or, with
    ``noise_below_peak_db``, at that many dB under the speech's peak.

    Args:
        x: the speech (float samples).
        rate: its sampling rate.
        rms_dbfs: the whole take's RMS level (dBFS).
        noise_below_peak_db: the noise's RMS under the speech's peak (dB), or None: -100 dBFS.
        seed: the noise's seed.

    Returns:
        float64 samples, to be written as 16-bit PCM as a recorder would.
    """
    pad = np.zeros(int(0.3 * rate))
    speech = np.concatenate([pad, np.asarray(x, dtype=np.float64), pad])
    speech *= 10 ** ((rms_dbfs - 10 * np.log10(np.var(speech))) / 20)
    noise_db = -100.0 if noise_below_peak_db is None else \
        20 * np.log10(np.max(np.abs(speech))) - noise_below_peak_db
    noise = np.random.default_rng(seed).normal(0.0, 10 ** (noise_db / 20), len(speech))
    return speech + noise


def steady_noise(seconds: float, rms_dbfs: float, colour: str = "white", seed: int = 0,
                 rate: int = RATE) -> np.ndarray:
    """Noise with nothing above it, at ``rms_dbfs``: what a recording holds when nobody spoke.

    Args:
        seconds: its length.
        rms_dbfs: its RMS level (dBFS).
        colour: "white", or "pink" (-3 dB per octave, shaped in the spectrum).
        seed: its seed.
        rate: its sampling rate.

    Returns:
        float64 samples at ``rate``.
    """
    n = int(round(seconds * rate))
    x = np.random.default_rng(seed).normal(size=n)
    if colour == "pink":
        spectrum = np.fft.rfft(x)
        spectrum[1:] /= np.sqrt(np.arange(1, len(spectrum)))
        spectrum[0] = 0.0
        x = np.fft.irfft(spectrum, n)
    return x * 10 ** ((rms_dbfs - 10 * np.log10(np.var(x))) / 20)


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


def sad_takes(speaker: str = "female", sentence_ids=("0001", "0002")) -> list[Audio]:
    """espeak-ng speaking ADEPT emotion sentences sadly (the validation bench's plan: lower,
    narrower, slower and 7 dB softer), at the engine's own level.

    Args:
        speaker: "female" or "male".
        sentence_ids: the emotion sentences.

    Returns:
        One rendering per sentence.

    Raises:
        pytest.skip.Exception: espeak-ng is not installed (a failure under ``CI=true``).
    """
    from benchmarks.validation.sentences import plan, sentence

    espeak = tts_engine("espeak")
    items = [(sentence("emotion", sid), plan("emotion", "sadness", sid), "")
             for sid in sentence_ids]
    return [from_array(x, rate) for x, rate in espeak.render_many(items, speaker)]


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
