"""Results files made by hand for the results layer's tests: one ADEPT run's results (with or
without adept-eval's identity) and a run written under a folder, as lm-eval names it.

Importable from any test as ``from run_files import _results, _run`` (pytest puts ``tests/`` on
sys.path).
"""

import json
import time

from adept_eval.corpora import spec
from adept_eval.results.runs import Run


def _results(system, accs, *, sha="a" * 64, listener="acoustic", synthetic=False, date=None,
             complete=None, identity=True):
    res = {}
    for task, acc in accs.items():
        n = spec.TASKS[task].n_questions
        res[task] = {"acc,none": acc, "n,none": n, "failed,none": 0,
                     "chance,none": spec.TASKS[task].chance}
    out = {"results": res, "configs": {t: {} for t in accs}, "date": date or time.time(),
           "model_name": system}
    if identity:
        out["adept_eval"] = {"version": "t", "system": system, "suites": {"adept": {
            "tasks": sorted(accs), "complete": len(accs) == 12 if complete is None else complete,
            "scorer": {"listener": listener, "listener_version": "features-v1"},
            "corpus": {"name": "ADEPT", "sha256": sha, "synthetic": synthetic}}}}
    return out


def _run(tmp, system, stamp, data):
    path = tmp / system / f"results_{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return Run(path, data)
