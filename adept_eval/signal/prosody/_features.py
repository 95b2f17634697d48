"""Prosodic features of one utterance: F0, frame energy, speech frames and the MFCCs that align
renditions, extracted from its audio.

Features are on 20 ms frames of the audio resampled to 16 kHz: F0 in semitones (Praat's
autocorrelation pitch tracker via praat-parselmouth; NaN where unvoiced), frame energy in dB,
which frames are speech, and MFCCs used only to align two renditions of the same sentence in
time (dynamic time warping).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adept_eval.errors import AudioError
from adept_eval.signal.prosody._pools import one_blas_thread
from adept_eval.signal.audio import (
    MIN_RATE,
    Audio,
    resample,
    zero_phase_filtered,
)


FEATURE_VERSION = "6"
ANALYSIS_RATE = 16000
HOP_S = 0.02  # 20 ms frames: fine enough for prosody, 4x cheaper to align than 10 ms
F0_FLOOR, F0_CEILING = 60.0, 600.0
SPEECH_DB_BELOW_MAX = 35.0
# Noise: a frame is only speech (or only a pause is silent) relative to the recording's own
# noise floor as well - its quietest frames (5th percentile, the level of its pauses and edges).
# With white noise at 20 dB SNR the floor is ~20-25 dB below the loudest frame, so "35 dB below
# the loudest" would call the noise speech: leading/trailing noise would not be trimmed and no
# pause would ever be found. Clean audio (digital silence, room noise 50+ dB down) is unaffected.
NOISE_FLOOR_PERCENTILE = 5.0
ABOVE_NOISE_DB = 6.0
NOISE_RULE_MAX_DB = 10.0  # ... but never closer than this to the loudest frame (a steady tone
# has its floor at its peak: it must stay "active" for the speech check to say what it is)


def above_noise(loudest: float, noise_floor: float, below_max_db: float) -> float:
    """The level (dB) a frame must exceed to count as sound: ``below_max_db`` under the
    loudest frame, or ``ABOVE_NOISE_DB`` over the noise floor where that is higher (capped
    at ``NOISE_RULE_MAX_DB`` under the loudest).

    Args:
        loudest: The loudest frame's level (dB).
        noise_floor: The recording's noise floor (dB).
        below_max_db: How far under the loudest frame sound may lie.

    Returns:
        The threshold (dB).
    """
    return max(loudest - below_max_db,
               min(noise_floor + ABOVE_NOISE_DB, loudest - NOISE_RULE_MAX_DB))

# Just-noticeable differences: smaller deviations count as no deviation at all, as for a
# listener (F0 ~1 semitone for intonation, ~2 dB loudness, ~8% duration).
JND_F0_ST = 1.0
JND_ENERGY_DB = 2.0
JND_TEMPO = np.log(1.08)
JND_TIMING = 0.02  # a shift of 2% of the sentence's length in where time is spent
MISSING_F0_ST = 6.0  # the deviation charged where one side is voiced and the other is not


@dataclass(frozen=True)
class Features:
    """One utterance's prosodic features, frame by frame, trimmed to its speech."""

    f0: np.ndarray  # semitones re 100 Hz, NaN where unvoiced
    energy: np.ndarray  # dB (re full scale), per frame
    mfcc: np.ndarray  # (frames, 12), cepstral-mean-normalised, for alignment only
    speech: np.ndarray  # bool: frame is speech (within 35 dB of the loudest, above the noise)
    noise_floor: float = -100.0  # dB: the recording's quietest frames (``NOISE_FLOOR_PERCENTILE``)

    @property
    def n(self) -> int:
        """The number of frames."""
        return len(self.energy)


def _mel_filterbank(n_fft: int, rate: int, n_mels: int = 26) -> np.ndarray:
    """Triangular filters evenly spaced on the mel scale (HTK's formula), (n_mels, n_fft//2+1)."""
    mel = lambda f: 2595 * np.log10(1 + f / 700.0)  # noqa: E731
    edges_hz = 700 * (10 ** (np.linspace(mel(0.0), mel(rate / 2), n_mels + 2) / 2595) - 1)
    bins = np.fft.rfftfreq(n_fft, 1 / rate)
    lo, mid, hi = edges_hz[:-2, None], edges_hz[1:-1, None], edges_hz[2:, None]
    return np.maximum(0, np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid)))


