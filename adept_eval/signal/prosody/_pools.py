"""The processes and threads feature extraction runs on: worker counts, one process pool per
worker count, and BLAS held to one thread.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from functools import lru_cache


# Praat's pitch tracker splits a sound's frames over as many threads as the machine has cores
# (std::thread::hardware_concurrency; Praat 6.1.38 has no setting for it): on 2 cores about
# 1.7 cores are busy during it. (Its threads cost no extra CPU: 80 files take 0.33 s of CPU on
# one core or two.)
THREADS_PER_EXTRACTION = 2


def default_workers() -> int:
    """Processes of a pool this process waits for (``prefetch``), when none are asked for:
    one per two cores this process may use, since one extraction keeps about two cores busy;
    none on a 2-core machine. (A run's own extraction is in the background instead:
    ``background_workers``. Such a pool runs slower on 2 cores than one process - 6.3 s against
    5.0 s for a full evaluation - because this process idles while it works and each worker
    imports scipy.signal, and scipy.stats with it, itself: ~0.5 s of CPU each.)

    Returns:
        The worker count (at least 1).
    """
    return max(1, available_cores() // THREADS_PER_EXTRACTION)


def background_workers() -> int:
    """Processes that extract a run's features in the background beside the process that
    listens (``FeatureStore.extract_ahead``), when none are asked for: one per two cores
    (one extraction keeps about two cores busy), and one on a 2-core machine, where the
    listening process takes the other core (two there are no faster with the machine quiet,
    4.0 s against 4.1 s for a full evaluation, with 240 MiB more memory, and slower with
    another program busy on a core: 5.9 s against 5.2 s). The count is ``default_workers``';
    only what one worker means differs (there: no pool; here: one worker).

    Returns:
        The worker count (at least 1).
    """
    return default_workers()


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's total).

    Returns:
        The count (at least 1).
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


POOLS: dict = {}


def process_pool(workers: int, background: bool = False):
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
    for has them imported here first, once for all its workers.

    Args:
        workers: The pool's worker count.
        background: Whether the pool serves ``extract_ahead``.

    Returns:
        The pool (a ``ProcessPoolExecutor``), shut down at exit.

    Raises:
        RuntimeError: A background pool is asked for where the platform cannot fork.
    """
    if workers not in POOLS:
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
        POOLS[workers] = pool
    return POOLS[workers]


BACKGROUND: set[int] = set()  # worker counts of the pools ``extract_ahead`` queued work on


def stop_background() -> None:
    """Cancel the background extractions not started yet.

    A run that stops before it scores calls this: at exit, Python would otherwise first let
    the pool finish its whole queue. A file still wanted is then extracted by ``get`` in this
    process; the next ``extract_ahead`` starts a new pool.
    """
    for workers in list(BACKGROUND):
        pool = POOLS.pop(workers, None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    BACKGROUND.clear()


@contextmanager
def one_blas_thread():
    """Run the block with BLAS (numpy's and scipy's OpenBLAS) on one thread.

    The listener's matrix products are small (a few hundred frames by 257 bins), so a second
    BLAS thread gains nothing, while OpenBLAS's idle threads spin after every product and take
    the core a background extraction runs on: a full evaluation with BLAS left at its default
    (two threads on two cores) takes 4.85 s and 7.3 s of CPU instead of 3.96 s and 5.1 s. One
    thread also keeps results independent of the user's thread settings (the
    alignments' cost-matrix products differ in their last bits between one and two threads).

    Yields:
        Nothing; BLAS's thread count is restored when the block ends.
    """
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
