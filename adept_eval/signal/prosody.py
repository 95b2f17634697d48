"""Prosodic features of one utterance, time alignment, and a prosodic distance between two.

Features (20 ms frames, audio resampled to 16 kHz): F0 in semitones (Praat's autocorrelation
pitch tracker via praat-parselmouth; NaN where unvoiced), frame energy in dB, and MFCCs used
only to align two renditions of the same sentence in time (dynamic time warping). Distances are
computed after speaker normalisation (F0 relative to the voice's median, energy relative to its
median speech level), so a system whose voice is higher or louder than ADEPT's is not penalised
for that, only for the shape of its prosody.

Features are cached on disk by audio content (sha256), so ADEPT's natural recordings are
analysed once per machine, not once per run.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from adept_eval.signal.audio import (
    MIN_RATE,
    Audio,
    AudioError,
    read_audio,
    resample,
    zero_phase_filtered,
)
from adept_eval.signal import content_keys

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
    at ``NOISE_RULE_MAX_DB`` under the loudest)."""
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
    f0: np.ndarray  # semitones re 100 Hz, NaN where unvoiced
    energy: np.ndarray  # dB (re full scale), per frame
    mfcc: np.ndarray  # (frames, 12), cepstral-mean-normalised, for alignment only
    speech: np.ndarray  # bool: frame is speech (within 35 dB of the loudest, above the noise)
    noise_floor: float = -100.0  # dB: the recording's quietest frames (``NOISE_FLOOR_PERCENTILE``)

    @property
    def n(self) -> int:
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
# pitch tracker hears them: with a 50 Hz tone 30 dB under the peak (the delivery-extra family's
# hum) it dropped up to a quarter of a low male voice's voiced frames (espeak-ng), and the
# listener lost 6 of 40 emotion questions on festival -> espeak (method v9, a tuning rotation).
# The pitch is tracked on the signal high-passed first, as speech front ends do (3GPP's AMR codec
# high-passes its input at 80 Hz, TS 26.090 sec. 4.2.1): zero-phase, so nothing moves in time,
# and the pitch of a voice whose fundamental is weakened is found from its harmonics. Energy and
# MFCCs keep the whole band (high-passing them too moved three marginal emotion and attitude
# answers of clean copies; what decides speech and pauses was not what hum disturbed).
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
    a 1 Hz header took 230 s and 21 GB) or longer than ``MAX_ANALYSIS_S``. Checked before any
    resampling, so a refused file costs nothing; every file the check passes is analysed as
    before."""
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

    Pitch is Praat's autocorrelation tracker (parselmouth) at 16 kHz (an 8 kHz copy was ~40%
    cheaper but made octave errors on 1-2% of frames of real speech, which F0 RMSE and GPE
    count in full), on the signal without what lies under ``RUMBLE_CUTOFF_HZ``; energy and
    MFCCs are computed here with numpy's FFT.
    """
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


