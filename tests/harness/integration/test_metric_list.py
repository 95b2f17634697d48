"""``integration.metric_list``: a user's edited copy of one of our task YAMLs may leave metrics
out, and one no run could report from is refused when the task is built, naming the file."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _edited_copy(folder: Path, task: str, edit) -> Path:
    """The task folder copied to ``folder`` (a task YAML includes the folder's template and
    uses its utils.py) with ``edit`` applied to one task's text."""
    import shutil

    shutil.copytree(ROOT / "tasks" / "adept", folder)
    path = folder / f"{task}.yaml"
    path.write_text(edit(path.read_text()))
    return path


def _drop(metric: str):
    import re

    return lambda text: re.sub(rf"  - metric: {metric}\n(    .*\n)+?(?=  - |#)", "", text)


def _lm_eval(corpus, cwd: Path, include: Path):
    import os
    import subprocess

    from faults import console_script

    return subprocess.run(
        [console_script("lm_eval"), "--model", "adept-natural", "--tasks",
         "adept_marked_tonicity_female", "--include_path", str(include), "--output_path",
         str(cwd / "out"), "--log_samples"],
        capture_output=True, text=True, cwd=cwd, timeout=600,
        env={**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "TQDM_DISABLE": "1",
             "ADEPT_EVAL_HOME": str(cwd / "home")})


def test_an_edited_copy_of_a_task_may_leave_metrics_out(corpus, tmp_path):
    """Through the real `lm_eval --include_path`: a copy of a task YAML without two of its
    metrics reports the others and not those two. The harness gave every metric of the table,
    and lm-eval averaged the two it had no aggregation for: ``TypeError: ... 'SameRecord'``
    once every question was scored."""
    import json

    edited = _edited_copy(tmp_path / "mine", "adept_marked_tonicity_female",
                          lambda t: _drop("graded_undefined")(_drop("order_agreement")(t)))
    assert "order_agreement" not in edited.read_text()
    done = _lm_eval(corpus, tmp_path, edited.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    r = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]
    r = r["adept_marked_tonicity_female"]
    assert r["acc,none"] == 1.0 and r["n,none"] == 10 and r["graded_n,none"] == 10
    assert "order_agreement,none" not in r and "graded_undefined,none" not in r
    sample = json.loads(next((tmp_path / "out").rglob("samples_*.jsonl")).read_text()
                        .splitlines()[0])
    record = sample["acc"][0] if isinstance(sample["acc"], list) else sample["acc"]
    assert record["question_id"] and "order_agreement" not in sample


@pytest.mark.parametrize("edit, problem", [
    (_drop("acc"), "metric_list leaves out 'acc'; keep it: it carries each question's record"),
    (lambda t: t.replace("metric: failed\n", "metric: fialed\n"),
     "metric_list names fialed, which adept-eval's adept_marked_tonicity_female does not give; "
     "it gives acc, acc_ci_low,"),
])
def test_a_metric_list_no_run_could_report_is_one_message_naming_the_yaml(edit, problem,
                                                                         corpus, tmp_path):
    """Refused when the task is built, before any sample is made: one line naming the file,
    exit status 2, no traceback (the headline carries the record everything else reads; a name
    the harness does not give would vanish from the table unnoticed)."""
    edited = _edited_copy(tmp_path / "mine", "adept_marked_tonicity_female", edit)
    done = _lm_eval(corpus, tmp_path, edited.parent)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    error, = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith(f"error: {edited}: {problem}"), error
    assert not list((tmp_path / "out").rglob("results_*.json"))


def test_vstyle_task_copies_are_fitted_alike_and_other_tasks_left_alone():
    """The same rule for VStyle's harness (its tasks need VStyle's files to build, so the fit is
    tried on the configuration alone); a task whose process_results is not ours is untouched."""
    import json
    from types import SimpleNamespace

    from adept_eval.harness import vstyle as vstyle_harness
    from adept_eval.errors import MetricListError
    from adept_eval.harness.integration.metric_list import fit

    names = [m for m in vstyle_harness.metric_names("vstyle_en_empathy") if m != "score_mean"]
    config = SimpleNamespace(task="my_empathy", process_results=vstyle_harness.process_results,
                             dataset_kwargs={"language": "en", "category": "empathy"},
                             metric_list=[{"metric": m} for m in names])
    fit(SimpleNamespace(config=config), "mine/vstyle_en_empathy.yaml")
    doc = {"record_id": "r1", "subcategory": "anger", "weight": 1.0, "language": "en",
           "category": "empathy"}
    given = config.process_results(doc, [json.dumps({"status": "ok", "score": 4})])
    assert list(given) == names and given["score"]["score"] == 4.0
    config.metric_list = [{"metric": m} for m in names[1:]]
    config.process_results = vstyle_harness.process_results
    with pytest.raises(MetricListError, match="^mine/vstyle_en_empathy.yaml: metric_list leaves "
                                              "out 'score'"):
        fit(SimpleNamespace(config=config), "mine/vstyle_en_empathy.yaml")
    other = SimpleNamespace(task="x", process_results=len, dataset_kwargs={}, metric_list=[])
    fit(SimpleNamespace(config=other))
    assert other.process_results is len
