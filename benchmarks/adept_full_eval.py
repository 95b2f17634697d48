"""Speed and memory of a full 12-task ADEPT evaluation (195 samples) with the acoustic listener.

Runs lm-eval in-process on a synthetic corpus and a simulated system (or on ADEPT_EVAL_CORPUS
and --system DIR when given), twice: cold (natural references' features not cached yet) and warm
(cached, the normal case). Prints wall time split into lm-eval start-up, task loading and our
work (producing/checking samples + listening), audio seconds analysed per wall second, and peak
memory (max RSS). Single-threaded: BLAS threads are pinned to 1 before numpy loads.

    python benchmarks/adept_full_eval.py [--system DIR] [--corpus PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import argparse  # noqa: E402
import resource  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


class Clock:
    def __init__(self):
        self.spent: dict[str, float] = {}  # wall seconds
        self.cpu: dict[str, float] = {}  # this process's CPU seconds (immune to a busy machine)

    def wrap(self, owner, attr: str, label: str):
        original = getattr(owner, attr)

        def timed(*args, **kwargs):
            t, c = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[label] = self.spent.get(label, 0.0) + time.perf_counter() - t
                self.cpu[label] = self.cpu.get(label, 0.0) + time.process_time() - c

        setattr(owner, attr, timed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", help="a folder of samples (default: a simulated system)")
    parser.add_argument("--corpus", help="ADEPT corpus (default: a synthetic one)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="adept-bench-"))
    os.environ["ADEPT_EVAL_HOME"] = str(work / "home")

    t0 = time.perf_counter()
    import lm_eval  # noqa: F401
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager
    t_import = time.perf_counter() - t0

    from adept_eval import harness, synthetic
    from adept_eval.lm_eval_plugin import register
    from adept_eval.models.base import SpeechSystem
    from adept_eval.prosody import FeatureStore

    register()
    if args.corpus:
        os.environ["ADEPT_EVAL_CORPUS"] = args.corpus
    else:
        print("building a synthetic corpus and a simulated system ...", flush=True)
        os.environ["ADEPT_EVAL_CORPUS"] = str(synthetic.build_corpus(work / "corpus"))
    system = Path(args.system) if args.system else synthetic.build_system(work / "system")

    import soundfile as sf

    system_audio_s = sum(sf.info(str(p)).duration for p in system.rglob("*.wav"))

    stats = {"computed": 0, "seconds": 0.0}
    original_get = FeatureStore.get

    def counting_get(self, path):
        before_n, before_s = self.computed, self.audio_seconds
        out = original_get(self, path)
        stats["computed"] += self.computed - before_n
        stats["seconds"] += self.audio_seconds - before_s
        return out

    FeatureStore.get = counting_get
    clock = Clock()
    clock.wrap(SpeechSystem, "generate_until", "produce+check samples")
    # the listener is asked from the tasks' filter (harness.score_task, imported by the task
    # YAMLs' utils module under its own name), so time the listener's own entry points
    from adept_eval.listeners.acoustic import AcousticListener

    clock.wrap(AcousticListener, "answer_many", "listening")
    clock.wrap(AcousticListener, "graded_scores", "graded")
    feature_dir = Path(os.environ["ADEPT_EVAL_HOME"]) / "features"

    rows = []
    for run in ("cold", "warm"):
        # cold: nothing cached; warm: ADEPT's natural features cached, the system's not
        for wav in system.rglob("*.wav"):
            (feature_dir / f"{FeatureStore.key(wav)}.npz").unlink(missing_ok=True)
        clock.spent.clear()
        clock.cpu.clear()
        harness._listener.cache_clear()
        harness._corpus.cache_clear()
        stats.update(computed=0, seconds=0.0)
        t = time.perf_counter()
        tm = TaskManager(metadata={"path": str(system), "name": "bench"})
        t_index = time.perf_counter() - t
        t = time.perf_counter()
        res = simple_evaluate(model="audio-dir", model_args={"path": str(system), "name": "bench"},
                              tasks=["adept"], task_manager=tm, bootstrap_iters=0)
        t_eval = time.perf_counter() - t
        rows.append((run, t_index, t_eval, dict(clock.spent), stats["computed"], stats["seconds"],
                     res["results"]["adept"]["acc,none"], sum(clock.cpu.values())))

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nADEPT full evaluation: 12 tasks, 165 questions, 195 system samples "
          f"({system_audio_s:.0f} s of audio); lm-eval import {t_import:.2f} s")
    print(f"{'run':5} {'index':>7} {'evaluate':>9} {'ours':>7} {'produce':>8} {'listen':>7} "
          f"{'graded':>7} "
          f"{'files':>6} {'analysed':>9} {'x real time':>11} {'CPU':>6} {'x RT (CPU)':>10} "
          f"{'acc':>5}")
    for run, t_index, t_eval, spent, n, secs, acc, cpu in rows:
        ours = sum(spent.values())
        print(f"{run:5} {t_index:6.2f}s {t_eval:8.2f}s {ours:6.2f}s "
              f"{spent.get('produce+check samples', 0):7.2f}s {spent.get('listening', 0):6.2f}s "
              f"{spent.get('graded', 0):6.2f}s "
              f"{n:6d} {secs:8.0f}s {secs / ours:10.0f}x {cpu:5.2f}s {secs / max(cpu, 1e-9):9.0f}x "
              f"{acc:5.2f}")
    warm = rows[1]
    print(f"lm-eval's own share of the warm run: {warm[2] - sum(warm[3].values()):.2f} s "
          f"(plus {t_import:.2f} s import and {warm[1]:.2f} s task index)")
    print(f"peak memory (max RSS): {peak_mb:.0f} MiB")
    print("target: >= 100x real time for our work on one core (CPU column: unaffected by other "
          "processes sharing the machine)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
