"""Audio for an audio LLM: check it once, identify it by its bytes, send it as it is if possible.

Two steps, so a cached reply costs neither a decode nor a conversion:

1. ``inspect`` reads the file's bytes and hashes them (``sha256``: the identity every cache key
   uses), and checks the audio (it decodes, has samples, all finite, not silent once DC is
   removed) - once per distinct content: the check's outcome is remembered by hash, in memory
   and in the reply cache, so the same bytes are never decoded twice.
2. ``payload`` gives the bytes to send: the original file when its format is one the backend
   takes as it is (WAV with 16-bit PCM, MP3) and it is within the size limit, otherwise a
   16-bit mono WAV at ``rate`` (FLAC, OGG, float WAV, in-memory arrays). Only this case decodes.
"""

from __future__ import annotations

import hashlib
import io
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from adept_eval.errors import AudioError, BadInput
from adept_eval.signal.audio import (
    AUDIBLE_DBFS,
    Audio,
    from_array,
    read_audio,
    resample,
    signal_problems,
    wav_bytes,
    wav_data_shortfall,
)

CHECK_VERSION = "3"  # bump when what ``problem_of`` tests changes: old outcomes are then ignored
ORIGINAL_FORMATS = frozenset({"wav", "mp3"})  # what OpenAI-style ``input_audio`` takes
HEAD_SECONDS = 1  # how much of a file ``AudioChecks.sounds_early`` decodes


@dataclass(frozen=True)
class AudioPolicy:
    """How audio is checked and sent. ``formats``: originals the backend accepts as they are
    (empty: always convert); ``rate``: the rate of converted audio."""

    formats: frozenset = ORIGINAL_FORMATS
    max_bytes: int = 20_000_000  # Gemini's inline request limit is 20 MB
    rate: int = 16000
    max_seconds: float = 300.0

    def identity(self) -> dict:
        """What of the policy a scorer's identity records.

        Returns:
            The formats sent as they are and the rate audio is re-encoded at.
        """
        return {"audio_formats": sorted(self.formats), "audio_rate": self.rate}


@dataclass(frozen=True)
class AudioPayload:
    """Bytes as they go on the wire."""

    data: bytes
    format: str  # "wav" | "mp3"

    @property
    def sha256(self) -> str:
        """The payload's content hash.

        Returns:
            The sha256 of its bytes (hex).
        """
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class Source:
    """One piece of audio, checked: its content hash, duration, and where its bytes are."""

    sha256: str
    duration: float
    data: bytes | None = None  # the file's bytes (None for in-memory audio)
    audio: Audio | None = None  # decoded samples, when we have them anyway
    what: str = "audio"


def problem_of(audio: Audio) -> str:
    """Why this audio cannot be judged ("" when it can): ``audio.signal_problems``, without the
    file name (outcomes are remembered by content hash; callers name the file)."""
    return "; ".join(message for _, message in signal_problems(replace(audio, path=None)))


def _is_pcm16_wav(data: bytes) -> bool:
    """Whether a RIFF/WAVE file's ``fmt`` chunk says 16-bit PCM.

    Args:
        data: the file's bytes (a RIFF/WAVE header).

    Returns:
        True for 16-bit PCM; False for another encoding or no readable ``fmt`` chunk.
    """
    fmt = data.find(b"fmt ", 12, 512)
    if fmt > 0 and len(data) >= fmt + 24:
        tag = int.from_bytes(data[fmt + 8: fmt + 10], "little")
        bits = int.from_bytes(data[fmt + 22: fmt + 24], "little")
        return tag == 1 and bits == 16
    return False


def sniff_format(data: bytes) -> str | None:
    """The format an audio file can be sent as, from its first bytes.

    Args:
        data: the file's bytes.

    Returns:
        "wav" for RIFF/WAVE with 16-bit PCM, "mp3" for MPEG audio (ID3 tag or frame sync),
        else None.
    """
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav" if _is_pcm16_wav(data) else None
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "mp3"
    return None


