"""The committed task YAMLs are exactly what the generator writes from adept_eval.corpora.spec,
and every metric of the suites' tables is aggregated by its task folder."""

import csv
import importlib.util
from pathlib import Path

from adept_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_task_yamls_are_in_sync_with_the_spec():
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "generate_task_yamls.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    expected = gen.all_files()
    present = {p for p in (ROOT / "tasks").rglob("*")
               if p.suffix == ".yaml" or p.name.endswith("_yaml")}
    assert present == set(expected)
    for path, text in expected.items():
        assert path.read_text() == text, f"{path} is stale: run scripts/generate_task_yamls.py"


def test_questions_command_writes_the_plan(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(corpus.root))
    out = tmp_path / "q.csv"
    assert main(["questions", "-q", "-o", str(out)]) == 0
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 165
    first = rows[0]
    assert first["question_id"].startswith(first["task"] + "/")
    assert first["answer"] in "ABCDE" and " | " in first["stimuli"]


def test_every_metric_of_the_tables_is_aggregated_by_its_task_folder():
    """The metric tables name each metric's aggregation; the task folders' utils must have it
    (a table entry without its function would only fail when lm-eval loads the task)."""
    from adept_eval.suites import SUITES

    for suite in SUITES.values():
        path = ROOT / "tasks" / suite.name / "utils.py"
        loader = importlib.util.spec_from_file_location(f"{suite.name}_utils", path)
        utils = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(utils)
        for metric in suite.all_metrics():
            assert callable(getattr(utils, metric.aggregation, None)), (suite.name, metric)
        for task in suite.tasks:  # every task's metrics come from the table, headline first
            names = [m.name for m in suite.task_metrics(task)]
            assert names[0] == suite.headline and len(set(names)) == len(names)
