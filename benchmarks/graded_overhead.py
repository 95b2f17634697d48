"""What the graded prosody-transfer figures add to a full 12-task ADEPT evaluation.

Runs lm-eval in-process on a synthetic corpus and a simulated system (or on --corpus and
--system DIR), as ``benchmarks/adept_full_eval.py`` does for its warm run (natural references'
features cached, the system's not), then scores every system sample with ``graded.AdeptScorer``
three ways and prints each one's time next to the evaluation's:

- reuse:  the listener's in-memory features and its per-sentence distance matrices (how the
          figures run inside lm-eval): only the alignment and the figures themselves are new;
- cache:  features from the on-disk cache, distances recomputed (a separate process afterwards);
- cold:   nothing cached (features extracted again), distances recomputed.

Target: the reuse path adds < 20% to the full evaluation. With --separation it also prints the
graded figures of simulated systems transferring 100%, 50% and 20% of each prosodic effect
(synthetic audio: a plumbing check, not validation). Single-threaded (BLAS pinned to 1).

    python benchmarks/graded_overhead.py [--system DIR] [--corpus PATH] [--separation]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def sentences(corpus):
    """Every (class, speaker, sentence id) of ADEPT, with its subcategories."""
    from adept_eval import spec

    for cls_name, cls in spec.CLASSES.items():
        for speaker in spec.SPEAKERS:
            for sid in cls.sentence_ids():
                yield cls_name, speaker, sid, cls.subcategories_for(speaker)


def system_samples(system: Path, cls: str, speaker: str, sid: str, subs) -> dict[str, str]:
    from adept_eval import spec

    key = f"{spec.SPEAKERS[speaker]}_{sid}"
    return {s: str(system / cls / s / f"{key}.wav") for s in subs
            if (system / cls / s / f"{key}.wav").exists()}


def score_system(corpus, system: Path, store, listener_memo: dict | None = None):
    """Graded records of every stimulus; with ``listener_memo``, the listener's distance
    matrices are reused where it computed them (multi-stimulus sentences)."""
    from adept_eval import graded

    scorer = graded.AdeptScorer(corpus, store)
    by_sentence = {}
    if listener_memo:
        import numpy as np

        for memo_key, d in listener_memo.items():
            # the listener's memo: (class, speaker, sentence, subcategories, paths) -> a
            # samples x references distance matrix; anything else is not reused
            if not (isinstance(memo_key, tuple) and len(memo_key) == 5
                    and isinstance(d, np.ndarray)):
                continue
            cls, speaker, sid, subs, paths = memo_key
            if len(paths) == len(subs) and d.shape == (len(subs), len(subs)):
                by_sentence[(cls, speaker, sid, subs)] = (dict(zip(subs, paths)), d)
    records, reused = [], 0
    for cls, speaker, sid, subs in sentences(corpus):
        samples = system_samples(system, cls, speaker, sid, subs)
        hit = by_sentence.get((cls, speaker, sid, subs))
        distances = None
        if hit and hit[0] == samples:
            distances = hit[1]
            reused += 1
        records += scorer.sentence(cls, speaker, sid, samples, distances=distances).values()
    return records, reused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", help="a folder of samples (default: a simulated system)")
    parser.add_argument("--corpus", help="ADEPT corpus (default: a synthetic one)")
    parser.add_argument("--separation", action="store_true",
                        help="also score simulated systems with 100/50/20%% transfer")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="adept-graded-bench-"))
    os.environ["ADEPT_EVAL_HOME"] = str(work / "home")

    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval import harness, spec, synthetic
    from adept_eval.corpus import load_corpus
    from adept_eval.lm_eval_plugin import register
    from adept_eval.prosody import FeatureStore

    register()
    if args.corpus:
        os.environ["ADEPT_EVAL_CORPUS"] = args.corpus
    else:
        print("building a synthetic corpus and a simulated system ...", flush=True)
        os.environ["ADEPT_EVAL_CORPUS"] = str(synthetic.build_corpus(work / "corpus"))
    system = Path(args.system) if args.system else synthetic.build_system(work / "system")
    corpus = load_corpus(os.environ["ADEPT_EVAL_CORPUS"])
    feature_dir = Path(os.environ["ADEPT_EVAL_HOME"]) / "features"

    # warm the natural references' features (the normal case), as adept_full_eval does
    warm_store = FeatureStore(feature_dir)
    for cls, speaker, sid, subs in sentences(corpus):
        key = f"{spec.SPEAKERS[speaker]}_{sid}"
        for s in subs:
            warm_store.get(corpus.get(f"{cls}/{s}/{key}").audio_path)

    print("full ADEPT evaluation with the acoustic listener ...", flush=True)
    harness._listener.cache_clear()
    harness._corpus.cache_clear()
    t, c = time.perf_counter(), time.process_time()
    tm = TaskManager(metadata={"path": str(system), "name": "bench"})
    res = simple_evaluate(model="audio-dir", model_args={"path": str(system), "name": "bench"},
                          tasks=["adept"], task_manager=tm, bootstrap_iters=0)
    t_eval, c_eval = time.perf_counter() - t, time.process_time() - c
    acc = res["results"]["adept"]["acc,none"]
    listener = _the_listener()

    rows = []

    def timed(name, store, memo=None):
        t, c = time.perf_counter(), time.process_time()
        records, reused = score_system(corpus, system, store, memo)
        rows.append((name, time.perf_counter() - t, time.process_time() - c, reused))
        return records

    reuse_records = timed("reuse", listener.store, listener._memo)
    timed("cache", FeatureStore(feature_dir))
    for wav in system.rglob("*.wav"):
        (feature_dir / f"{FeatureStore.key(wav)}.npz").unlink(missing_ok=True)
    timed("cold", FeatureStore(feature_dir))

    n = len(reuse_records)
    print(f"\nfull ADEPT evaluation (lm-eval, 12 tasks, {n} system samples): wall "
          f"{t_eval:.2f} s, CPU {c_eval:.2f} s, accuracy {acc:.3f}")
    print("(CPU time is the fairer figure on a shared machine: the run is single-threaded)")
    print(f"{'graded':7} {'wall':>8} {'CPU':>8} {'CPU/sample':>11} {'wall vs eval':>13} "
          f"{'CPU vs eval':>12} {'sentences reusing listener distances':>37}")
    for name, secs, cpu, k in rows:
        print(f"{name:7} {secs:7.2f}s {cpu:7.2f}s {1000 * cpu / max(n, 1):9.1f}ms "
              f"{100 * secs / t_eval:12.1f}% {100 * cpu / c_eval:11.1f}% {k:>37}")
    print("target: the reuse path adds < 20% to the full evaluation")
    _print_summary("simulated system", reuse_records)

    if args.separation:
        for transfer in (1.0, 0.5, 0.2):
            print(f"\nbuilding a simulated system with {transfer:.0%} transfer ...", flush=True)
            sysdir = synthetic.build_system(work / f"transfer_{transfer}", transfer=transfer)
            records, _ = score_system(corpus, sysdir, FeatureStore(feature_dir))
            _print_summary(f"{transfer:.0%} transfer", records)
    return 0


def _the_listener():
    """The acoustic listener lm-eval's run built (harness keeps it in an lru_cache)."""
    import gc

    from adept_eval.listeners.acoustic import AcousticListener

    found = [o for o in gc.get_objects() if isinstance(o, AcousticListener)]
    if len(found) != 1:
        raise SystemExit(f"expected the one acoustic listener of the run, found {len(found)}")
    return found[0]


def _print_summary(label: str, records) -> None:
    from adept_eval import graded

    summary = graded.aggregate(records)
    print(f"\n{label}: graded figures over stimuli (mean [95% bootstrap CI], n, failed)")
    for name in graded.METRIC_NAMES:
        s = summary[name]
        print(f"  {name:20} {s.mean:8.3f} [{s.ci_low:7.3f}, {s.ci_high:7.3f}]  n={s.n:3d}  "
              f"failed={s.n_failed}  undefined={s.n_undefined}")


if __name__ == "__main__":
    raise SystemExit(main())