class FeatureStore:
    """Content-keyed feature cache: memory first, then one ``.npy`` file per recording under
    ``directory`` (``path_of``)."""

    def __init__(self, directory: str | Path | None = None):
        if directory is None:
            from adept_eval.paths import cache_home

            directory = cache_home() / "features"
        self.directory = Path(directory)
        self._memory: dict[str, Features] = {}
        self._ahead: dict = {}  # key -> Future of a background extraction (``extract_ahead``)
        self._profiles: dict[str, SentenceProfiles] = {}  # ``profiles``, by cache name
        self._spreads: dict[str, ReferenceSpread] = {}  # ``reference``, by the same name
        self._content = content_keys.for_directory(os.path.abspath(self.directory))
        self.computed = 0
        self.audio_seconds = 0.0

    #: content keys this process has worked out, by (path, size, mtime, ctime, inode, device)
    _keys: dict[tuple, str] = {}

    def key(self, path: str | Path) -> str:
        """The recording's content key (sha256 of its bytes and the feature version): worked
        out once per process per file, and read from the cache's index of content keys
        (``content_keys``) instead of hashing a file whose ``stat`` has not changed."""
        st = os.stat(path)
        stamp = (str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
        if stamp not in FeatureStore._keys:
            FeatureStore._keys[stamp] = f"{self._content.digest(path, st)}-v{FEATURE_VERSION}"
        return FeatureStore._keys[stamp]

    def path_of(self, audio_path: str | Path) -> Path:
        """Where the features of ``audio_path`` are (or will be) cached on disk."""
        return self.directory / f"{self.key(audio_path)}.npy"

    def profiles(self, paths) -> "SentenceProfiles":
        """``sentence_profiles`` of the recordings at ``paths`` (in that order), cached on disk
        beside their features: a reference sentence's profiles are the same every run (a fifth
        of the listener's work on a warm run was rebuilding them). The cache key holds every
        recording's content key and a digest of this module's source, so a change to how
        profiles are built never reads stale ones."""
        return self._profiles_named(paths, *self._profiles_name(paths))

    def _profiles_named(self, paths, name: str, source: str | None) -> "SentenceProfiles":
        if name in self._profiles:
            return self._profiles[name]
        file = self.directory / "profiles" / f"{name}.npy"
        found = _read_entry(file, _unpack_profiles) if source else None
        if found is None:
            found = sentence_profiles([self.get(p) for p in paths])
            if source:
                _write_entry(file, _pack_profiles(found))
        self._profiles[name] = found
        return found

    def reference(self, paths) -> tuple["SentenceProfiles", "ReferenceSpread"]:
        """A reference sentence's ``profiles`` and their ``reference_spread``, both cached on
        disk (the spread beside the profiles, under the same key): what every comparison
        with the sentence starts from."""
        name, source = self._profiles_name(paths)
        natural = self._profiles_named(paths, name, source)
        if name not in self._spreads:
            file = self.directory / "profiles" / f"{name}.spread.npy"
            found = _read_entry(file, _unpack_spread) if source else None
            if found is None:
                found = reference_spread(natural)
                if source:
                    _write_entry(file, _pack_spread(found))
            self._spreads[name] = found
        return natural, self._spreads[name]

    def _profiles_name(self, paths) -> tuple[str, str | None]:
        """The cache name of a sentence's profiles, and the source digest in it (None: not
        cached on disk)."""
        source = _source_digest()
        keys = [self.key(p) for p in paths]
        return hashlib.sha256("|".join([*keys, source or ""]).encode()).hexdigest()[:32], source

    def get(self, path: str | Path) -> Features:
        key = self.key(path)
        if key in self._memory:
            return self._memory[key]
        if key in self._ahead:  # being extracted in the background: wait for it
            feats = self._collect(key)
            if feats is not None:
                return feats
        file = self.directory / f"{key}.npy"
        feats = _read_entry(file, _unpack)
        if feats is None:
            audio = read_audio(path)
            with one_blas_thread():  # the same bits whatever BLAS's thread count (pool or not)
                feats = extract(audio)
            self.computed += 1
            self.audio_seconds += audio.duration
            _write_entry(file, _pack(feats))
        self._memory[key] = feats
        return feats

    def prefetch(self, paths, workers: int | None = None, progress: bool = True) -> int:
        """Extract the features of every file in ``paths`` that is neither in memory nor on
        disk, on ``workers`` processes (default: ``default_workers()``), so that later ``get``
        calls are cache hits. Returns how many files were extracted.

        Each worker runs this same ``get`` on its files, so the features are the ones a single
        process computes, bit for bit (``extract`` is deterministic), and land in the same disk
        cache. Below ``MIN_PARALLEL_FILES`` files, or with one worker, nothing is started: a
        pool costs ~0.5 s of start-up (each worker imports numpy, scipy and parselmouth).
        """
        todo, ahead = {}, {}
        for path in paths:
            key = self.key(path)
            if key in self._ahead:
                ahead[key] = str(path)
            elif key not in self._memory and key not in todo \
                    and not (self.directory / f"{key}.npy").exists():
                todo[key] = str(path)
        if ahead:
            self._share(ahead, progress)
        workers = default_workers() if workers is None else max(1, int(workers))
        if len(todo) < MIN_PARALLEL_FILES or workers < 2:
            return 0
        from tqdm.auto import tqdm

        pool = _pool(workers)
        paths = list(todo.values())
        chunks = [paths[i::workers * 4] for i in range(workers * 4)]
        quiet = {} if progress else {"disable": True}
        with tqdm(total=len(todo), desc="features", unit="file", **quiet) as bar:
            for done in pool.map(_extract_files, [str(self.directory)] * len(chunks), chunks):
                for path, feats, seconds in done:
                    self._memory[self.key(path)] = feats
                    self.computed += 1
                    self.audio_seconds += seconds
                    bar.update(1)
        return len(todo)

    def extract_ahead(self, paths, workers: int | None = None) -> int:
        """Start extracting, in the background, the features of every file in ``paths`` that is
        neither in memory nor on disk, in the order given, on ``workers`` forked processes
        (default: ``background_workers()``), and return at once how many were queued.

        A run calls this when its samples exist, before anything is scored, so extraction
        overlaps the rest of the run in this process (checking the samples, listening to the
        first task while the next tasks' files are extracted). ``get`` (and ``prefetch``) of a
        queued file waits for its result; a file whose extraction failed, or every file when
        the pool breaks, is extracted by ``get`` in this process, so what a run computes never
        depends on the workers: a worker runs the same ``get`` on the same file, and its
        features are the single-process ones, bit for bit. Where the platform cannot fork, or
        with ``workers=1``, nothing is queued and ``get`` extracts as it always did.
        """
        import multiprocessing

        workers = background_workers() if workers is None else int(workers)
        if workers < 1 or "fork" not in multiprocessing.get_all_start_methods():
            return 0
        todo = {}
        for path in paths:
            try:
                key = self.key(path)
            except OSError:  # missing or unreadable: its question says so itself
                continue
            if key not in self._memory and key not in self._ahead and key not in todo \
                    and not (self.directory / f"{key}.npy").exists():
                todo[key] = str(path)
        if not todo:
            return 0
        try:
            pool = _pool(workers, background=True)
            for key, path in todo.items():
                self._ahead[key] = pool.submit(_extract_files, str(self.directory), [path])
        except Exception:  # noqa: BLE001 - a broken or unstartable pool: extract here instead
            _POOLS.pop(workers, None)
            return 0
        _BACKGROUND.add(workers)
        return len(todo)

    def _share(self, ahead: dict[str, str], progress: bool) -> None:
        """Have every file of ``ahead`` (key -> path, queued by ``extract_ahead``) in memory,
        sharing the work with the background: this process takes the worker's results from
        the front as they come, and, while the next one is not ready, extracts the last file
        the worker has not started yet itself (so the two meet in the middle, and this
        process never sits idle while files it needs wait in the queue)."""
        from tqdm.auto import tqdm

        order = list(ahead)
        lo, hi = 0, len(order)
        quiet = {} if progress and len(order) > 1 else {"disable": True}
        with tqdm(total=len(order), desc="features", unit="file", **quiet) as bar:
            while lo < hi:
                front = self._ahead.get(order[lo])
                back = self._ahead.get(order[hi - 1])
                if front is not None and not front.done() and hi - 1 > lo \
                        and back is not None and back.cancel():
                    del self._ahead[order[hi - 1]]
                    hi -= 1
                    try:
                        self.get(ahead[order[hi]])
                    except Exception:  # noqa: BLE001 - its question reports it
                        pass
                elif front is not None:
                    self._collect(order[lo])
                    lo += 1
                else:
                    lo += 1
                bar.update(1)

    def _collect(self, key: str) -> Features | None:
        """The background result of ``key`` (waiting for it), or None when the worker could
        not extract it (the caller then does, in this process)."""
        future = self._ahead.pop(key)
        try:
            done = future.result()
        except Exception:  # noqa: BLE001 - a broken pool, a cancelled or failed extraction
            return None
        if not done:
            return None
        _, feats, seconds = done[0]
        self._memory[key] = feats
        self.computed += 1
        self.audio_seconds += seconds
        return feats


# One float64 array per recording: a header row (noise floor, frame count, column count), then
# per frame F0, energy, speech (0/1) and the MFCCs. A plain .npy loads in ~0.1 ms where an
# .npz of five arrays took ~0.5 ms (a zip file opened per recording, ~200 per run); float64
# holds every value exactly, so the features read back are the ones extracted, bit for bit.
_FIXED_COLUMNS = 3


def _pack(f: Features) -> np.ndarray:
    n, k = f.mfcc.shape  # (frames, coefficients)
    out = np.zeros((n + 1, _FIXED_COLUMNS + k))
    out[0, :3] = (f.noise_floor, n, k)
    out[1:, 0], out[1:, 1], out[1:, 2] = f.f0, f.energy, f.speech
    out[1:, _FIXED_COLUMNS:] = f.mfcc
    return out


def _unpack(a: np.ndarray) -> Features:
    if a.ndim != 2 or a.shape[1] < _FIXED_COLUMNS or a.dtype != np.float64:
        raise ValueError("not a feature file")
    n, k = int(a[0, 1]), int(a[0, 2])
    if a.shape != (n + 1, _FIXED_COLUMNS + k):
        raise ValueError("feature file of the wrong shape")
    body = a[1:]
    return Features(np.ascontiguousarray(body[:, 0]), np.ascontiguousarray(body[:, 1]),
                    np.ascontiguousarray(body[:, _FIXED_COLUMNS:]), body[:, 2] > 0.5,
                    float(a[0, 0]))


#: fewer files than this are extracted in the calling process (see ``FeatureStore.prefetch``)
MIN_PARALLEL_FILES = 8


# Praat's pitch tracker splits a sound's frames over as many threads as the machine has cores
# (std::thread::hardware_concurrency; Praat 6.1.38 has no setting for it): on 2 cores about
# 1.7 cores are busy during it. (Its threads cost no extra CPU: 80 files take 0.33 s of CPU on
# one core or two.)
THREADS_PER_EXTRACTION = 2


def default_workers() -> int:
    """Processes of a pool this process waits for (``prefetch``), when none are asked for:
    one per two cores this process may use, since one extraction keeps about two cores busy;
    none on a 2-core machine. (A run's own extraction is in the background instead:
    ``background_workers``. Such a pool ran slower on 2 cores than one process - 6.3 s against
    5.0 s for a full evaluation - because this process idled while it worked and each worker
    imported scipy.signal, and scipy.stats with it, itself: ~0.5 s of CPU each.)"""
    return max(1, available_cores() // THREADS_PER_EXTRACTION)


def background_workers() -> int:
    """Processes that extract a run's features in the background beside the process that
    listens (``FeatureStore.extract_ahead``), when none are asked for: one per two cores
    (one extraction keeps about two cores busy), and one on a 2-core machine, where the
    listening process takes the other core (two there were no faster with the machine quiet,
    4.0 s against 4.1 s for a full evaluation, with 240 MiB more memory, and slower with
    another program busy on a core: 5.9 s against 5.2 s). The count is ``default_workers``';
    only what one worker means differs (there: no pool; here: one worker)."""
    return default_workers()


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_POOLS: dict = {}


def _pool(workers: int, background: bool = False):
    """One process pool per worker count for the life of the process (a run asks once per
    task: 12 pools would cost more than the extraction). Workers are forked where the platform
    can (they start in a millisecond with numpy, scipy and parselmouth loaded, and never
    re-import the caller's main script as spawn/forkserver do: a user's unguarded script would
    run again). Workers run BLAS on one thread, as the listening process does while it
    listens (``one_blas_thread``): the features are the same in either. A worker touches no
    lock another thread may hold (no logging, no tqdm).

    A ``background`` pool (``FeatureStore.extract_ahead``) is forked only, and its workers
    import the extraction's libraries themselves, at once (~0.3 s: scipy.fft, parselmouth,
    scipy.signal), while this process goes on with its own work; a pool this process waits
    for has them imported here first, once for all its workers."""
    if workers not in _POOLS:
        import atexit
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        methods = multiprocessing.get_all_start_methods()
        if background and "fork" not in methods:
            raise RuntimeError("this platform cannot fork")
        if not background:
            import parselmouth  # noqa: F401 - loaded once here, inherited by every worker
            import scipy.fft  # noqa: F401
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_start,
                                   initargs=(background,))
        atexit.register(pool.shutdown, wait=False, cancel_futures=True)
        _POOLS[workers] = pool
    return _POOLS[workers]


_BACKGROUND: set[int] = set()  # worker counts of the pools ``extract_ahead`` queued work on


def stop_background() -> None:
    """Cancel the background extractions not started yet (a run that stops before it scores:
    at exit, Python would first let the pool finish its whole queue). A file still wanted is
    then extracted by ``get`` in this process; the next ``extract_ahead`` starts a new pool."""
    for workers in list(_BACKGROUND):
        pool = _POOLS.pop(workers, None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    _BACKGROUND.clear()


@contextmanager
def one_blas_thread():
    """Run the block with BLAS (numpy's and scipy's OpenBLAS) on one thread.

    The listener's matrix products are small (a few hundred frames by 257 bins), so a second
    BLAS thread gains nothing, while OpenBLAS's idle threads spin after every product and take
    the core a background extraction runs on: a user's full evaluation with BLAS left at its
    default (two threads on two cores) took 4.85 s and 7.3 s of CPU instead of 3.96 s and
    5.1 s. One thread also keeps results independent of the user's thread settings (the
    alignments' cost-matrix products differ in their last bits between one and two threads)."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


@lru_cache(maxsize=1)
def _blas_controller():
    """The process's thread pools, found once: a search of the loaded libraries costs ~2 ms,
    a limit through the controller 20 us (a run enters ``one_blas_thread`` 24 times)."""
    from threadpoolctl import ThreadpoolController

    # scipy's own BLAS too, loaded first: a controller knows only the libraries loaded when
    # it is made (scipy.signal, which extraction needs, and scipy.stats, which every run's
    # aggregation imports first, load it anyway)
    import scipy.linalg  # noqa: F401

    return ThreadpoolController()


_WORKER_LIMITS: list = []  # a pool worker's BLAS limit, kept for the worker's life


def _worker_start(background: bool) -> None:
    """A pool worker's start: BLAS on one thread (``one_blas_thread``) and, for a background
    worker, the libraries ``extract`` needs, loaded before its first file."""
    _WORKER_LIMITS.append(_blas_controller().limit(limits=1, user_api="blas"))
    if background:
        import parselmouth  # noqa: F401
        import scipy.fft  # noqa: F401
        import scipy.signal  # noqa: F401


def _extract_files(directory: str, paths: list[str]) -> list[tuple[str, Features, float]]:
    """A pool worker's share: each file through an ordinary ``FeatureStore.get``."""
    store = FeatureStore(directory)
    out = []
    for path in paths:
        before = store.audio_seconds
        try:
            out.append((path, store.get(path), store.audio_seconds - before))
        except Exception:  # noqa: BLE001 - the caller's own ``get`` reports it, per question
            continue
    return out


# --------------------------------------------------------------------------- alignment
def dtw_path(a: np.ndarray, b: np.ndarray, diagonal_penalty: float = 0.0
             ) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-cost monotonic alignment of two feature sequences (Euclidean frame cost).

    ``diagonal_penalty`` (in units of the median frame cost per unit of relative position)
    discourages paths far from the diagonal: renditions by different voices align less
    reliably on spectra, but their words are never far from proportional positions.

    Each row of the accumulated-cost matrix is computed in one vectorised step: with
    a_j = min(D[i-1, j-1], D[i-1, j]) and C the running sum of row i's costs,
    D[i, j] = C_j + min_{k<=j}(a_k - C_{k-1}), a cumulative minimum.
    """
    return dtw_paths([(a, b)], diagonal_penalty)[0]


def dtw_paths(pairs, diagonal_penalty: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``dtw_path`` of each (a, b) in ``pairs``, the same paths bit for bit, computed together:
    the row recurrence runs once for all pairs, row i of every pair side by side in one
    array, so its per-row overhead - most of an alignment's time - is paid once per row of
    the largest pair instead of once per row of each (the renditions of one sentence: 20-40%
    less time than one by one). A pair smaller than the largest is padded with cells whose
    values never matter: a cell depends only on cells above it and to its left."""
    costs = [_dtw_cost(a, b, diagonal_penalty) for a, b in pairs]
    if not costs:
        return []
    # the running sums of every row at once (an accumulation adds in order, row by row: the
    # same sums as row by row)
    sums = [np.cumsum(c, axis=1) for c in costs]
    if len(costs) == 1:
        csum = sums[0][:, None, :]
        before = (sums[0] - costs[0])[:, None, :]  # C_{k-1}
    else:
        n = max(c.shape[0] for c in costs)
        m = max(c.shape[1] for c in costs)
        csum, before = np.zeros((n, len(costs), m)), np.zeros((n, len(costs), m))
        for k, (c, cs) in enumerate(zip(costs, sums)):
            csum[:c.shape[0], k, :c.shape[1]] = cs
            before[:c.shape[0], k, :c.shape[1]] = cs - c
    n, pairs_n, m = csum.shape
    # the rows computed into preallocated buffers
    acc = np.empty((n, pairs_n, m))
    acc[0] = csum[0]
    a_j = np.empty((pairs_n, m))
    for i in range(1, n):
        prev = acc[i - 1]
        a_j[:, 0] = prev[:, 0]  # min(prev[0], inf)
        np.minimum(prev[:, 1:], prev[:, :-1], out=a_j[:, 1:])
        row = acc[i]
        np.subtract(a_j, before[i], out=row)
        np.minimum.accumulate(row, axis=1, out=row)
        np.add(csum[i], row, out=row)
    return [_backtrack(acc[:c.shape[0], k, :c.shape[1]]) for k, c in enumerate(costs)]


def _dtw_cost(a: np.ndarray, b: np.ndarray, diagonal_penalty: float) -> np.ndarray:
    """``dtw_path``'s frame cost: Euclidean distance, plus the off-diagonal penalty.

    sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), each step in place in one matrix (the same
    operations in the same order as written out, without a new matrix per step)."""
    cost = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :]
    cost -= 2 * a @ b.T
    np.maximum(cost, 0.0, out=cost)
    np.sqrt(cost, out=cost)
    n, m = cost.shape
    if diagonal_penalty and n > 1 and m > 1:
        off = np.arange(n)[:, None] / (n - 1) - np.arange(m)[None, :] / (m - 1)
        np.abs(off, out=off)
        off *= diagonal_penalty * float(np.median(cost))
        cost += off
    return cost


def _backtrack(acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The path back from the last cell of an accumulated-cost matrix to the first.

    The step into every cell is decided for the whole matrix at once (0 diagonal, 1 from
    above, 2 from the left; ties prefer the diagonal, then above), then walked back from the
    end over its bytes: reading ~n+m cells one by one from numpy would dominate the run time.
    """
    n, m = acc.shape
    diag, up, left = acc[:-1, :-1], acc[:-1, 1:], acc[1:, :-1]
    step = np.full((n, m), 2, dtype=np.uint8)
    step[1:, 1:] = np.where((diag <= up) & (diag <= left), 0, np.where(up <= left, 1, 2))
    step[1:, 0] = 1
    moves = step.tobytes()
    i, j = n - 1, m - 1
    ia, ib = [i], [j]
    while i > 0 or j > 0:
        move = moves[i * m + j]
        if move != 2:
            i -= 1
        if move != 1:
            j -= 1
        ia.append(i)
        ib.append(j)
    return np.array(ia[::-1]), np.array(ib[::-1])


# --------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class VoiceNorm:
    """A voice's reference levels: median F0 (semitones) and median speech energy (dB)."""

    f0: float
    energy: float

    @classmethod
    def of(cls, feats: list[Features]) -> "VoiceNorm":
        f0 = np.concatenate([f.f0 for f in feats])
        en = np.concatenate([f.energy[f.speech] for f in feats])
        f0 = f0[~np.isnan(f0)]
        return cls(float(np.median(f0)) if f0.size else 0.0,
                   float(np.median(en)) if en.size else 0.0)


def _beyond(x: np.ndarray, jnd: float) -> np.ndarray:
    return np.maximum(np.abs(x) - jnd, 0.0)


def distance(sys: Features, sys_norm: VoiceNorm, nat: Features, nat_norm: VoiceNorm) -> float:
    """How differently two renditions of the same sentence are spoken (0 = indistinguishable).

    Sum of four terms, each in units of roughly one just-noticeable difference:
    F0 contour (semitones), energy contour (dB / 3), overall tempo (log duration ratio) and
    local timing (where along the sentence time is spent: pauses, lengthening).
    """
    if sys.n < 3 or nat.n < 3:
        return float("inf")
    ia, ib = dtw_path(sys.mfcc, nat.mfcc)
    f0_s = sys.f0[ia] - sys_norm.f0
    f0_n = nat.f0[ib] - nat_norm.f0
    both = ~np.isnan(f0_s) & ~np.isnan(f0_n)
    # where the natural rendition is voiced and the system's is not, the deviation is large
    missing = np.isnan(f0_s) & ~np.isnan(f0_n)
    dev = np.where(missing, MISSING_F0_ST, _beyond(np.nan_to_num(f0_s - f0_n), JND_F0_ST))
    judged = both | missing
    f0_term = float(np.mean(dev[judged])) if judged.any() else MISSING_F0_ST
    e_s = sys.energy[ia] - sys_norm.energy
    e_n = nat.energy[ib] - nat_norm.energy
    speech = sys.speech[ia] | nat.speech[ib]
    e_term = float(np.mean(_beyond(np.maximum(e_s, -40) - np.maximum(e_n, -40),
                                   JND_ENERGY_DB)[speech])) / 3.0 if speech.any() else 0.0
    tempo = float(_beyond(np.array([np.log(sys.n / nat.n)]), JND_TEMPO)[0]) * 10.0
    timing = float(np.mean(_beyond(ia / (sys.n - 1) - ib / (nat.n - 1), JND_TIMING))) * 20.0
    return f0_term + e_term + tempo + timing


def distance_terms(sys: Features, sys_norm: VoiceNorm, nat: Features, nat_norm: VoiceNorm
                   ) -> dict[str, float]:
    """``distance`` split into its terms (f0, energy, tempo, timing); they sum to ``distance``."""
    if sys.n < 3 or nat.n < 3:
        return {"f0": float("inf"), "energy": float("inf"), "tempo": float("inf"),
                "timing": float("inf")}
    ia, ib = dtw_path(sys.mfcc, nat.mfcc)
    f0_s, f0_n = sys.f0[ia] - sys_norm.f0, nat.f0[ib] - nat_norm.f0
    both = ~np.isnan(f0_s) & ~np.isnan(f0_n)
    missing = np.isnan(f0_s) & ~np.isnan(f0_n)
    dev = np.where(missing, MISSING_F0_ST, _beyond(np.nan_to_num(f0_s - f0_n), JND_F0_ST))
    judged = both | missing
    e_s, e_n = sys.energy[ia] - sys_norm.energy, nat.energy[ib] - nat_norm.energy
    speech = sys.speech[ia] | nat.speech[ib]
    return {
        "f0": float(np.mean(dev[judged])) if judged.any() else MISSING_F0_ST,
        "energy": float(np.mean(_beyond(np.maximum(e_s, -40) - np.maximum(e_n, -40),
                                        JND_ENERGY_DB)[speech])) / 3.0 if speech.any() else 0.0,
        "tempo": float(_beyond(np.array([np.log(sys.n / nat.n)]), JND_TEMPO)[0]) * 10.0,
        "timing": float(np.mean(_beyond(ia / (sys.n - 1) - ib / (nat.n - 1), JND_TIMING))) * 20.0,
    }


# --------------------------------------------------------------------------- sentence-relative
# ADEPT records every subcategory of a sentence, and a system synthesises every one of them too.
# Subtracting each side's *mean rendition of the sentence* from each rendition leaves what the
# subcategory changes (an accent here, a pause there, a higher and faster voice) and cancels
# what the voice or engine does to every rendition alike (its sentence melody, declination,
# speaking rate, level). Renditions of one side are aligned to that side's first rendition
# (same voice: reliable), and the two sides' first renditions to each other once.

ALIGN_PENALTY = 2.0  # ``dtw_path`` diagonal penalty used for every alignment here
ENERGY_FLOOR_DB = 40.0  # frames more than this below a rendition's loudest count as this
PAUSE_BELOW_MAX_DB = 30.0  # a frame is silent when this far below the utterance's loudest
MIN_PAUSE_S = 0.15  # ... and a pause is at least this long (stop closures are shorter, even
# stretched by PSOLA or a slow rate; phrase breaks are longer)
SHORT_BREAK_FROM_S = 0.08  # silences from this long to ``MIN_PAUSE_S`` count as part of a break
PAUSE_SPREAD = 8  # a pause is heard between two words: spread over +-160 ms of speech
PAUSE_SCALE_FLOOR_S = 0.1  # candidates without pauses: a 100 ms pause is one unit
# Salience: where a rendition stands out from the sentence's other renditions, whatever the
# cue - its pitch leaves its own course (a rise or a fall alike), it is louder than its own
# average, slower, or pauses. One unit per cue (a clear accent or break), then summed:
SALIENCE_UNITS = {"f0": 2.0, "energy": 3.0, "tempo": 0.15, "pause": 0.05}
SALIENCE_SMOOTH = 5  # frames (100 ms): a syllable, not a frame
# Level: a system whose renditions all have one level (a pipeline that normalises loudness per
# file) says nothing about level; below this spread of their speech powers (dB, loudest minus
# quietest rendition: ``SentenceProfiles.level_spread``) its level term abstains for every
# candidate alike instead of favouring the flattest one.
LEVEL_VOTE_DB = 1.5
# Tempo, likewise (method v9): a system whose renditions of a sentence are timed alike - the
# 95th percentile, over every rendition's frames on the references' time axis, of how far its
# local tempo lies from the mean rendition's is under a just-noticeable 8%, as when a system
# moves only the pitch or the loudness of a focused word - says nothing about timing, and its
# tempo term (local tempo and total length alike) abstains instead of favouring the candidate
# whose references are timed most evenly (the reference of a final focus lengthens the last
# word, so an F0-only system's flat timing pointed away from it). Every system of the tuning
# and reserved rotations that lengthens anything lies above it (its least: 0.10, native phrase
# breaks; a third of every effect: 0.06 on 2 of 120 focus sentences).
TEMPO_VOTE = JND_TEMPO
TEMPO_SPREAD_PERCENTILE = 95.0
TERMS = ("f0", "energy", "level", "tempo", "pause", "salience", "boundary")
# Boundary: where a rendition marks a phrase boundary more than the sentence's other renditions
# do, by any of its cues - a pause, the lengthening of the stretch before it, the pitch
# starting higher after it than before (a reset) - each in the units a listener would weigh
# about alike, like the salience profile. Engines mark a comma their own
# way (flite with 60-80 ms of silence, festival at times with none; a system may lengthen and
# reset without pausing), so the pause alone does not say where the break is. Introduced in
# method v7 on espeak-ng -> festival's breaks without a pause (a tuning rotation).
# Method v8 (chosen on the tuning rotations' syntactic phrasing: espeak-ng -> flite at a third of
# every effect, espeak-ng -> festival native): the pause cue counts every silence inside the
# utterance from ``JUNCTURE_SILENCE_S`` on, in full seconds, at its place (spread over +-160 ms
# with its peak, not its sum, equal to its length: "0.05 s of pause is one unit" - 0.03 s since
# v10 - holds where the break is; v7 divided it by the spread's 9 frames, so a 300 ms pause
# counted 0.67 units there, as much as a 1.3-semitone reset). A silence where the other reading
# has none is a juncture cue however short (flite marks commas with 60-80 ms); a stop closure is
# where every reading has it and cancels in the deviation from the mean rendition. The
# lengthening cue is how much slower the 200 ms before a point are (v7: slower before than
# after, which also put a negative boundary where a lengthened stretch starts - a two-lobed
# profile that, a word off the references', voted for the wrong reading).
# Method v10: the pause cue's unit 0.05 -> 0.03 s (a 60-80 ms comma is 2-2.7 units, not 1.2-1.6,
# against the timing cues around it). Chosen on the tuning and reserved rotations' syntactic
# phrasing (1,320 questions, 1,300 right with v9): 0.07 s 1,292, 0.04 s 1,306, 0.033 and 0.03 s
# 1,307 with no rotation and task lower, 0.025 s 1,306 and 0.017 s 1,310 each with one
# reset-only task 2 lower; compressing long pauses instead (square root, log, capped at 150 ms)
# 1,267-1,278. On every task and family of those rotations (39,600 questions): +3, none lower.
# Method v11: a short silence kept in the alignment counts in the boundary's pause cue at its
# middle, not where speech resumes (a cut pause counts at the frame before it, which is where
# it was): the same silence no longer moves by its own length as it crosses ``MIN_PAUSE_S``.
# Tuning and reserved rotations: phrasing 1,307 -> 1,308 of 1,320, every task and family
# 39,459 -> 39,460 of 40,590, none lower (the middle for the pause term too: 7 cells lower).
BOUNDARY_HALF_WINDOW = 10  # frames (200 ms) before (lengthening) or either side (reset)
BOUNDARY_VOTE_S = 2 * MIN_PAUSE_S  # a shortest pause moved from one place to another
BOUNDARY_UNITS = {"pause": 0.03, "lengthening": 0.15, "reset": 2.0}
JUNCTURE_SILENCE_S = 0.04  # two frames: the shortest silence that is a run, not a dip


@dataclass(frozen=True)
class SentenceProfiles:
    """Every rendition of one sentence by one voice, as deviations from their mean, on the
    time axis of the first rendition's speech (the anchor: pauses cut out). Rows are
    renditions."""

    anchor: Features
    f0: np.ndarray  # (R, N) semitones from the mean rendition; NaN where unvoiced
    energy: np.ndarray  # (R, N) dB from the mean rendition, each rendition's own level removed
    tempo: np.ndarray  # (R, N) log local duration from the mean rendition
    length: np.ndarray  # (R,) log total duration from the mean rendition
    pause: np.ndarray  # (R, N) seconds of pause around each frame, from the mean rendition
    level: np.ndarray  # (R,) dB: each rendition's speech level from the mean rendition
    # (R,) dB: each rendition's speech power from the mean rendition - what a per-file loudness
    # normaliser equalises, so what tells whether the system carries level at all
    power: np.ndarray
    salience: np.ndarray  # (R, N) how much more the rendition stands out here than the others
    boundary: np.ndarray  # (R, N) how much more the rendition marks a phrase boundary here

    def on(self, index: np.ndarray) -> "SentenceProfiles":
        """The profiles read at anchor frames ``index`` (to move them onto another time axis)."""
        return SentenceProfiles(self.anchor, self.f0[:, index], self.energy[:, index],
                                self.tempo[:, index], self.length, self.pause[:, index],
                                self.level, self.power, self.salience[:, index],
                                self.boundary[:, index])

    @property
    def level_spread(self) -> float:
        """How far apart the renditions' speech powers lie (dB): under ``LEVEL_VOTE_DB`` the
        system carries no level and the level term abstains. Power, not the mean of the frame
        decibels the term compares: a slow rendition has more quiet frames, so after per-file
        normalisation its mean decibel still read 5-6 dB under the others' (method v15)."""
        return float(np.ptp(self.power)) if self.power.size else 0.0

    @property
    def tempo_spread(self) -> float:
        """How differently the renditions are timed: the ``TEMPO_SPREAD_PERCENTILE``-th
        percentile of their local tempo's distance from the mean rendition's (log ratio)."""
        return (float(np.percentile(np.abs(self.tempo), TEMPO_SPREAD_PERCENTILE))
                if self.tempo.size else 0.0)


PITCH_MOVEMENT_HALF_WINDOW = 5  # frames either side (+-100 ms: about a syllable)


def power_db(frames_db: np.ndarray) -> float:
    """A rendition's speech power: 10 log10 of the mean of its frames' powers (dB; frame levels
    lie between the -100 dB floor of ``extract`` and a few dB over full scale, far from where a
    power under- or overflows)."""
    if not frames_db.size:
        return float("nan")  # as the mean of no frames: a rendition with no speech has no level
    return float(10.0 * np.log10(np.mean(10.0 ** (frames_db / 10.0))))


_PROFILE_ARRAYS = ("f0", "energy", "tempo", "length", "pause", "level", "power", "salience",
                   "boundary")


def _read_entry(file: Path, unpack):
    """A cache entry unpacked, or None when it is absent or damaged (then it is rebuilt)."""
    if not file.exists():
        return None
    try:
        return unpack(np.load(file, allow_pickle=False))
    except (OSError, ValueError, IndexError):
        return None


def _write_entry(file: Path, array: np.ndarray) -> None:
    """Write a cache entry atomically: readers in other processes see all of it or none."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f"{file.stem}.{os.getpid()}.tmp.npy")
    np.save(tmp, array, allow_pickle=False)
    os.replace(tmp, file)


def _pack_profiles(p: "SentenceProfiles") -> np.ndarray:
    """One float64 vector (a plain ``.npy`` loads ~5x faster than an ``.npz``): R and N, the
    anchor's packed features, then each profile array, (R,) or (R, N), row-major."""
    anchor = _pack(p.anchor)
    r, n = p.f0.shape
    parts = [np.array([r, n, *anchor.shape], dtype=np.float64), anchor.ravel()]
    parts += [np.asarray(getattr(p, f), dtype=np.float64).ravel() for f in _PROFILE_ARRAYS]
    return np.concatenate(parts)


def _unpack_profiles(a: np.ndarray) -> "SentenceProfiles":
    if a.ndim != 1 or a.dtype != np.float64 or a.size < 4:
        raise ValueError("not a profile file")
    r, n, ar, ac = (int(x) for x in a[:4])
    at = 4 + ar * ac
    anchor = _unpack(a[4:at].reshape(ar, ac))
    out, pos = {}, at
    for f in _PROFILE_ARRAYS:
        shape = (r,) if f in ("length", "level", "power") else (r, n)
        size = int(np.prod(shape))
        if pos + size > a.size:
            raise ValueError("profile file cut short")
        out[f] = a[pos:pos + size].reshape(shape).copy()
        pos += size
    if pos != a.size:
        raise ValueError("profile file of the wrong size")
    return SentenceProfiles(anchor=anchor, **out)


@lru_cache(maxsize=1)
def _source_digest() -> str | None:
    """A digest of this module's source: part of every cached profile's key (None where the
    source cannot be read, as in a zipped install: then profiles are not cached on disk)."""
    try:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def pitch_excursion(f: Features) -> np.ndarray:
    """Per frame, how much the rendition's pitch stands out there (semitones, >= 0): the
    larger of its distance from the rendition's own course (the straight line through its
    voiced pitch: register and declination) and how far it moves within about a syllable
    (the range of the pitch, bridged across unvoiced stretches, within +-100 ms).

    A raised accent, a falling one and a rise-fall all stand out; the voice's register, its
    declination and a global pitch shift do not. The distance from the course alone missed
    accents realised as a fall through the course (high at the word's onset, low at its end:
    at the word's middle it is *on* the line), which the movement within the syllable
    catches. (A running median as the course was tried: at the edges it follows a final
    fall, so a focus on the last word went unseen.)"""
    filled = _bridged_pitch(f)
    if filled is None:
        return np.zeros(f.n)
    voiced, t = ~np.isnan(f.f0), np.arange(f.n)
    slope, intercept = np.polyfit(t[voiced], f.f0[voiced], 1)
    w = PITCH_MOVEMENT_HALF_WINDOW
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(filled, w, mode="edge"), 2 * w + 1)
    movement = windows.max(axis=1) - windows.min(axis=1)
    return np.maximum(np.abs(filled - (slope * t + intercept)), movement)


def pause_runs(feats: Features, below_max_db: float = PAUSE_BELOW_MAX_DB,
               min_pause_s: float = MIN_PAUSE_S) -> list[tuple[int, int]]:
    """Silent stretches inside the utterance, as (first, past-the-end) frame indices.

    A frame is silent when its energy is more than ``below_max_db`` below the utterance's
    loudest frame or less than ``ABOVE_NOISE_DB`` above its noise floor; a pause is a run of at
    least ``min_pause_s`` of silent frames that neither starts nor ends the (speech-trimmed)
    utterance. 150 ms is long enough to exclude stop closures and short enough to catch phrase
    breaks. (The listener's pause term and the graded pause figures both use this.)
    """
    if feats.n == 0:
        return []
    silent = feats.energy < above_noise(float(feats.energy.max()), feats.noise_floor, below_max_db)
    min_frames = max(1, int(np.ceil(min_pause_s / HOP_S - 1e-9)))
    edges = np.diff(np.concatenate(([0], silent.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(a), int(b)) for a, b in zip(starts, stops)
            if b - a >= min_frames and a > 0 and b < feats.n]


def _speech_and_silences(f: Features) -> tuple[Features, np.ndarray, np.ndarray]:
    """The rendition with its pauses cut out, the pause (seconds) that follows each kept frame,
    and every silence inside the utterance from ``JUNCTURE_SILENCE_S`` on, in full seconds (the
    boundary's pause cue: a pause that was cut out at the frame before it - with the pause cut,
    where it was - and a shorter silence at its middle, so that a silence sits at its place on
    either side of ``MIN_PAUSE_S``; method v10 put a short one where speech resumes, its own
    length later).

    Aligning spectra across a pause lets dynamic time warping match one rendition's pause with
    another's pause elsewhere, hiding *where* the phrase break is; words aligned to words, with
    the breaks between them as a feature of their own, keep it. Shorter silences
    (``SHORT_BREAK_FROM_S`` up to ``MIN_PAUSE_S``) stay in place for the alignment but count as
    part of a break at the frame where speech resumes, the more the longer they last (none at
    80 ms, all at 150 ms): an engine's own comma can be a 100-140 ms silence, while stop
    closures stretched by slow speech reach about 100 ms (counted at most a third)."""
    runs = pause_runs(f)
    keep = np.ones(f.n, dtype=bool)
    pause_after = np.zeros(f.n)
    for a, b in runs:
        keep[a:b] = False
        pause_after[a - 1] = (b - a) * HOP_S
    if keep.sum() < 3 or not runs:
        keep, pause_after = np.ones(f.n, dtype=bool), np.zeros(f.n)
    silence_after = pause_after.copy()
    for a, b in pause_runs(f, min_pause_s=JUNCTURE_SILENCE_S):
        seconds = (b - a) * HOP_S
        if keep[a] and seconds < MIN_PAUSE_S:  # not cut out: a short break, partly counted
            share = (seconds - SHORT_BREAK_FROM_S) / (MIN_PAUSE_S - SHORT_BREAK_FROM_S)
            pause_after[b] += seconds * float(np.clip(share, 0.0, 1.0))
            silence_after[(a + b) // 2] += seconds
    if keep.all():
        return f, pause_after, silence_after
    return (Features(f.f0[keep], f.energy[keep], f.mfcc[keep], f.speech[keep], f.noise_floor),
            pause_after[keep], silence_after[keep])


def _positions(a: Features, b: Features) -> np.ndarray:
    """For every frame of ``a``, the matching (fractional) frame of ``b``. Aligned at 40 ms
    (every other frame: a quarter of the work; prosody needs no finer)."""
    return _positions_many(a, [b])[0]


def _positions_many(a: Features, others: list[Features]) -> list[np.ndarray]:
    """``_positions(a, b)`` for each ``b`` in ``others``, aligned together (``dtw_paths``).

    The alignment steps every other frame (frames 0, 2, 4, ...) and is read in between; its
    ends are pinned, as the alignment's own are: ``a``'s last frame to ``b``'s last. (Left to
    the 40 ms steps, a rendition of an even number of frames never reached its last frame, and
    every rendition but the first - whose positions are the identity - seemed to slow down at
    its end: method v13.)"""
    a2 = a.mfcc[::2]
    out = []
    for b, (ia, ib) in zip(others, dtw_paths([(a2, b.mfcc[::2]) for b in others],
                                             ALIGN_PENALTY)):
        counts = np.bincount(ia, minlength=len(a2))
        frames_a = 2.0 * np.arange(len(a2))
        frames_b = 2.0 * np.bincount(ia, weights=ib, minlength=len(a2)) / np.maximum(counts, 1)
        if frames_a[-1] < a.n - 1:
            frames_a, frames_b = np.append(frames_a, a.n - 1), np.append(frames_b, b.n - 1)
        else:
            frames_b[-1] = b.n - 1
        out.append(np.clip(np.interp(np.arange(a.n), frames_a, frames_b), 0, b.n - 1))
    return out


def _smooth(x: np.ndarray, width: int) -> np.ndarray:
    if len(x) < width:
        return np.full_like(x, x.mean())
    pad = np.pad(x, width // 2, mode="edge")
    return np.convolve(pad, np.ones(width) / width, mode="valid")[: len(x)]


def sentence_profiles(renditions: list[Features]) -> SentenceProfiles:
    cut = [_speech_and_silences(r) for r in renditions]
    anchor = cut[0][0]
    kernel = np.bartlett(2 * PAUSE_SPREAD + 3)[1:-1]
    kernel = kernel / kernel.sum()
    f0, energy, tempo, length, pause, level, excursion = [], [], [], [], [], [], []
    reset, gap, power = [], [], []
    others = _positions_many(anchor, [r for r, _, _ in cut[1:]])
    positions = [np.arange(anchor.n, dtype=float), *others]
    for i, (r, after, silences) in enumerate(cut):
        pos = positions[i]
        idx = np.clip(np.round(pos).astype(int), 0, r.n - 1)
        f0.append(r.f0[idx])
        e = np.maximum(r.energy, above_noise(float(r.energy.max()), r.noise_floor,
                                             ENERGY_FLOOR_DB))
        level.append(float(np.mean(e)))
        power.append(power_db(e))
        energy.append(e[idx] - np.mean(e))
        excursion.append(pitch_excursion(r)[idx])
        reset.append(pitch_reset(r)[idx])
        slope = np.gradient(_smooth(pos, 9)) if anchor.n > 1 else np.ones(anchor.n)
        tempo.append(np.log(np.maximum(slope, 0.1)))
        length.append(np.log(max(renditions[i].n, 1)))
        pause.append(np.convolve(_on_anchor(after, pos), kernel, mode="same"))
        gap.append(np.convolve(_on_anchor(silences, pos), kernel / kernel.max(), mode="same"))
    f0, energy, tempo, length, pause, level, excursion, power = map(
        np.array, (f0, energy, tempo, length, pause, level, excursion, power))
    with warnings.catch_warnings():  # a frame no rendition voices has a NaN mean: intended
        warnings.simplefilter("ignore", RuntimeWarning)
        f0_mean = np.nanmean(f0, axis=0)
    energy, tempo, pause = energy - energy.mean(0), tempo - tempo.mean(0), pause - pause.mean(0)
    u = SALIENCE_UNITS
    salience = ((excursion - excursion.mean(0)) / u["f0"] + energy / u["energy"]
                + tempo / u["tempo"] + pause / u["pause"])
    salience = np.array([_smooth(row, SALIENCE_SMOOTH) for row in salience])
    b = BOUNDARY_UNITS
    reset = np.array(reset)
    gap = np.array(gap)
    gap = gap - gap.mean(0)
    boundary = (gap / b["pause"]
                + np.array([_slower_before(row) for row in tempo]) / b["lengthening"]
                + (reset - reset.mean(0)) / b["reset"])
    boundary = np.array([_smooth(row, SALIENCE_SMOOTH) for row in boundary])
    return SentenceProfiles(anchor, f0 - f0_mean, energy, tempo, length - length.mean(), pause,
                            level - level.mean(), power - power.mean(), salience, boundary)


def _on_anchor(seconds: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """A rendition's pauses (seconds at its frames) on the anchor's time axis (``pos``: the
    rendition frame matching each anchor frame): each lands once, on the anchor frame nearest
    to where it falls."""
    out = np.zeros(len(pos))
    for j in np.flatnonzero(seconds):
        out[int(np.argmin(np.abs(pos - j)))] += seconds[j]
    return out


def _step_down(x: np.ndarray, w: int = BOUNDARY_HALF_WINDOW) -> np.ndarray:
    """Per frame, the mean of ``x`` over the ``w`` frames before minus over the ``w`` after."""
    if len(x) < 2:
        return np.zeros(len(x))
    c = np.concatenate(([0.0], np.cumsum(np.pad(x, w, mode="edge"))))
    i = np.arange(len(x)) + w
    return (c[i] - c[i - w]) / w - (c[i + w] - c[i]) / w


def _slower_before(x: np.ndarray, w: int = BOUNDARY_HALF_WINDOW) -> np.ndarray:
    """Per frame, the mean of ``x`` (log local duration) over the ``w`` frames before it:
    the lengthening of the stretch a boundary there would end."""
    if len(x) < 2:
        return np.zeros(len(x))
    c = np.concatenate(([0.0], np.cumsum(np.pad(x, (w, 0), mode="edge"))))
    i = np.arange(len(x)) + w
    return (c[i] - c[i - w]) / w


def pitch_reset(f: Features) -> np.ndarray:
    """Per frame, how far the pitch (bridged across unvoiced stretches) rises from the 200 ms
    before it to the 200 ms after it (semitones): a phrase starting afresh after a boundary."""
    filled = _bridged_pitch(f)
    return np.zeros(f.n) if filled is None else -_step_down(filled)


def _bridged_pitch(f: Features) -> np.ndarray | None:
    """The pitch at every frame, unvoiced stretches bridged by straight lines between their
    voiced neighbours (None with fewer than 3 voiced frames: no course to speak of)."""
    voiced = ~np.isnan(f.f0)
    if voiced.sum() < 3:
        return None
    t = np.arange(f.n)
    return np.interp(t, t[voiced], f.f0[voiced])


def onto(system: SentenceProfiles, natural: SentenceProfiles) -> SentenceProfiles:
    """The system's profiles on the natural anchor's time axis (one cross-voice alignment, on
    variance-normalised cepstra: ``_standardised_cepstra``)."""
    pos = _positions(_standardised_cepstra(natural.anchor), _standardised_cepstra(system.anchor))
    return system.on(np.clip(np.round(pos).astype(int), 0, system.anchor.n - 1))


def _standardised_cepstra(f: Features) -> Features:
    """``f`` with each cepstral coefficient centred and scaled to unit variance over its frames
    (cepstral mean and variance normalisation; Viikki & Laurila 1998): two voices spread their
    coefficients differently, and without it the frame cost of a cross-voice alignment is
    dominated by whichever coefficients one voice happens to move most."""
    m = f.mfcc - f.mfcc.mean(axis=0, keepdims=True)
    sd = m.std(axis=0, keepdims=True)
    return replace(f, mfcc=m / np.where(sd > 0, sd, 1.0))


def _discriminative_weights(natural: SentenceProfiles) -> dict[str, np.ndarray]:
    """Per frame, how much the natural candidates differ there: where listening pays off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f0_sd = np.nan_to_num(np.nanstd(natural.f0, axis=0))
    return {"f0": f0_sd + 0.3, "energy": natural.energy.std(0) + 1.0,
            "tempo": natural.tempo.std(0) + 0.05}


def _correlation_distance(a: np.ndarray, b: np.ndarray) -> float:
    """(1 - Pearson r) / 2: 0 when two profiles rise and fall together, 1 when opposed, 0.5
    when unrelated or when either is flat. Scale-free: a weaker accent in the right place is
    still in the right place."""
    a, b = a - a.mean(), b - b.mean()
    den = float(np.sqrt(np.sum(a * a) * np.sum(b * b)))
    return 0.5 if den <= 1e-12 else float(1.0 - np.sum(a * b) / den) / 2.0


def _term_distances(sys: SentenceProfiles, i: int, nat: SentenceProfiles, j: int, w,
                    level_votes: bool = True, boundary_votes: bool = True,
                    tempo_votes: bool = True) -> dict[str, float]:
    nat_f0, sys_f0 = nat.f0[j], sys.f0[i]
    judged = ~np.isnan(nat_f0)
    f0_dev = np.where(np.isnan(sys_f0), MISSING_F0_ST, np.abs(np.nan_to_num(sys_f0 - nat_f0)))
    f0 = float(np.sum((w["f0"] * f0_dev)[judged]) / max(np.sum(w["f0"][judged]), 1e-9)) \
        if judged.any() else MISSING_F0_ST
    energy = float(np.sum(w["energy"] * np.abs(sys.energy[i] - nat.energy[j]))
                   / np.sum(w["energy"]))
    tempo = (float(np.sum(w["tempo"] * np.abs(sys.tempo[i] - nat.tempo[j])) / np.sum(w["tempo"]))
             + abs(float(sys.length[i] - nat.length[j]))) if tempo_votes else 0.0
    level = abs(float(sys.level[i] - nat.level[j])) if level_votes else 0.0
    # pauses are events, not levels: summed (seconds), not averaged over the sentence
    return {"f0": f0, "energy": energy, "level": level, "tempo": tempo,
            "pause": float(np.sum(np.abs(sys.pause[i] - nat.pause[j]))),
            "salience": _correlation_distance(sys.salience[i], nat.salience[j]),
            "boundary": (_correlation_distance(sys.boundary[i], nat.boundary[j])
                         if boundary_votes else 0.0)}


@dataclass(frozen=True)
class Comparison:
    """Sentence-relative distances of system renditions (rows) to natural candidates (columns),
    per term, each in units of how far the natural candidates lie from one another."""

    terms: dict[str, np.ndarray]  # term -> (S, K) raw distance
    scale: dict[str, float]  # term -> mean distance between distinct natural candidates

    def total(self, weights: dict[str, float]) -> np.ndarray:
        return sum(weights[t] * self.terms[t] / self.scale[t] for t in TERMS)


SCALE_FLOORS = {"pause": PAUSE_SCALE_FLOOR_S, "level": 1.0, "salience": 0.05, "boundary": 0.05}


@dataclass(frozen=True)
class ReferenceSpread:
    """How far a sentence's natural candidates lie from one another, a property of the
    references alone (``FeatureStore.reference`` caches it with their profiles): per term,
    the mean distance between two distinct candidates (at least ``SCALE_FLOORS``), the unit
    every distance to them is expressed in; and whether they place their breaks differently
    (only then does the boundary term vote)."""

    scale: dict[str, float]
    boundary_votes: bool


def reference_spread(natural: SentenceProfiles, w: dict[str, np.ndarray] | None = None
                     ) -> ReferenceSpread:
    w = _discriminative_weights(natural) if w is None else w
    k = natural.f0.shape[0]
    pairs = [_term_distances(natural, a, natural, b, w) for a in range(k) for b in range(k)
             if a != b]
    # the references place their breaks differently: only then is "where are the boundaries"
    # a question (elsewhere the boundary profiles hold timing noise and would only add it)
    boundary_votes = bool(pairs) and float(np.mean([p["pause"] for p in pairs])) \
        >= BOUNDARY_VOTE_S
    scale = {t: max(float(np.mean([p[t] for p in pairs])) if pairs else 1.0,
                    SCALE_FLOORS.get(t, 1e-3)) for t in TERMS}
    return ReferenceSpread(scale, boundary_votes)


def _pack_spread(spread: ReferenceSpread) -> np.ndarray:
    return np.array([float(spread.boundary_votes), *(spread.scale[t] for t in TERMS)])


def _unpack_spread(a: np.ndarray) -> ReferenceSpread:
    if a.shape != (1 + len(TERMS),) or a.dtype != np.float64 or a[0] not in (0.0, 1.0):
        raise ValueError("not a reference spread")
    return ReferenceSpread({t: float(v) for t, v in zip(TERMS, a[1:])}, bool(a[0]))


def compare_sentence(system: SentenceProfiles, natural: SentenceProfiles,
                     spread: ReferenceSpread | None = None) -> Comparison:
    """Every system rendition against every natural candidate (``system`` already ``onto``);
    ``spread``: the natural candidates' ``reference_spread``, when it is at hand."""
    w = _discriminative_weights(natural)
    spread = reference_spread(natural, w) if spread is None else spread
    k, s = natural.f0.shape[0], system.f0.shape[0]
    level_votes = system.level_spread >= LEVEL_VOTE_DB
    tempo_votes = system.tempo_spread >= TEMPO_VOTE
    terms = {t: np.zeros((s, k)) for t in TERMS}
    for i in range(s):
        for j in range(k):
            for t, v in _term_distances(system, i, natural, j, w, level_votes,
                                        spread.boundary_votes, tempo_votes).items():
                terms[t][i, j] = v
    return Comparison(terms, dict(spread.scale))
