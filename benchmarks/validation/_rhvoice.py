"""RHVoice through its C library (``libRHVoice.so.5``, Debian non-free ``rhvoice``): samples and
word times of one utterance.

The ``RHVoice-test`` program writes audio only; the library also calls back at each word's
start and end, which is what imposing a plan on a word needs. It delivers audio in buffers
(100 ms) and calls the word callbacks between them, at the first buffer boundary *before*
the word's true start or end (measured: a comma's pause sits inside the buffer after the
reported end of the word before it). ``speak`` therefore also returns the buffer boundaries,
and ``word_times`` places each word's start and end inside the buffer that follows the
reported time: at a silence's edge where there is one, else dividing the buffer evenly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

DATA_PATH = "/usr/share/RHVoice"
CONFIG_PATH = "/etc/RHVoice"
MESSAGE_SSML = 1  # RHVoice_message_ssml
SILENT_BELOW_MAX_DB = 35.0

_SampleRate = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_Speech = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_uint,
                           ctypes.c_void_p)
_Mark = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_Span = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)
_Audio = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_Done = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Callbacks(ctypes.Structure):  # RHVoice_callbacks (RHVoice.h)
    _fields_ = [("set_sample_rate", _SampleRate), ("play_speech", _Speech),
                ("process_mark", _Mark), ("word_starts", _Span), ("word_ends", _Span),
                ("sentence_starts", _Span), ("sentence_ends", _Span),
                ("play_audio", _Audio), ("done", _Done)]


class _InitParams(ctypes.Structure):  # RHVoice_init_params
    _fields_ = [("data_path", ctypes.c_char_p), ("config_path", ctypes.c_char_p),
                ("resource_paths", ctypes.POINTER(ctypes.c_char_p)),
                ("callbacks", _Callbacks), ("options", ctypes.c_uint)]


class _SynthParams(ctypes.Structure):  # RHVoice_synth_params
    _fields_ = [("voice_profile", ctypes.c_char_p),
                ("absolute_rate", ctypes.c_double), ("absolute_pitch", ctypes.c_double),
                ("absolute_volume", ctypes.c_double), ("relative_rate", ctypes.c_double),
                ("relative_pitch", ctypes.c_double), ("relative_volume", ctypes.c_double),
                ("punctuation_mode", ctypes.c_int), ("punctuation_list", ctypes.c_char_p),
                ("capitals_mode", ctypes.c_int), ("flags", ctypes.c_int)]


@dataclass(frozen=True)
class Spoken:
    samples: np.ndarray  # float32 in [-1, 1)
    rate: int
    words: tuple[tuple[int, int], ...]  # each word's (start, end) sample, as reported
    buffers: tuple[int, ...]  # the sample at which each audio buffer ended


class _Engine:
    """One RHVoice engine for the process: loading its voices costs more than speaking."""

    def __init__(self, library: ctypes.CDLL):
        self.lib = library
        library.RHVoice_new_tts_engine.restype = ctypes.c_void_p
        library.RHVoice_new_tts_engine.argtypes = [ctypes.POINTER(_InitParams)]
        library.RHVoice_new_message.restype = ctypes.c_void_p
        library.RHVoice_new_message.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint,
                                                ctypes.c_int, ctypes.POINTER(_SynthParams),
                                                ctypes.c_void_p]
        library.RHVoice_speak.argtypes = [ctypes.c_void_p]
        library.RHVoice_delete_message.argtypes = [ctypes.c_void_p]
        self._reset()
        # the callbacks must outlive the engine: kept on self
        guarded = self._guarded
        self._callbacks = _Callbacks(_SampleRate(guarded(self._on_rate)),
                                     _Speech(guarded(self._on_speech)), _Mark(0),
                                     _Span(guarded(self._on_word_start)),
                                     _Span(guarded(self._on_word_end)), _Span(0), _Span(0),
                                     _Audio(0), _Done(0))
        self._init = _InitParams(DATA_PATH.encode(), CONFIG_PATH.encode(), None,
                                 self._callbacks, 0)
        self.handle = library.RHVoice_new_tts_engine(ctypes.byref(self._init))
        if not self.handle:
            raise RuntimeError(f"RHVoice found no voices in {DATA_PATH}")

    def _reset(self):
        self.rate, self.chunks, self.n = 0, [], 0
        self.starts, self.ends, self.buffers = [], [], []
        self.error: BaseException | None = None

    def _guarded(self, callback):
        """``callback`` made safe to call from C: an exception is kept (and raised again by
        ``speak``) and RHVoice told to stop - ctypes would print it, return 0, and RHVoice
        would report success with the audio cut short."""
        def call(*args):
            try:
                return callback(*args)
            except BaseException as e:  # noqa: BLE001 - re-raised by speak
                self.error = self.error or e
                return 0
        return call

    def _on_rate(self, rate, _user):
        self.rate = rate
        return 1

    def _on_speech(self, samples, count, _user):
        self.chunks.append(np.ctypeslib.as_array(samples, shape=(count,)).copy())
        self.n += count
        self.buffers.append(self.n)
        return 1

    def _on_word_start(self, _position, _length, _user):
        self.starts.append(self.n)
        return 1

    def _on_word_end(self, _position, _length, _user):
        self.ends.append(self.n)
        return 1

    def speak(self, ssml: str, voice: str) -> Spoken:
        self._reset()
        text = ssml.encode()
        params = _SynthParams(voice.encode(), 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0, None, 0, 0)
        message = self.lib.RHVoice_new_message(self.handle, text, len(text), MESSAGE_SSML,
                                               ctypes.byref(params), None)
        if not message:
            raise RuntimeError(f"RHVoice refused {ssml!r}")
        try:
            if not self.lib.RHVoice_speak(message):
                raise RuntimeError(f"RHVoice could not speak {ssml!r}")
        finally:
            self.lib.RHVoice_delete_message(message)
        if self.error is not None:
            raise RuntimeError(f"RHVoice's callback failed on {ssml!r}") from self.error
        if len(self.starts) != len(self.ends):
            raise RuntimeError(f"RHVoice reported {len(self.starts)} word starts and "
                               f"{len(self.ends)} ends for {ssml!r}")
        x = (np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int16))
        return Spoken((x / 32768.0).astype(np.float32), self.rate,
                      tuple(zip(self.starts, self.ends)), tuple(self.buffers))


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("RHVoice") or "libRHVoice.so.5"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def installed(voice: str) -> bool:
    """Whether the library and ``voice`` (a Debian ``rhvoice-<language>`` package) are here."""
    return _library() is not None and (Path(DATA_PATH) / "voices" / voice).is_dir()


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    library = _library()
    if library is None:
        raise RuntimeError("RHVoice's library (libRHVoice.so.5) is not installed")
    return _Engine(library)


def speak(ssml: str, voice: str) -> Spoken:
    """``ssml`` (a ``<speak>`` document) spoken by ``voice``."""
    return _engine().speak(ssml, voice)


def word_times(spoken: Spoken) -> list[tuple[float, float]]:
    """Each word's (start, end) in seconds, placed inside the buffer after the time reported
    for it (see the module's docstring).

    A word's end and the next word's start reported together are one boundary. Where a buffer
    has one boundary and holds silence (10 ms frames more than ``SILENT_BELOW_MAX_DB`` under the
    loudest), a word ends where the silence begins and the next starts where it ends (a pause;
    or a stop closure, which then starts the word at its burst - where its voicing, all that
    PSOLA moves, starts anyway). Otherwise the boundaries reported in one buffer divide it
    evenly (one: its middle), so a short word reported within a single buffer keeps a share
    of it. Most boundaries land within 50 ms of where they are; a rate above 1 (RHVoice
    stretches its audio after timing its words) can put one further off."""
    x, rate = spoken.samples.astype(np.float64), spoken.rate
    hop = max(rate // 100, 1)
    frames = len(x) // hop
    if not frames:
        return [(0.0, 0.0) for _ in spoken.words]
    db = 10 * np.log10((x[: frames * hop].reshape(frames, hop) ** 2).mean(axis=1) + 1e-12)
    silent = db < db.max() - SILENT_BELOW_MAX_DB
    ends_at = np.asarray(spoken.buffers)

    # boundaries in order: (reported sample, [(kind, word), ...])
    bounds: list[tuple[int, list[tuple[str, int]]]] = []
    for i, (start, end) in enumerate(spoken.words):
        if bounds and bounds[-1][0] == start and bounds[-1][1][-1][0] == "end":
            bounds[-1][1].append(("start", i))
        else:
            bounds.append((start, [("start", i)]))
        bounds.append((end, [("end", i)]))
    placed: dict[tuple[str, int], float] = {}
    for sample in dict.fromkeys(b for b, _ in bounds):
        group = [kinds for b, kinds in bounds if b == sample]
        later = ends_at[ends_at > sample]
        until = int(later[0]) if len(later) else len(x)
        a, b = min(sample // hop, frames), min(max(until // hop, sample // hop + 1), frames)
        quiet = np.flatnonzero(silent[a:b])
        if len(group) == 1 and len(quiet):
            for kind in group[0]:
                frame = a + (quiet[0] if kind[0] == "end" else quiet[-1] + 1)
                placed[kind] = frame * hop / rate
            continue
        for j, kinds in enumerate(group):
            for kind in kinds:
                placed[kind] = (sample + (j + 1) * (until - sample) / (len(group) + 1)) / rate

    out, last = [], 0.0
    for i in range(len(spoken.words)):
        start = max(float(placed[("start", i)]), last)
        end = max(float(placed[("end", i)]), start + hop / rate)
        out.append((start, end))
        last = end
    return out
