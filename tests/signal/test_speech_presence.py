"""``speech_presence``: what is refused as no speech (a tone, DC, noise, silence, a steady
sound shaped like speech, steady noise at a quiet take's level) and what is not (synthetic
speech; real TTS speech with compressed dynamics or a flattened pitch, or recorded quietly,
rendered by the validation bench's engines, skipping with the Debian packages to install where
they are absent)."""

from __future__ import annotations

import numpy as np
import pytest

from adept_eval.signal.audio import Audio
from adept_eval.signal.speech_presence import no_speech_reason

from sounds import RATE, synthetic_speech, tone, tts_engine


@pytest.mark.parametrize("kind", ["tone", "vibrato", "dc", "noise", "silence"])
def test_non_speech_has_a_reason(kind):
    speech = synthetic_speech()
    rng = np.random.default_rng(0)
    env = np.sqrt(np.convolve(speech.astype(np.float64) ** 2, np.ones(160) / 160, mode="same"))
    signal = {"tone": tone(), "vibrato": tone(vibrato=2.0),
              "dc": np.full(2 * RATE, 0.25, np.float32),
              "noise": (rng.normal(0, 1, len(speech)) * env).astype(np.float32),
              "silence": np.zeros(2 * RATE, np.float32)}[kind]
    assert no_speech_reason(Audio(signal, RATE))


def test_speech_has_no_reason():
    assert no_speech_reason(Audio(synthetic_speech(), RATE)) is None


def _buzz(f0, seconds, formants=()):
    """A harmonic buzz at a steady ``f0``; with ``formants`` ((Hz, bandwidth), ...), its
    harmonics weighted as one vowel's spectrum would weigh them (one timbre throughout)."""
    t = np.arange(int(seconds * RATE)) / RATE
    out = np.zeros_like(t)
    for h in range(1, int(RATE / 2 / f0)):
        gain = (sum(np.exp(-((h * f0 - f) / bw) ** 2) for f, bw in formants)
                if formants else 1.0)
        out += gain * np.sin(2 * np.pi * h * f0 * t) / h
    return out / np.max(np.abs(out))


@pytest.mark.parametrize("kind", ["tone", "buzz", "vowel"])
def test_a_steady_sound_shaped_like_speech_is_not_speech(kind):
    """A tone or buzz at one pitch, its loudness following a sentence's syllables, has a level
    that rises and falls and (for the pure tone) a frame-to-frame spectral change as large as
    speech's: only its steady pitch and steady timbre give it away."""
    speech = synthetic_speech().astype(np.float64)
    env = np.sqrt(np.convolve(speech ** 2, np.ones(320) / 320, mode="same"))
    seconds = len(speech) / RATE
    source = {"tone": np.sin(2 * np.pi * 180 * np.arange(len(speech)) / RATE),
              "buzz": _buzz(180, seconds),
              "vowel": _buzz(180, seconds, ((700, 120), (1200, 150), (2600, 200)))}[kind]
    shaped = (0.5 * source[:len(env)] * env / env.max()).astype(np.float32)
    reason = no_speech_reason(Audio(shaped, RATE))
    assert reason and "neither the pitch nor the timbre moves" in reason, reason


def test_a_voice_with_compressed_dynamics_is_speech():
    """flite's slt keeps the middle half of its frames within ~2.5 dB on some sentences; the
    speech check took that for "a steady sound" and refused real speech."""
    from benchmarks.validation.sentences import NEUTRAL_PLAN, sentence

    flite = tts_engine("flite")
    items = [(sentence(c, sid), NEUTRAL_PLAN, "") for c, sid in
             (("interpersonal_attitude", "0303"), ("syntactic_phrasing", "0400"),
              ("marked_tonicity", "0501"))]
    for (s, _, _), (x, rate, _) in zip(items, flite.plain(items, "female")):
        assert no_speech_reason(Audio(x, rate)) is None, s.text


def test_monotone_speech_is_speech():
    """A voice whose pitch does not move (PSOLA-monotonised, as perception studies flatten
    speech, or a system that flattens it; the benchmark's ``monotone-150hz`` transform, here at
    110 Hz) is speech: it is scored, not refused as a tone."""
    from adept_eval.signal import prosody
    from adept_eval.signal.speech_presence import MIN_F0_SPREAD_ST
    from benchmarks.validation.families import _monotone
    from benchmarks.validation.sentences import NEUTRAL_PLAN, sentence

    flite = tts_engine("flite")
    flatten = _monotone(110.0)
    items = [(sentence(c, sid), NEUTRAL_PLAN, "") for c, sid in
             (("emotion", "0001"), ("topical_emphasis", "0102"), ("syntactic_phrasing", "0400"))]
    for (s, _, _), (x, rate, _) in zip(items, flite.plain(items, "male")):
        y, rate = flatten(np.asarray(x, dtype=np.float64), rate, np.random.default_rng(0))
        flat = y.astype(np.float32)
        feats = prosody.extract(Audio(flat, rate))
        f0 = feats.f0[~np.isnan(feats.f0)]
        assert np.subtract(*np.percentile(f0, [75, 25])) < MIN_F0_SPREAD_ST, s.text  # monotone
        assert no_speech_reason(Audio(flat, rate)) is None, s.text


@pytest.mark.parametrize("rms_dbfs", [-58.0, -70.0, -78.0])
def test_a_quiet_take_is_speech_and_steady_noise_at_its_level_is_not(rms_dbfs):
    """The speech check heard "no audible frame" below a loudest 20 ms of -60 dBFS; a quiet take
    is judged against its own floor (``audio.faint_reason``), as the file check judges it."""
    from sounds import quiet_take, sad_takes, steady_noise

    def recorded(x, rate):  # in 16-bit, as a recorder writes it
        return Audio((np.round(x * 32768) / 32768).astype(np.float32), rate)

    takes = [(synthetic_speech(), RATE)] + [(a.samples, a.rate) for a in sad_takes()]
    for x, rate in takes:
        assert no_speech_reason(recorded(quiet_take(x, rate, rms_dbfs), rate)) is None, rate
    for colour in ("white", "pink"):
        reason = no_speech_reason(recorded(steady_noise(3.0, rms_dbfs, colour), RATE))
        assert reason, colour  # at -58 dBFS pink noise's loudest frames are heard: not voiced
        assert reason.startswith("silent: ") or rms_dbfs > -60, (colour, reason)
