"""Is there speech in a sample at all? A tone, a DC offset, noise or silence is not speech.

A listener that compares prosody will find *some* pitch, loudness and timing in any signal; a
steady tone or noise shaped like the reference's loudness can then look like a good prosody
transfer. Samples that hold no speech are refused before anyone scores them (``adept-eval
check``) and the acoustic listener will not answer on them.

Speech, for this test, is a signal with (1) frames that rise above its own floor (the file
check's rule, ``audio.faint_reason``: a quiet take is heard), (2) voicing on a fair share of its
active frames, (3) a pitch that moves (intonation) or, when it does not, a timbre that does, (4) a
level that rises and falls with the syllables, and (5) a spectrum that changes from frame to frame
(articulation). Whispered or heavily distorted speech can fail (2) - see the README.

Monotone speech is speech: a system that flattens the pitch (or a PSOLA-monotonised stimulus, as
perception studies use) is scored on the cues it keeps (timing, pauses, loudness), not refused.
What a steady pitch alone cannot tell apart, a buzz or tone shaped by a speech envelope, still
holds one timbre throughout, while the vowels and consonants of even a monotone voice keep
changing its broad spectral shape (``MIN_TIMBRE_SPREAD``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from adept_eval.signal.audio import AUDIBLE_DBFS, Audio, faint_reason, read_audio

MIN_VOICED_SHARE = 0.15  # share of active frames with a pitch
MIN_F0_SPREAD_ST = 0.4  # interquartile range of the pitch, semitones
# A steady pitch is refused only with a steady timbre: the mean standard deviation, over the
# active frames, of the cepstral coefficients c1..c4 (the spectrum's broad shape). Measured
# (stop 36): real TTS speech of six voice sets, sampled from their corpora and 49 system
# variants (22,805 renderings), 1.39-5.76, below 2.0 only under 20 dB white or pink noise;
# speech monotonised by PSOLA 3.33-5.36 (60 renderings; 40 others, pitch IQR 0.01-0.09 st, were
# all refused before); a pure tone 0.90-1.76, a harmonic buzz 0.04-1.27 and a buzz filtered to
# one vowel 0.34-1.47, each shaped by a speech envelope.
MIN_TIMBRE_SPREAD = 2.0
MIN_SPECTRAL_CHANGE = 0.5  # median frame-to-frame MFCC change (Euclidean, c1..c12)
MIN_LEVEL_SPREAD_DB = 3.0  # 10th-90th percentile range of the active frames' level: syllables
# (not the interquartile range: a voice with compressed dynamics, flite's slt, keeps the middle
# half of its frames within 2.3 dB, but its loud vowels and soft consonants still span >= 5 dB)


def reason_from_features(feats) -> str | None:
    """Why a sample's features show no speech.

    Args:
        feats: The sample's ``prosody.Features``.

    Returns:
        The reason, or None when they look like speech.
    """
    if feats.n < 5:
        return "silent: no audible frame"
    silent = silence_reason(feats)
    if silent:
        return silent
    active = feats.speech
    voiced = ~np.isnan(feats.f0)
    share = float(np.mean(voiced[active])) if active.any() else 0.0
    if share < MIN_VOICED_SHARE:
        return f"only {share:.0%} of the active frames are voiced (noise, DC or clicks?)"
    f0 = feats.f0[voiced]
    spread = float(np.subtract(*np.percentile(f0, [75, 25])))
    timbre = timbre_spread(feats)
    if spread < MIN_F0_SPREAD_ST and timbre < MIN_TIMBRE_SPREAD:
        return (f"neither the pitch nor the timbre moves (pitch interquartile range "
                f"{spread:.2f} semitones, timbre spread {timbre:.2f}: a steady tone or buzz?)")
    level = feats.energy[active]
    level_spread = float(np.subtract(*np.percentile(level, [90, 10])))
    if level_spread < MIN_LEVEL_SPREAD_DB:
        return (f"the level does not rise and fall with syllables (10th-90th percentile range "
                f"{level_spread:.1f} dB: a steady sound?)")
    change = float(np.median(np.linalg.norm(np.diff(feats.mfcc[active], axis=0), axis=1))) \
        if active.sum() > 2 else 0.0
    if change < MIN_SPECTRAL_CHANGE:
        return f"the spectrum does not change (median frame change {change:.2f}: a steady sound?)"
    return None


def silence_reason(feats) -> str | None:
    """Why a sample's features hold nothing audible: when its loudest frame is below
    ``audio.AUDIBLE_DBFS``, nothing rising above its own noise floor (``audio.faint_reason``,
    the file check's rule), so a quiet take of real speech is heard and steady low noise is not.

    Args:
        feats: The sample's ``prosody.Features``.

    Returns:
        The reason (starting "silent"), or None when something is audible.
    """
    from adept_eval.signal.prosody import HOP_S

    if feats.n == 0:
        return "silent: no frames"
    if float(np.max(feats.energy)) >= AUDIBLE_DBFS:
        return None
    reason = faint_reason(feats.energy, feats.noise_floor, HOP_S)
    return f"silent: {reason}" if reason else None


def timbre_spread(feats) -> float:
    """How much the spectrum's broad shape varies over the active frames: the mean standard
    deviation of the cepstral coefficients c1..c4 (vowels and consonants move it; a tone or
    buzz, however loud or soft, does not).

    Args:
        feats: The sample's ``prosody.Features``.

    Returns:
        The spread (0.0 with fewer than 3 active frames).
    """
    cepstra = feats.mfcc[feats.speech][:, :4]
    return float(np.mean(cepstra.std(axis=0))) if len(cepstra) > 2 else 0.0


def no_speech_reason(audio: Audio | str | Path) -> str | None:
    """Why a sample holds no speech.

    Args:
        audio: The sample, decoded or as a file.

    Returns:
        The reason, or None when it holds speech.

    Raises:
        AudioError: The file cannot be decoded or analysed.
    """
    from adept_eval.signal.prosody import extract

    if not isinstance(audio, Audio):
        audio = read_audio(audio)
    x = audio.samples.astype(np.float64)
    if x.size == 0:
        return "silent: no samples"
    # a DC offset is not sound: judge the signal around its mean
    centred = Audio((x - x.mean()).astype(np.float32), audio.rate, audio.channels, audio.path)
    reason = reason_from_features(extract(centred))
    if reason and reason.startswith("silent") and abs(x.mean()) >= 10 ** (AUDIBLE_DBFS / 20):
        return f"a constant offset (DC {x.mean():+.3f}) and nothing audible around it"
    return reason
