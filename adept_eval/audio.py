"""The one place audio is read, resampled and checked.

Decoding goes through soundfile (libsndfile ships inside its wheels with wav/flac/ogg/mp3), so
nothing here needs torch, torchcodec or FFmpeg.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

AUDIO_EXTENSIONS: tuple[str, ...] = (".wav", ".flac", ".mp3", ".ogg")
COMMON_RATES = frozenset({8000, 16000, 22050, 24000, 32000, 44100, 48000})

SILENCE_DBFS = -55.0  # an RMS below this over the whole file is "silent"
CLIP_LEVEL = 0.999
CLIP_WARN_FRACTION = 0.001
CLIP_ERROR_FRACTION = 0.01
DURATION_RATIO_LIMITS = (1 / 3, 3.0)  # against the reference recording
MIN_RATE = 8000


class AudioError(ValueError):
    """Audio that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Audio:
    """Mono float32 samples in [-1, 1] and their rate, plus what the file held originally."""

    samples: np.ndarray
    rate: int
    channels: int = 1
    path: str | None = None

    @property
    def duration(self) -> float:
        return len(self.samples) / float(self.rate)


def read_audio(path: str | Path) -> Audio:
    """Decode a file to mono float32; raise AudioError naming the file if that is impossible."""
    path = Path(path)
    if not path.exists():
        raise AudioError(f"{path}: file is missing")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: file is empty (0 bytes)")
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # libsndfile raises several types for corrupt data
        raise AudioError(f"{path}: unreadable audio ({exc})") from None
    channels = data.shape[1]
    mono = data.mean(axis=1) if channels > 1 else data[:, 0]
    return Audio(np.ascontiguousarray(mono, dtype=np.float32), int(rate), channels, str(path))


def from_array(samples: np.ndarray, rate: int) -> Audio:
    """Wrap an in-memory signal (e.g. from an in-process TTS model) as Audio."""
    arr = np.asarray(samples, dtype=np.float32)
    channels = 1
    if arr.ndim == 2:
        # accept (n, channels) or (channels, n)
        if arr.shape[0] < arr.shape[1] and arr.shape[0] <= 8:
            arr = arr.T
        channels = arr.shape[1]
        arr = arr.mean(axis=1)
    if arr.ndim != 1:
        raise AudioError(f"in-memory audio must be 1-D or 2-D, got shape {np.shape(samples)}")
    if not int(rate) > 0:
        raise AudioError(f"in-memory audio has an invalid sampling rate {rate!r}")
    return Audio(np.ascontiguousarray(arr), int(rate), channels)


def resample(audio: Audio, rate: int) -> Audio:
    """Resample with a polyphase filter (scipy), keeping everything else."""
    if audio.rate == rate:
        return audio
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(audio.rate, rate)
    out = resample_poly(audio.samples, rate // g, audio.rate // g).astype(np.float32)
    return Audio(out, rate, audio.channels, audio.path)


def write_wav(path: str | Path, audio: Audio) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), audio.samples, audio.rate, subtype="PCM_16")


def wav_bytes(audio: Audio) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio.samples, audio.rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def rms_dbfs(samples: np.ndarray) -> float:
    if samples.size == 0:
        return float("-inf")
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return 20.0 * np.log10(rms) if rms > 0 else float("-inf")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one file. Errors make a sample unusable; warnings are worth a look."""

    path: str
    severity: str  # "error" | "warning"
    kind: str  # missing, unreadable, empty, silent, clipped, too_short, too_long, rate, channels
    message: str


@dataclass
class AudioReport:
    path: str
    problems: list[Problem] = field(default_factory=list)
    duration: float | None = None
    rate: int | None = None
    channels: int | None = None

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)


def check_audio(path: str | Path, reference_duration: float | None = None) -> AudioReport:
    """Everything a listening test would trip over in one file, without raising."""
    path = Path(path)
    report = AudioReport(str(path))

    def add(severity: str, kind: str, message: str) -> None:
        report.problems.append(Problem(str(path), severity, kind, message))

    try:
        audio = read_audio(path)
    except AudioError as exc:
        msg = str(exc)
        kind = "missing" if "missing" in msg else "empty" if "empty" in msg else "unreadable"
        add("error", kind, msg)
        return report
    report.duration, report.rate, report.channels = audio.duration, audio.rate, audio.channels
    if audio.samples.size == 0:
        add("error", "empty", f"{path}: no samples")
        return report
    level = rms_dbfs(audio.samples)
    if level < SILENCE_DBFS:
        add("error", "silent", f"{path}: silent (RMS {level:.1f} dBFS < {SILENCE_DBFS:.0f} dBFS)")
    clipped = float(np.mean(np.abs(audio.samples) >= CLIP_LEVEL))
    if clipped >= CLIP_ERROR_FRACTION:
        add("error", "clipped", f"{path}: {clipped:.1%} of samples clipped")
    elif clipped >= CLIP_WARN_FRACTION:
        add("warning", "clipped", f"{path}: {clipped:.2%} of samples clipped")
    if reference_duration:
        ratio = audio.duration / reference_duration
        lo, hi = DURATION_RATIO_LIMITS
        if ratio < lo:
            add("error", "too_short", f"{path}: {audio.duration:.2f} s is far shorter than the "
                f"reference's {reference_duration:.2f} s (x{ratio:.2f})")
        elif ratio > hi:
            add("error", "too_long", f"{path}: {audio.duration:.2f} s is far longer than the "
                f"reference's {reference_duration:.2f} s (x{ratio:.2f})")
    if audio.rate < MIN_RATE:
        add("error", "rate", f"{path}: sampling rate {audio.rate} Hz is below {MIN_RATE} Hz")
    elif audio.rate not in COMMON_RATES:
        add("warning", "rate", f"{path}: unusual sampling rate {audio.rate} Hz")
    if audio.channels > 1:
        add("warning", "channels", f"{path}: {audio.channels} channels (downmixed to mono)")
    return report


def find_audio(stem: Path) -> Path | None:
    """The first existing file for a path without extension, trying the accepted formats."""
    for ext in AUDIO_EXTENSIONS:
        candidate = stem.parent / (stem.name + ext)  # not with_suffix: ids may contain dots
        if candidate.exists():
            return candidate
    return None