class AudioChecks:
    """Outcomes of ``problem_of`` by content hash: in memory, and in a ``ReplyCache`` if given."""

    def __init__(self, store=None):
        self.store = store
        self._memo: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()
        self._busy: dict[str, threading.Lock] = {}  # hashes being checked right now
        self.decodes = 0  # how many times audio had to be decoded (for the benchmark)

    def get(self, sha256: str) -> tuple[float, str] | None:
        """A check outcome, from memory or the store.

        Args:
            sha256: the audio's content hash.

        Returns:
            ``(duration, problem)``, or None when not checked yet.
        """
        key = f"{CHECK_VERSION}:{sha256}"
        with self._lock:
            hit = self._memo.get(key)
        if hit is None and self.store is not None:
            hit = self.store.get_check(key)
            if hit is not None:
                with self._lock:
                    self._memo[key] = hit
        return hit

    def claim(self, sha256: str) -> threading.Lock:
        """A lock held while ``sha256`` is checked: two items with the same bytes in flight at
        once (one file listed twice) wait for one decode instead of doing two."""
        with self._lock:
            return self._busy.setdefault(sha256, threading.Lock())

    def put(self, sha256: str, duration: float, problem: str) -> None:
        """Remember a check outcome, in memory and in the store.

        Args:
            sha256: the audio's content hash.
            duration: the audio's duration in seconds.
            problem: why it is unusable, or "".
        """
        key = f"{CHECK_VERSION}:{sha256}"
        with self._lock:
            self._memo[key] = (duration, problem)
        if self.store is not None:
            self.store.put_check(key, duration, problem)

    def sounds_early(self, data: bytes) -> float | None:
        """The duration of ``data`` if its first seconds already prove it is not silent, else None.

        Judged speech is loud from its first seconds, so decoding the rest only to learn that
        costs a first-sight item ~6 ms (an 11 s MP3) for nothing. Only for formats whose samples
        are always finite (MP3, 16-bit PCM WAV: the ones sent as they are). Whatever the rest of
        the file holds, its sum of squares around the whole file's mean is at least the decoded
        part's around its own mean (the mean minimises it), so that part over the announced
        length bounds the whole file's level from below; accepting only at 10 dB above
        ``AUDIBLE_DBFS`` (the level ``signal_problems`` accepts without a closer look) keeps the
        verdict even if a header understated the length 10-fold. Anything else (quiet openings,
        unknown lengths, undecodable bytes) takes the full check.
        Not seen this way: an MP3 cut short after its header (the judge hears what it holds;
        ``adept-eval check`` still names it).
        """
        if sniff_format(data) is None:
            return None
        import soundfile as sf

        floor = 10 ** ((AUDIBLE_DBFS + 10) / 20)
        try:
            with sf.SoundFile(io.BytesIO(data)) as fh:
                frames, rate = fh.frames, fh.samplerate
                if frames <= 0 or rate <= 0:
                    return None
                # one read: reading an MP3 on in blocks makes libmpg123 print spurious errors
                head = fh.read(min(frames, HEAD_SECONDS * rate), dtype="float32", always_2d=True)
        except Exception:
            return None
        mono = head.mean(axis=1, dtype=np.float64)
        if mono.size and float(np.var(mono)) * mono.size / frames >= floor * floor:
            with self._lock:
                self.decodes += 1  # a file decoded (in part) for its check
            return frames / rate
        return None

    def decode(self, path: Path, what: str) -> Audio:
        """Decode a file for its check, counting the decode.

        Args:
            path: the file.
            what: how messages name the audio.

        Returns:
            The decoded audio.

        Raises:
            BadInput: the file cannot be decoded.
        """
        with self._lock:
            self.decodes += 1
        try:
            return read_audio(path)
        except AudioError as exc:
            raise BadInput("bad_input", f"{what}: {exc}") from None


def inspect(value, checks: AudioChecks, policy: AudioPolicy, what: str = "audio") -> Source:
    """Hash and check audio given as a path, ``Audio``, ``{"path"}`` or ``{"array",
    "sampling_rate"}``.

    Args:
        value: the audio.
        checks: remembered check outcomes, by content hash.
        policy: the limits (longest duration, what can be sent as is).
        what: how messages name the audio.

    Returns:
        The checked ``Source``.

    Raises:
        BadInput: status ``bad_input`` (unreadable or unusable audio) or ``too_long``.
    """
    if isinstance(value, dict) and "array" not in value and value.get("path"):
        value = value["path"]
    if isinstance(value, (str, Path)):
        src = _inspect_path(value, checks, policy, what)
    else:
        src = _inspect_samples(value, what)
    if src.duration > policy.max_seconds:
        raise BadInput("too_long", f"{what}: {src.duration:.1f} s exceeds the "
                       f"{policy.max_seconds:g} s limit (not truncated)")
    return src


def _inspect_path(value, checks: AudioChecks, policy: AudioPolicy, what: str) -> Source:
    """Hash and check audio given as a file path.

    Args:
        value: the path (str or Path).
        checks: remembered check outcomes, by content hash.
        policy: what can be sent as is.
        what: how messages name the audio.

    Returns:
        The ``Source``; without decoded samples when the file's own bytes will be sent, so
        a request in flight does not hold them (MBs per item).

    Raises:
        BadInput: an empty path (``Path("")`` is the current folder), or an unreadable or
            unusable file.
    """
    if not str(value).strip():
        raise BadInput("bad_input", f"{what}: no audio (an empty path)")
    src = _inspect_file(Path(value), checks, what)
    if src.audio is not None and _sendable(src.data, policy):
        src = Source(src.sha256, src.duration, src.data, None, what)
    return src


