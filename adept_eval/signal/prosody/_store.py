"""The content-keyed feature store: features, sentence profiles and reference spreads cached in
memory and on disk, extracted in parallel or in the background.

Features are cached on disk by audio content (sha256), so ADEPT's natural recordings are
analysed once per machine, not once per run.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from adept_eval.signal import content_keys
from adept_eval.signal.audio import read_audio
from adept_eval.signal.prosody._cache_files import (
    pack_features,
    pack_profiles,
    pack_spread,
    read_entry,
    source_digest,
    unpack_features,
    unpack_profiles,
    unpack_spread,
    write_entry,
)
from adept_eval.signal.prosody._comparison import ReferenceSpread, reference_spread
from adept_eval.signal.prosody._features import FEATURE_VERSION, Features, extract
from adept_eval.signal.prosody._pools import (
    BACKGROUND,
    POOLS,
    background_workers,
    default_workers,
    process_pool,
)
from adept_eval.signal.prosody._profiles import SentenceProfiles, sentence_profiles


#: fewer files than this are extracted in the calling process (see ``FeatureStore.prefetch``)
MIN_PARALLEL_FILES = 8


class FeatureStore:
    """Content-keyed feature cache: memory first, then one ``.npy`` file per recording under
    ``directory`` (``path_of``)."""

    def __init__(self, directory: str | Path | None = None):
        """Open the store.

        Args:
            directory: Where feature files live, or None for ``features`` under the cache
                home (``paths.cache_home``).
        """
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
        (``content_keys``) instead of hashing a file whose ``stat`` has not changed.

        Args:
            path: The audio file.

        Returns:
            The key.

        Raises:
            OSError: The file cannot be read or ``stat``-ed.
        """
        st = os.stat(path)
        stamp = (str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
        if stamp not in FeatureStore._keys:
            FeatureStore._keys[stamp] = f"{self._content.digest(path, st)}-v{FEATURE_VERSION}"
        return FeatureStore._keys[stamp]

    def path_of(self, audio_path: str | Path) -> Path:
        """Where the features of ``audio_path`` are (or will be) cached on disk.

        Args:
            audio_path: The audio file.

        Returns:
            The feature file's path.
        """
        return self.directory / f"{self.key(audio_path)}.npy"

    def profiles(self, paths) -> SentenceProfiles:
        """``sentence_profiles`` of the recordings at ``paths`` (in that order), cached on disk
        beside their features: a reference sentence's profiles are the same every run, and
        rebuilding them would be a fifth of the listener's work on a warm run. The cache key
        holds every recording's content key and a digest of the package's source
        (``source_digest``), so a change to how profiles are built never reads stale ones.

        Args:
            paths: The sentence's recordings, the anchor first.

        Returns:
            Their profiles.
        """
        return self._profiles_named(paths, *self._profiles_name(paths))

    def _profiles_named(self, paths, name: str, source: str | None) -> SentenceProfiles:
        """``profiles`` under its cache ``name``: from memory, from disk (when ``source`` is
        known), or built and written."""
        if name in self._profiles:
            return self._profiles[name]
        file = self.directory / "profiles" / f"{name}.npy"
        found = read_entry(file, unpack_profiles) if source else None
        if found is None:
            found = sentence_profiles([self.get(p) for p in paths])
            if source:
                write_entry(file, pack_profiles(found))
        self._profiles[name] = found
        return found

    def reference(self, paths) -> tuple[SentenceProfiles, "ReferenceSpread"]:
        """A reference sentence's ``profiles`` and their ``reference_spread``, both cached on
        disk (the spread beside the profiles, under the same key): what every comparison
        with the sentence starts from.

        Args:
            paths: The sentence's natural recordings, the anchor first.

        Returns:
            (their profiles, their spread).
        """
        name, source = self._profiles_name(paths)
        natural = self._profiles_named(paths, name, source)
        if name not in self._spreads:
            file = self.directory / "profiles" / f"{name}.spread.npy"
            found = read_entry(file, unpack_spread) if source else None
            if found is None:
                found = reference_spread(natural)
                if source:
                    write_entry(file, pack_spread(found))
            self._spreads[name] = found
        return natural, self._spreads[name]

    def _profiles_name(self, paths) -> tuple[str, str | None]:
        """The cache name of a sentence's profiles, and the source digest in it (None: not
        cached on disk)."""
        source = source_digest()
        keys = [self.key(p) for p in paths]
        return hashlib.sha256("|".join([*keys, source or ""]).encode()).hexdigest()[:32], source

    def get(self, path: str | Path) -> Features:
        """The features of the recording at ``path``: from memory, from a background
        extraction, from disk, or extracted here (and written to disk).

        Args:
            path: The audio file.

        Returns:
            Its features.

        Raises:
            AudioError: The file cannot be decoded or analysed.
            OSError: The file cannot be read.
        """
        key = self.key(path)
        if key in self._memory:
            return self._memory[key]
        if key in self._ahead:  # being extracted in the background: wait for it
            feats = self._collect(key)
            if feats is not None:
                return feats
        file = self.directory / f"{key}.npy"
        feats = read_entry(file, unpack_features)
        if feats is None:
            audio = read_audio(path)
            feats = extract(audio)
            self.computed += 1
            self.audio_seconds += audio.duration
            write_entry(file, pack_features(feats))
        self._memory[key] = feats
        return feats

    def prefetch(self, paths, workers: int | None = None, progress: bool = True) -> int:
        """Extract the features of every file in ``paths`` that is neither in memory nor on
        disk, on ``workers`` processes (default: ``default_workers()``), so that later ``get``
        calls are cache hits.

        Each worker runs this same ``get`` on its files, so the features are the ones a single
        process computes, bit for bit (``extract`` is deterministic), and land in the same disk
        cache. Below ``MIN_PARALLEL_FILES`` files, or with one worker, nothing is started: a
        pool costs ~0.5 s of start-up (each worker imports numpy, scipy and parselmouth).

        Args:
            paths: The audio files.
            workers: Processes to use, or None for ``default_workers()``.
            progress: Whether to show a progress bar.

        Returns:
            How many files were extracted on workers.
        """
        todo, ahead = self._sort_out(paths)
        if ahead:
            self._share(ahead, progress)
        workers = default_workers() if workers is None else max(1, int(workers))
        if len(todo) < MIN_PARALLEL_FILES or workers < 2:
            return 0
        self._extract_on_pool(todo, workers, progress)
        return len(todo)

    def _sort_out(self, paths) -> tuple[dict[str, str], dict[str, str]]:
        """Split ``paths`` into the files to extract (neither queued, in memory nor on disk)
        and those queued by ``extract_ahead``, each as content key -> path."""
        todo, ahead = {}, {}
        for path in paths:
            key = self.key(path)
            if key in self._ahead:
                ahead[key] = str(path)
            elif key not in self._memory and key not in todo and not self._on_disk(key):
                todo[key] = str(path)
        return todo, ahead

    def _on_disk(self, key: str) -> bool:
        """Whether the disk cache holds the features of content ``key``."""
        return (self.directory / f"{key}.npy").exists()

    def _extract_on_pool(self, todo: dict[str, str], workers: int, progress: bool) -> None:
        """Extract the files of ``todo`` (key -> path) on ``workers`` processes, keeping each
        result in memory (the workers also write it to the disk cache)."""
        from tqdm.auto import tqdm

        pool = process_pool(workers)
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
        with ``workers=1``, nothing is queued and ``get`` extracts each file in this process.

        Args:
            paths: The audio files, in the order they will be wanted.
            workers: Processes to use, or None for ``background_workers()``.

        Returns:
            How many files were queued.
        """
        import multiprocessing

        workers = background_workers() if workers is None else int(workers)
        if workers < 1 or "fork" not in multiprocessing.get_all_start_methods():
            return 0
        todo = self._not_extracted(paths)
        if not todo:
            return 0
        try:
            pool = process_pool(workers, background=True)
            for key, path in todo.items():
                self._ahead[key] = pool.submit(_extract_files, str(self.directory), [path])
        except Exception:  # noqa: BLE001 - a broken or unstartable pool: extract here instead
            POOLS.pop(workers, None)
            return 0
        BACKGROUND.add(workers)
        return len(todo)

    def _not_extracted(self, paths) -> dict[str, str]:
        """The files of ``paths`` neither in memory, queued nor on disk, as content key ->
        path, in the order given; a file that cannot be read is left out (its question says
        so itself)."""
        todo = {}
        for path in paths:
            try:
                key = self.key(path)
            except OSError:
                continue
            if key not in self._memory and key not in self._ahead and key not in todo \
                    and not self._on_disk(key):
                todo[key] = str(path)
        return todo

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
                if _can_take_back(front, back, lo, hi):
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


def _can_take_back(front, back, lo: int, hi: int) -> bool:
    """Whether this process should extract the back file itself: the front one is still being
    extracted, another file lies between them, and the worker had not started the back one
    (cancelling its future succeeds; ``cancel`` is called last, only when the rest holds)."""
    return (front is not None and not front.done() and hi - 1 > lo
            and back is not None and back.cancel())


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
