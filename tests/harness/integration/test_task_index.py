"""A run that asks only for adept-eval's tasks does not index lm-eval's own ~14,700 tasks;
every other run, and ``lm_eval ls tasks``, sees lm-eval's index exactly as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from adept_eval.harness.integration.task_index import only_ours, own_task_names


def test_own_names_are_read_from_the_task_folder():
    names = own_task_names()
    assert {"adept", "adept_emotion_female", "adept_female", "vstyle_en",
            "vstyle_zh_role_play"} <= names
    assert all(n.startswith(("adept", "vstyle")) for n in names), names
    assert len(names) == 12 + 6 + 2 + 1 + 8 + 2  # tasks, class groups, speaker groups, suite


@pytest.mark.parametrize("tasks, ours", [
    ("adept", True), ("adept_emotion_female,adept_male", True), (["adept", "vstyle_en"], True),
    ("adept,arc_easy", False), (["adept_emotion_female", "hellaswag"], False),
    ("adept_emotion", True), ("adept_emotion_femal", False), ("", False), (None, False),
    ("tasks/adept/adept_emotion_female.yaml", False),
])
def test_only_ours(tasks, ours):
    assert only_ours(tasks) is ours


def _built_indexes(argv: list[str], monkeypatch) -> list[int]:
    """Run lm-eval's real CLI in-process; the sizes of the task indexes it built."""
    from lm_eval.__main__ import cli_evaluate
    from lm_eval.tasks import TaskManager

    sizes: list[int] = []
    wrapped = TaskManager.__init__

    def spy(self, *args, **kwargs):
        wrapped(self, *args, **kwargs)
        sizes.append(len(self.all_tasks))

    monkeypatch.setattr(TaskManager, "__init__", spy)
    monkeypatch.setattr(sys, "argv", ["lm_eval", *argv])
    try:
        cli_evaluate()
    except SystemExit as exc:
        assert not exc.code, exc.code
    return sizes


def test_cli_run_of_our_tasks_indexes_only_ours(use_corpus, monkeypatch, tmp_path, capsys):
    sizes = _built_indexes(["run", "--model", "adept-natural", "--tasks", "adept_emotion_female",
                            "--limit", "2", "--output_path", str(tmp_path / "out")], monkeypatch)
    assert sizes == [len(own_task_names())]
    assert "adept_emotion_female" in capsys.readouterr().out
    results = next((tmp_path / "out").rglob("results_*.json"))
    assert json.loads(results.read_text())["results"]["adept_emotion_female"]["acc,none"] == 1.0


def test_a_mixed_run_indexes_everything(monkeypatch):
    """An lm-eval task beside ours: lm-eval's own index, exactly (validated, not run)."""
    from lm_eval.config.evaluate_config import EvaluatorConfig

    from adept_eval.harness.startup import register

    register()
    full = EvaluatorConfig(model="adept-natural", tasks="adept_emotion_female,arc_easy")
    tm = full.process_tasks()
    assert len(tm.all_tasks) > 10_000 and "arc_easy" in tm.all_tasks
    ours = EvaluatorConfig(model="adept-natural", tasks="adept_emotion_female")
    assert set(ours.process_tasks().all_tasks) == own_task_names()


def test_simple_evaluate_without_a_task_manager_indexes_only_ours(use_corpus, monkeypatch):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval.harness.startup import register

    register()
    sizes = []
    wrapped = TaskManager.__init__

    def spy(self, *args, **kwargs):
        wrapped(self, *args, **kwargs)
        sizes.append(len(self.all_tasks))

    monkeypatch.setattr(TaskManager, "__init__", spy)
    res = simple_evaluate(model="adept-natural", tasks=["adept_marked_tonicity_male"], limit=2,
                          bootstrap_iters=0)
    assert sizes == [len(own_task_names())]
    assert res["results"]["adept_marked_tonicity_male"]["acc,none"] == 1.0