_MEL = _mel_filterbank(512, ANALYSIS_RATE)
_WINDOW = np.hamming(int(0.025 * ANALYSIS_RATE))


def _frames(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """25 ms frames every HOP_S seconds, and their centre times."""
    win, hop = len(_WINDOW), int(HOP_S * ANALYSIS_RATE)
    if len(x) < win:
        x = np.pad(x, (0, win - len(x)))
    n = 1 + (len(x) - win) // hop
    # a strided view, not a copy: every use makes a new (contiguous) array of it
    frames = np.lib.stride_tricks.sliding_window_view(x, win)[::hop]
    return frames, (np.arange(n) * hop + win / 2) / ANALYSIS_RATE


# Below the voice: mains hum (50/60 Hz), rumble and a DC offset carry no prosody, but Praat's
# pitch tracker hears them: a 50 Hz tone 30 dB under the peak (the validation bench's
# delivery-extra hum) drops up to a quarter of a low male voice's voiced frames (espeak-ng),
# enough to cost the listener 6 of 40 emotion questions on festival -> espeak. The pitch is
# therefore tracked on the signal high-passed first, as speech front ends do (3GPP's AMR codec
# high-passes its input at 80 Hz, TS 26.090 sec. 4.2.1): zero-phase, so nothing moves in time,
# and the pitch of a voice whose fundamental is weakened is found from its harmonics. Energy and
# MFCCs keep the whole band: what decides speech and pauses is not what hum disturbs, and
# high-passing them too moves marginal emotion and attitude answers of clean copies.
RUMBLE_CUTOFF_HZ = 70.0


#: the longest audio ``extract`` analyses: one ADEPT sentence lasts seconds, and a sample more
#: than 3x its reference fails the audio check (``audio.DURATION_RATIO_LIMITS``); the audio-LLM
#: listener refuses an ADEPT sample over the same 60 s. Longer is not one utterance, and its
#: analysis (and every alignment with it, quadratic in length) would cost minutes.
MAX_ANALYSIS_S = 60.0


def analysable(audio: Audio) -> None:
    """Raise AudioError naming the file when ``extract`` cannot use ``audio``: a sampling rate
    below the audio check's ``audio.MIN_RATE`` (8 kHz; the analysis needs speech up to 4 kHz,
    and a header claiming a few Hz would be resampled to 16 kHz, thousands of times its size:
    a 1 Hz header would take 230 s and 21 GB) or longer than ``MAX_ANALYSIS_S``. Checked before
    any resampling, so a refused file costs nothing.

    Args:
        audio: The decoded audio.

    Raises:
        AudioError: Its rate is below ``audio.MIN_RATE`` or it lasts over ``MAX_ANALYSIS_S``.
    """
    where = audio.path or "in-memory audio"
    if audio.rate < MIN_RATE:
        raise AudioError(f"{where}: sampling rate {audio.rate} Hz is below {MIN_RATE} Hz: too "
                         "low for the prosody analysis (not analysed)")
    if audio.duration > MAX_ANALYSIS_S:
        raise AudioError(f"{where}: {audio.duration:.1f} s is longer than the "
                         f"{MAX_ANALYSIS_S:g} s the prosody analysis takes for one utterance "
                         "(not analysed)")


def extract(audio: Audio) -> Features:
    """Features of one utterance, trimmed to its speech (leading/trailing silence removed).

    Pitch is Praat's autocorrelation tracker (parselmouth) at 16 kHz (an 8 kHz copy is ~40%
    cheaper but makes octave errors on 1-2% of frames of real speech, which F0 RMSE and GPE
    count in full), on the signal without what lies under ``RUMBLE_CUTOFF_HZ``; energy and
    MFCCs are computed here with numpy's FFT.

    BLAS runs on one thread meanwhile (``one_blas_thread``): its matrix products differ in their
    last bits between thread counts, and the features must be the same in a pool worker, in
    the listening process and in a user's own call.

    Args:
        audio: The decoded audio.

    Returns:
        The features, from the first to the last speech frame.

    Raises:
        AudioError: ``analysable`` refuses the audio.
    """
    with one_blas_thread():
        return _extract(audio)


def _extract(audio: Audio) -> Features:
    """``extract``'s work, on whatever BLAS threads the caller has."""
    import parselmouth
    from scipy.fft import dct

    analysable(audio)
    x = resample(audio, ANALYSIS_RATE).samples.astype(np.float64)
    frames, times = _frames(x)
    energy = 10 * np.log10(np.mean(frames ** 2, axis=1) + 1e-10)
    spectrum = np.abs(np.fft.rfft(frames * _WINDOW, 512)) ** 2
    logmel = np.log(spectrum @ _MEL.T + 1e-10)
    mfcc = dct(logmel, type=2, norm="ortho", axis=1)[:, 1:13]  # c0 dropped: energy is its own

    # a 4th-order high-pass, forwards and backwards: 24 dB down at 50 Hz, 0.5 dB at 100 Hz
    without_rumble = zero_phase_filtered(x, ANALYSIS_RATE, RUMBLE_CUTOFF_HZ, "highpass")
    pitch = parselmouth.Sound(without_rumble, ANALYSIS_RATE).to_pitch_ac(
        time_step=HOP_S, pitch_floor=F0_FLOOR, pitch_ceiling=F0_CEILING)
    st = _f0_on_frames(pitch.xs(), pitch.selected_array["frequency"], times)

    floor = float(np.percentile(energy, NOISE_FLOOR_PERCENTILE))
    speech = energy > above_noise(float(energy.max()), floor, SPEECH_DB_BELOW_MAX)
    if speech.any():
        first, last = np.argmax(speech), len(speech) - np.argmax(speech[::-1])
    else:
        first, last = 0, len(speech)
    mf = mfcc[first:last]
    mf = mf - mf.mean(axis=0, keepdims=True)
    return Features(st[first:last], energy[first:last], mf, speech[first:last], floor)


def _f0_on_frames(track_times: np.ndarray, track_hz: np.ndarray, times: np.ndarray
                  ) -> np.ndarray:
    """The pitch track (semitones re 100 Hz, NaN unvoiced) read at our frame centres.

    The two grids are offset by a fraction of a frame, so a frame takes its voicing from the
    nearest track frame and its F0 from interpolating the two track frames around it, in
    semitones, only when both are voiced; at a voicing edge it takes the voiced neighbour's
    value. (Interpolating Hz between a voiced frame and an unvoiced 0 would invent F0 values
    far below the real one: gross errors at every voicing onset.)"""
    if not len(track_times):
        return np.full(len(times), np.nan)
    voiced_track = track_hz > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        st_track = np.where(voiced_track, 12 * np.log2(np.maximum(track_hz, 1e-9) / 100.0),
                            np.nan)
    last = len(track_times) - 1
    hi = np.clip(np.searchsorted(track_times, times), 0, last)
    lo = np.clip(hi - 1, 0, last)
    nearest = np.where(np.abs(times - track_times[lo]) <= np.abs(track_times[hi] - times), lo, hi)
    span = np.where(hi > lo, track_times[hi] - track_times[lo], 1.0)
    w = np.clip((times - track_times[lo]) / span, 0.0, 1.0)
    both = voiced_track[lo] & voiced_track[hi]
    st = np.where(both, (1 - w) * st_track[lo] + w * st_track[hi], st_track[nearest])
    step = track_times[1] - track_times[0] if last else HOP_S
    outside = (times < track_times[0] - step / 2) | (times > track_times[-1] + step / 2)
    st[~voiced_track[nearest] | outside] = np.nan
    return st

