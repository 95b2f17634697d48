"""Results files made by hand for the results layer's tests: one ADEPT run's results (with or
without adept-eval's identity) and a run written under a folder, as lm-eval names it.

Importable from any test as ``from run_files import _results, _run`` (pytest puts ``tests/`` on
sys.path); ``write_answers_run`` writes a run with its logged answers.
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


#: choices per task of the answers runs' tasks
ANSWER_CHOICES = {"adept_emotion_female": 5, "adept_marked_tonicity_female": 2}


def _answers_record(task, qid, correct, choices, people, failed=0):
    letters = [c for _, c in choices]
    right = [int(c == correct) for c in letters]
    return {"question_id": qid, "sub": "x", "target": "x", "correct_answer": correct,
            "chance": 1 / ANSWER_CHOICES[task], "listener": "human" if people else "acoustic",
            "correct": sum(right), "n": len(letters), "failed": failed,
            "status": "failed" if failed else "ok", "answer": letters,
            "responses": [[who, r] for (who, _), r in zip(choices, right)] if people else []}


def write_answers_run(tmp, folder, system, questions, *, people, sha="a" * 64, stamp=None,
                      samples=True):
    """A run of people's or a listener's answers as lm_eval writes it (results and samples,
    one line per question), for ``adept-eval agreement``'s tests.

    Args:
        questions: (task, question id, sentence, correct letter, [(participant, letter)])
            per question; a machine listener's one answer has the participant "" and a
            failed question the letter None.
    """
    tasks = sorted({q[0] for q in questions})
    data = _results(system, {t: 0.5 for t in tasks}, sha=sha,
                    listener="human" if people else "acoustic")
    stamp = stamp or "2026-01-01T00-00-00"
    path = tmp / folder / f"results_{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    if samples:
        for task in tasks:
            lines = []
            for t, qid, sentence, correct, choices in questions:
                if t != task:
                    continue
                failed = int(not people and choices[0][1] is None)
                doc = {"class": "x", "speaker": "female", "sentence_id": sentence}
                record = _answers_record(t, qid, correct, choices, people, failed)
                lines.append(json.dumps({"doc": doc, "acc": record}))
            (tmp / folder / f"samples_{task}_{stamp}.jsonl").write_text("\n".join(lines))
    return path
