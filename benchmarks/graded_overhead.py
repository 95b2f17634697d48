"""What the graded prosody-transfer figures add to a full ADEPT evaluation (every task).

Runs lm-eval in-process on a synthetic corpus and a simulated system (or on --corpus and
--system DIR) twice per round, with the graded figures off (``--metadata graded=false``) and on
(the default). Every timed run starts as ``benchmarks/adept_full_eval.py``'s warm runs do: the
natural references' features cached, the system's samples neither cached nor indexed (their
features deleted and their bytes written again before every run). Unlike that benchmark, whose
runs each start a new Python process, these all run in this one process: an untimed warm-up
evaluation first pays the imports and first-run costs, and the order alternates ABBA across
rounds (off-on, on-off, ...) so neither setting always runs first. Inside lm-eval the figures
reuse the listener's features and its per-sentence comparisons, so only the alignment to the
reference and the figures themselves are new work. Prints every round's wall and CPU time, off
and on side by side with their ratio, then the medians over the rounds and what the figures add.

Target: the graded figures add < 20% to the full evaluation. With --separation it also prints
the graded figures of simulated systems transferring 100%, 50% and 20% of each prosodic effect
(synthetic audio: a plumbing check, not validation). Single-threaded (BLAS pinned to 1).

    python benchmarks/graded_overhead.py [--system DIR] [--corpus PATH] [--rounds N] [--separation]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adept_eval.errors import run_script
from adept_eval.options import arg_type


def sentences(corpus):
    """Every (class, speaker, sentence id) of ADEPT, with its subcategories."""
    from adept_eval.corpora import spec

    for cls_name, cls in spec.CLASSES.items():
        for speaker in spec.SPEAKERS:
            for sid in cls.sentence_ids():
                yield cls_name, speaker, sid, cls.subcategories_for(speaker)


def forget_system(system: Path, feature_dir: Path) -> None:
    """As if the system had just written its samples (``adept_full_eval``'s warm runs): their
    features not cached, the same bytes written again (no index of content keys knows them)."""
    from adept_eval.signal.prosody import FeatureStore

    store = FeatureStore(feature_dir)
    for wav in system.rglob("*.wav"):
        store.path_of(wav).unlink(missing_ok=True)
        wav.write_bytes(wav.read_bytes())


def order(round_index: int) -> tuple[str, str]:
    """ABBA: off first in even rounds, on first in odd ones."""
    return ("off", "on") if round_index % 2 == 0 else ("on", "off")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", help="a folder of samples (default: a simulated system)")
    parser.add_argument("--corpus", help="ADEPT corpus (default: a synthetic one)")
    parser.add_argument("--separation", action="store_true",
                        help="also evaluate simulated systems with 100/50/20%% transfer")
    parser.add_argument("--rounds", default=2,
                        type=arg_type("a whole number of at least 1", whole=True, least=1),
                        help="off/on pairs to run (ABBA order; each round and the median are "
                             "printed)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="adept-graded-bench-"))
    os.environ["ADEPT_EVAL_HOME"] = str(work / "home")

    from adept_eval.corpora import spec, synthetic
    from adept_eval.corpora.corpus import load_corpus
    from adept_eval.signal.prosody import FeatureStore

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

    forget_system(system, feature_dir)
    print("warm-up: one untimed full ADEPT evaluation (imports, first-run costs) ...", flush=True)
    evaluate(system, True)

    times: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    last = {}
    for r in range(args.rounds):
        for mode in order(r):
            forget_system(system, feature_dir)
            print(f"round {r + 1}: full ADEPT evaluation, graded figures {mode} ...", flush=True)
            t, c, res = evaluate(system, mode == "on")
            times[mode].append((t, c))
            last[mode] = res

    wall = {m: statistics.median(x[0] for x in v) for m, v in times.items()}
    cpu = {m: statistics.median(x[1] for x in v) for m, v in times.items()}
    acc = {m: last[m]["results"]["adept"]["acc,none"] for m in last}
    n_tasks = {m: sum(1 for t in last[m]["results"] if t in spec.TASKS) for m in last}
    n_questions = {m: sum(len(v) for t, v in last[m]["samples"].items() if t in spec.TASKS)
                   for m in last}
    records = graded_records(last["on"])
    print(f"\nfull ADEPT evaluation (lm-eval, {n_tasks['on']} tasks, {n_questions['on']} "
          f"questions, acoustic listener, {len({r.id for r in records})} system samples), "
          f"every round (order ABBA after an untimed warm-up):")
    print(f"{'round':6} {'first':>5} {'wall off':>9} {'wall on':>8} {'on/off':>7} "
          f"{'CPU off':>8} {'CPU on':>7} {'on/off':>7}")
    for r in range(args.rounds):
        (w0, c0), (w1, c1) = times["off"][r], times["on"][r]
        print(f"{r + 1:<6} {order(r)[0]:>5} {w0:8.2f}s {w1:7.2f}s {w1 / w0:7.3f} "
              f"{c0:7.2f}s {c1:6.2f}s {c1 / c0:7.3f}")
    print(f"\nmedian of {args.rounds} round(s):")
    print(f"{'graded':8} {'wall':>8} {'CPU':>8} {'accuracy':>9} {'n':>4}")
    for m in ("off", "on"):
        print(f"{m:8} {wall[m]:7.2f}s {cpu[m]:7.2f}s {acc[m]:9.3f} {n_questions[m]:4d}")
    print(f"graded figures add: wall {100 * (wall['on'] / wall['off'] - 1):+.1f}%, "
          f"CPU {100 * (cpu['on'] / cpu['off'] - 1):+.1f}%  (target < 20%)")
    print("(CPU time is the fairer figure on a shared machine: it counts only this run)")
    if acc["on"] != acc["off"]:
        raise SystemExit("accuracy changed when the graded figures were on: a defect")
    _print_summary("simulated system", records)

    if args.separation:
        for transfer in (1.0, 0.5, 0.2):
            print(f"\nbuilding a simulated system with {transfer:.0%} transfer ...", flush=True)
            sysdir = synthetic.build_system(work / f"transfer_{transfer}", transfer=transfer)
            _print_summary(f"{transfer:.0%} transfer", graded_records(evaluate(sysdir, True)[2]))
    return 0


def evaluate(system: Path, graded: bool):
    """(wall s, CPU s, lm-eval result) of one full ADEPT evaluation of ``system``."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval.harness import run_context
    from adept_eval.harness.startup import register, task_dir

    register()
    run_context.reset()
    args = {"path": str(system), "name": "bench"}
    t, c = time.perf_counter(), time.process_time()
    # one process (workers=1): a background worker's extraction would not show in this
    # process's CPU time
    meta = {"graded": str(graded).lower(), "workers": 1}
    tm = TaskManager(include_path=str(task_dir()), include_defaults=False,
                     metadata={**args, **meta})
    res = simple_evaluate(model="audio-dir", model_args=args, tasks=["adept"], task_manager=tm,
                          bootstrap_iters=0, log_samples=True, metadata=meta)
    return time.perf_counter() - t, time.process_time() - c, res


def graded_records(res) -> list:
    """Every stimulus' graded record from an lm-eval run's logged samples."""
    from adept_eval.harness.adept import graded_records as of_items

    items = []
    for task, samples in res["samples"].items():
        for s in samples:
            rec = s["acc"][0] if isinstance(s["acc"], list) else s["acc"]
            items.append(rec)
    return of_items(items)


def _print_summary(label: str, records) -> None:
    from adept_eval.scoring import graded

    summary = graded.aggregate(records, clusters=graded.adept_sentence_clusters(records))
    print(f"\n{label}: graded figures over stimuli (mean [95% bootstrap CI], n, failed)")
    for name in graded.METRIC_NAMES:
        s = summary[name]
        print(f"  {name:20} {s.mean:8.3f} [{s.ci_low:7.3f}, {s.ci_high:7.3f}]  n={s.n:3d}  "
              f"failed={s.n_failed}  undefined={s.n_undefined}")


if __name__ == "__main__":
    raise SystemExit(run_script(main))