def test_ls_tasks_still_lists_lm_evals_tasks_and_ours():
    out = subprocess.run(["lm_eval", "ls", "tasks"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "TQDM_DISABLE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "hellaswag" in out.stdout and "adept_emotion_female" in out.stdout


def test_our_markdown_table_matches_pytablewriters():
    """The printed table is written without pytablewriter's per-cell type inference; its layout
    must be exactly what pytablewriter writes for the same text cells (lm-eval's own look)."""
    from pytablewriter import MarkdownTableWriter
    from typepy import String

    from adept_eval.harness.integration.display import markdown_table

    headers = ["Tasks", "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"]
    rows = [["adept_emotion_female", "1", "none", "0", "acc", "↑", "1.0000", "", ""],
            ["", "", "", "", "acc_ci_low", "↑", "0.1581", "", ""],
            [" - vstyle_zh_情感表达", "1", "none", "0", "score", "↑", "3.5000", "±", "0.1000"],
            ["adept", "N/A", "", "", "n", "", "165", "", ""]]
    writer = MarkdownTableWriter()
    writer.headers = headers
    writer.type_hints = [String] * len(headers)
    writer.value_matrix = rows
    assert markdown_table(headers, rows) == writer.dumps()


def test_a_table_of_our_tasks_is_lm_evals_table_without_pytablewriter(use_corpus):
    """A results table of nothing but our tasks is written directly (pytablewriter's cell
    type inference cost ~0.5 s a run); it must hold what lm-eval's own ``make_table`` and
    our tidying print - the same rows and columns, every cell the same text or the same
    number (pytablewriter re-formats numbers column by column) - for the task rows and the
    group rows. A table with another task in it goes through lm-eval's ``make_table``."""
    import lm_eval.utils as lm_utils
    from conftest import run_lm_eval

    from adept_eval.harness.integration import display

    res = run_lm_eval("adept-natural", ["adept_marked_tonicity", "adept_emotion_female"],
                      limit=2, log_samples=False)
    lm_make_table = lm_utils.make_table.__wrapped__
    for column in ("results", "groups"):
        if column == "groups" and not res.get("groups"):
            continue
        direct = display.our_rows(lm_utils, res, column)
        assert direct is not None and len(direct) >= 5
        expected = _cells(display.tidy_table(lm_make_table(res, column), res, column))
        printed = lm_utils.make_table(res, column)
        assert printed == display.tidy_rows(display.table_headers(column), direct, res, column)
        got = _cells(printed)
        assert len(got) == len(expected) >= 5 and all(len(a) == len(b) == 9
                                                     for a, b in zip(got, expected)), column
        for a, b in zip(got, expected):
            for x, y in zip(a, b):
                assert x == y or float(x) == pytest.approx(float(y), abs=0), (column, a, b)
    foreign = {**res, "results": {**res["results"], "hellaswag": {"alias": "hellaswag",
                                                                  "acc,none": 0.5}}}
    assert display.our_rows(lm_utils, foreign, "results") is None
    text = lm_utils.make_table(foreign, "results")
    assert "hellaswag" in text and "adept_marked_tonicity_male" in text


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in table.strip().splitlines()[2:]]


def test_a_mistyped_task_of_ours_is_one_message_with_the_nearest_names(tmp_path):
    """`lm_eval --tasks adept_emotion_femal` ended in lm-eval's "Tasks not found" traceback
    (through the task index's wrapper); a name of lm-eval's own is still lm-eval's to report."""
    from faults import console_script

    from adept_eval.harness.integration.task_index import unknown_tasks_of_ours

    done = subprocess.run([console_script("lm_eval"), "--model", "adept-natural", "--tasks",
                           "adept_emotion_femal"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    error, = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith("error: --tasks: no adept-eval task or group 'adept_emotion_femal' "
                            "(did you mean adept_emotion_female"), error
    assert unknown_tasks_of_ours(ValueError("Tasks not found: hellaswagg")) is None
    assert unknown_tasks_of_ours(ValueError("something else")) is None
    mixed = str(unknown_tasks_of_ours(ValueError("Tasks not found: vstyle_en_empath, hellaswagg")))
    assert "'vstyle_en_empath' (did you mean vstyle_en_empathy" in mixed
    assert "nor any lm-eval task 'hellaswagg'" in mixed


def test_overlapping_groups_of_ours_are_one_message_before_anything_loads():
    """`--tasks adept,adept_female` loaded everything, then ended in lm-eval's "Duplicate
    task" traceback."""
    from faults import console_script

    from adept_eval.harness.integration.task_index import overlapping_tasks_of_ours

    done = subprocess.run([console_script("lm_eval"), "--model", "adept-natural", "--tasks",
                           "adept,adept_female"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "error: --tasks: 'adept' and 'adept_female' overlap" in done.stderr

    said = str(overlapping_tasks_of_ours("adept,adept_female"))
    assert said == ("--tasks: 'adept' and 'adept_female' overlap (adept_emotion_female is in "
                    "both), so lm-eval would run it twice; ask for one of them, or for tasks and "
                    "groups that do not share a task")
    assert "'adept_emotion' and 'adept_emotion_male' overlap" in str(
        overlapping_tasks_of_ours(["adept_emotion", "adept_emotion_male"]))
    for fine in ("adept", "adept_female,adept_male", ["adept", "hellaswag"], "adept,adept",
                 "adept_emotion_female,vstyle_en_empathy", None):
        assert overlapping_tasks_of_ours(fine) is None, fine


def test_include_path_naming_our_own_task_folder_is_not_indexed_twice(tmp_path):
    """`--include_path` at adept-eval's own task folder (or its adept/ folder) had lm-eval index
    it a second time, with one "overrides existing task" warning per YAML - each task
    overriding itself from the same file. A copy elsewhere still overrides, as documented."""
    import shutil

    from faults import console_script

    from adept_eval.harness.startup import task_dir

    copy = tmp_path / "mine"
    shutil.copytree(task_dir() / "adept", copy)
    for folder, overrides in ((task_dir(), False), (task_dir() / "adept", False), (copy, True)):
        done = subprocess.run([console_script("lm_eval"), "validate", "--tasks",
                               "adept_marked_tonicity_female", "--include_path", str(folder)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert done.returncode == 0 and "All tasks found and valid" in done.stdout, done.stderr
        assert ("overrides existing task" in done.stderr) is overrides, (folder, done.stderr)


def test_a_task_manager_keeps_lm_evals_signature_and_its_callers_choice(tmp_path):
    """``TaskManager(include_defaults=False, include_path=mine)`` held adept-eval's 31 tasks
    besides the user's (lm-eval's own test_include_defaults_false_with_custom_path), and a
    positional ``include_path`` (``TaskManager("INFO", path)``) was a TypeError. A manager
    told to index only the caller's folder holds only that; one indexing the installed tasks
    holds ours among them, however its arguments are passed."""
    from lm_eval.tasks import TaskManager

    from adept_eval.harness.startup import register
    from testing.lm_eval_guest import TASKS, write_local_tasks

    register()
    mine = str(write_local_tasks(tmp_path / "tasks"))
    for manager in (TaskManager(include_defaults=False, include_path=mine),
                    TaskManager(None, mine, False), TaskManager("INFO", mine, False)):
        assert sorted(manager.all_tasks) == sorted(TASKS)
    everything = set(TaskManager("INFO", mine).all_tasks)
    assert {*TASKS, "adept_emotion_female", "arc_easy"} <= everything
