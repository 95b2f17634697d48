"""What adept-eval's lm-eval start-up hook costs an lm-eval user who never runs adept-eval's
tasks or models.

Times, with the hook on and switched off (``ADEPT_EVAL_NO_LM_EVAL_HOOK=1``: lm-eval as it is
without adept-eval), each in a new Python process as a user starts it:

- ``python -c "import lm_eval.evaluator"`` (the import);
- ``lm_eval --model dummy`` on two ordinary local YAML tasks with ``--log_samples``
  (``testing/lm_eval_guest.py``; lm-eval indexes its own ~14,700 tasks, as for any user);
- saving 20,000 samples of an ordinary task with lm-eval's ``EvaluationTracker`` (samples and
  results), with a secret-looking variable set (``MY_API_KEY``), which the hook scans only in
  runs of ours.

The order alternates ABBA across rounds (on-off, off-on, ...) so neither setting always runs
first. Prints every round, then the median and range of each over the rounds (n = rounds) and
the difference on - off.

    python benchmarks/lm_eval_hook_cost.py [--rounds N] [--samples N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adept_eval.errors import run_script  # noqa: E402
from adept_eval.options import arg_type  # noqa: E402
from testing.lm_eval_guest import TASKS, write_local_tasks  # noqa: E402

_SAVE = """
import sys, time
from lm_eval.loggers.evaluation_tracker import EvaluationTracker
n = int(sys.argv[2])
samples = [{"doc_id": i, "doc": {"question": f"q{i}", "choices": ["a", "b"]},
            "target": 0, "arguments": [["ctx", " a"], ["ctx", " b"]],
            "resps": [[[-1.0, False]], [[-2.0, False]]], "filtered_resps": [[-1.0, False]],
            "doc_hash": "d", "prompt_hash": "p", "target_hash": "t", "acc": 1.0}
           for i in range(n)]
tracker = EvaluationTracker(output_path=sys.argv[1])
tracker.general_config_tracker.model_source = "dummy"
tracker.general_config_tracker.model_name_sanitized = "dummy"
results = {"results": {"guest_choice": {"acc,none": 0.5}}, "configs": {"guest_choice": {}}}
start = time.perf_counter()
tracker.save_results_aggregated(results=results, samples={"guest_choice": samples})
tracker.save_results_samples("guest_choice", samples)
print(time.perf_counter() - start)
"""


def timed(argv, env, cwd) -> float:
    """Wall time of one command, in seconds (it must succeed)."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def one_round(hook: bool, work: Path, samples: int, k: int) -> dict[str, float]:
    """The three timings with the hook on or off."""
    env = {k_: v for k_, v in os.environ.items() if k_ != "ADEPT_EVAL_NO_LM_EVAL_HOOK"}
    env.update(TQDM_DISABLE="1", MY_API_KEY="not-a-real-key-0123456789")
    if not hook:
        env["ADEPT_EVAL_NO_LM_EVAL_HOOK"] = "1"
    label = f"{'on' if hook else 'off'}-{k}"
    lm_eval = str(Path(sys.executable).parent / "lm_eval")
    save = subprocess.run([sys.executable, "-c", _SAVE, str(work / f"save-{label}"),
                           str(samples)], env=env, capture_output=True, text=True, timeout=900)
    if save.returncode != 0:
        raise RuntimeError(f"saving failed: {save.stderr[-2000:]}")
    return {
        "import lm_eval.evaluator": timed([sys.executable, "-c", "import lm_eval.evaluator"],
                                          env, work),
        "dummy run": timed([lm_eval, "--model", "dummy", "--tasks", ",".join(TASKS),
                            "--include_path", str(work / "tasks"), "--output_path",
                            str(work / f"out-{label}"), "--log_samples"], env, work),
        f"save {samples} samples": float(save.stdout.strip().splitlines()[-1]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=arg_type("a whole number of rounds", whole=True,
                                                   least=1), default=4)
    parser.add_argument("--samples", type=arg_type("a whole number of samples", whole=True,
                                                    least=1), default=20000)
    args = parser.parse_args()
    times: dict[bool, list[dict]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_local_tasks(work / "tasks")
        for k in range(args.rounds):
            order = (True, False) if k % 2 == 0 else (False, True)
            for hook in order:
                times[hook].append(one_round(hook, work, args.samples, k))
            print(f"round {k + 1}: " + "; ".join(
                f"{what} on {times[True][-1][what]:.2f} s, off {times[False][-1][what]:.2f} s"
                for what in times[True][-1]), flush=True)
    print(f"\nmedians over n = {args.rounds} rounds (range), hook on vs off:")
    for what in times[True][0]:
        on = [r[what] for r in times[True]]
        off = [r[what] for r in times[False]]
        print(f"  {what:26} on {statistics.median(on):6.2f} s ({min(on):.2f}-{max(on):.2f}), "
              f"off {statistics.median(off):6.2f} s ({min(off):.2f}-{max(off):.2f}), "
              f"on - off {statistics.median(on) - statistics.median(off):+.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