def _inspect_samples(value, what: str) -> Source:
    """Hash and check audio given in memory (``Audio`` or ``{"array", "sampling_rate"}``).

    Args:
        value: the audio.
        what: how messages name the audio.

    Returns:
        The ``Source``, hashed over its float32 samples and rate.

    Raises:
        BadInput: the value is not audio, or the audio is unusable.
    """
    try:
        if isinstance(value, Audio):
            audio = value
        elif isinstance(value, dict) and "array" in value:
            audio = from_array(np.asarray(value["array"]), int(value["sampling_rate"]))
        else:
            raise AudioError(f"cannot read audio from a {type(value).__name__}")
    except (AudioError, ValueError, TypeError, KeyError) as exc:
        raise BadInput("bad_input", f"{what}: {exc}") from None
    digest = hashlib.sha256(np.ascontiguousarray(audio.samples, dtype=np.float32).tobytes())
    digest.update(str(audio.rate).encode())
    problem = problem_of(audio)
    if problem:
        raise BadInput("bad_input", f"{what}: {problem}")
    return Source(digest.hexdigest(), audio.duration, None, audio, what)


def _inspect_file(path: Path, checks: AudioChecks, what: str) -> Source:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput("bad_input", f"{what}: {path}: file is missing") from None
    except OSError as exc:
        raise BadInput("bad_input", f"{what}: {path}: cannot be read ({exc.strerror or exc})") \
            from None
    if not data:
        raise BadInput("bad_input", f"{what}: {path}: file is empty (0 bytes)")
    sha = hashlib.sha256(data).hexdigest()
    known = checks.get(sha)
    audio = None
    if known is None:
        with checks.claim(sha):
            return _check_file(path, data, sha, checks, what)
    duration, problem = known
    if problem:
        raise BadInput("bad_input", f"{what}: {path}: {problem}")
    return Source(sha, duration, data, audio, what)


def _check_file(path: Path, data: bytes, sha: str, checks: AudioChecks, what: str) -> Source:
    """Decode and check (unless another thread just did, while we waited for the claim)."""
    known = checks.get(sha)
    audio = None
    if known is None and _is_whole_wav(path, data):
        duration = checks.sounds_early(data)
        if duration is not None:
            known = (duration, "")
            checks.put(sha, *known)
    if known is None:
        try:
            audio = checks.decode(path, what)
        except BadInput as exc:  # remembered without the path: the same bytes, the same fault
            checks.put(sha, 0.0, str(exc).removeprefix(f"{what}: ").removeprefix(f"{path}: ")
                       .replace(f"'{path}'", "the file"))
            raise
        known = (audio.duration, problem_of(audio))
        checks.put(sha, *known)
    duration, problem = known
    if problem:
        raise BadInput("bad_input", f"{what}: {path}: {problem}")
    return Source(sha, duration, data, audio, what)


def _is_whole_wav(path: Path, data: bytes) -> bool:
    """False for a WAV whose header announces more sample data than it holds (the full check
    names that fault); True for everything else."""
    return sniff_format(data) != "wav" or wav_data_shortfall(path, len(data)) is None


def _sendable(data: bytes | None, policy: AudioPolicy) -> bool:
    return data is not None and len(data) <= policy.max_bytes and \
        sniff_format(data) in policy.formats


def payload(src: Source, policy: AudioPolicy) -> AudioPayload:
    """The bytes to send for a checked source (see the module docstring)."""
    if _sendable(src.data, policy):
        return AudioPayload(src.data, sniff_format(src.data))
    audio = src.audio
    if audio is None:
        try:
            data, rate = _decode_bytes(src.data)
        except Exception as exc:  # the bytes were checked before: only a vanished codec
            raise BadInput("bad_input", f"{src.what}: cannot be converted ({exc})") from None
        audio = from_array(data, rate)
    return AudioPayload(wav_bytes(resample(audio, policy.rate)), "wav")


def _decode_bytes(data: bytes):
    import soundfile as sf

    return sf.read(io.BytesIO(data), dtype="float32", always_2d=True)


def prepare(value, checks: AudioChecks, policy: AudioPolicy, what: str = "audio") -> AudioPayload:
    """Check and convert in one call (when nothing is cached in between)."""
    return payload(inspect(value, checks, policy, what), policy)
