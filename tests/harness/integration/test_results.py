"""What lm-eval writes: anyone else's run is saved exactly as without adept-eval (the secret
guard, the output-path check and the fatal save act on runs of ours only); a run of ours has a
leaked secret redacted, never its results discarded."""

from __future__ import annotations

import json
import logging
import os

import pytest

from faults import console_script
from testing.lm_eval_guest import (
    TASKS, differences, lm_eval_with_and_without, log_differences, write_local_tasks)


def test_anyone_elses_run_is_written_and_logged_as_without_adept_eval(tmp_path):
    """An ordinary local task on lm-eval's dummy model, with a secret-looking variable whose
    value the results carry (``TOKENIZER_NAME`` and ``--model_args tokenizer=...``): the plugin
    exited 2 after the whole evaluation, with no table and no file. Results, samples and the
    console log now match lm-eval's without the plugin (timestamps, progress bars and the output
    folder aside): the saving messages once each, at lm-eval's own source lines, and git's
    complaint outside a checkout as lm-eval lets it through."""
    tasks = write_local_tasks(tmp_path / "tasks")
    value = "EleutherAI/pythia-160m"
    env = {**os.environ, "TOKENIZER_NAME": value, "TQDM_DISABLE": "1"}
    argv = [console_script("lm_eval"), "--model", "dummy", "--model_args",
            f"tokenizer={value}", "--tasks", ",".join(TASKS), "--include_path", str(tasks),
            "--log_samples"]
    runs = lm_eval_with_and_without(lambda label: [*argv, "--output_path", tmp_path / label],
                                    tmp_path, env)
    plain, guest = runs["without"], runs["with"]
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert guest.returncode == 0, guest.stderr[-3000:]
    assert differences(tmp_path / "without", tmp_path / "with") == []
    saved, = (tmp_path / "with").rglob("results_*.json")
    assert value in saved.read_text()  # not ours to redact
    paths = {str(tmp_path / "without"): "<out>", str(tmp_path / "with"): "<out>"}
    assert log_differences(plain.stderr, guest.stderr, paths) == []
    assert guest.stderr.count("Saving per-task samples") == 1
    assert guest.stdout == plain.stdout and "guest_choice" in guest.stdout


def test_anyone_elses_output_path_naming_a_file_is_lm_evals_to_handle(tmp_path):
    """``--output_path`` naming an existing file was refused before evaluating, for everyone:
    lm-eval evaluates, prints its table, logs that it could not save, exits 0 - with the plugin
    now as without it."""
    tasks = write_local_tasks(tmp_path / "tasks")
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    runs = lm_eval_with_and_without(
        [console_script("lm_eval"), "--model", "dummy", "--tasks", "guest_choice",
         "--include_path", str(tasks), "--output_path", str(taken), "--limit", "2"],
        tmp_path, {**os.environ, "TQDM_DISABLE": "1"})
    plain, guest = runs["without"], runs["with"]
    assert plain.returncode == 0 and "Could not save results aggregated" in plain.stderr
    assert guest.returncode == 0, guest.stderr[-2000:]
    assert log_differences(plain.stderr, guest.stderr, {}) == []
    assert guest.stdout == plain.stdout and "guest_choice" in guest.stdout
    assert taken.read_text() == "not a folder"


def test_anyone_elses_tracker_is_lm_evals_own(tmp_path, caplog):
    """``--output_path`` naming an existing file was refused before evaluating, for everyone;
    lm-eval evaluates, then logs that it could not save. That is lm-eval's to decide."""
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    from adept_eval.harness.startup import register

    register()
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    tracker = EvaluationTracker(output_path=str(taken))  # no error: lm-eval's own
    tracker.general_config_tracker.model_source = "hf"
    with caplog.at_level(logging.INFO):
        tracker.save_results_aggregated(results={"results": {"arc_easy": {}}}, samples=None)
    assert "Could not save results aggregated" in caplog.text
    assert taken.read_text() == "not a folder"


def test_a_secret_in_a_run_of_ours_is_redacted_and_the_results_kept(tmp_path, monkeypatch,
                                                                       caplog):
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    from adept_eval.harness.startup import register

    register()
    secret = "s3cr3t-value-0123"
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)
    tracker = EvaluationTracker(output_path=str(tmp_path / "out"))
    tracker.general_config_tracker.model_source = "tts-command"
    tracker.general_config_tracker.model_name_sanitized = "sys"
    tracker.general_config_tracker.model_name = f"org/{secret}"  # lm-eval adds it on saving
    results = {"results": {"adept_emotion_female": {"acc,none": 1.0}},
               "config": {"echo": f"said {secret} twice: {secret}"}, secret: [secret, 1]}
    samples = [{"doc_id": 0, "arguments": [["a question", "an answer"]], "target": "x",
                "resps": [[f"out {secret}"]], "filtered_resps": [f"out {secret}"], "acc": 1.0,
                "doc_hash": "d", "prompt_hash": "p", "target_hash": "t"}]
    with caplog.at_level(logging.INFO):
        tracker.save_results_aggregated(results=results, samples={"adept_emotion_female":
                                                                   samples})
        tracker.save_results_samples("adept_emotion_female", samples)
    written = {p.name.split("_")[0]: p.read_text() for p in (tmp_path / "out" / "sys").iterdir()}
    assert sorted(written) == ["results", "samples"]
    assert all(secret not in text for text in written.values())
    assert "out <redacted $MY_SERVICE_TOKEN>" in written["samples"]
    saved = json.loads(written["results"])
    shown = "<redacted $MY_SERVICE_TOKEN>"
    assert saved["config"]["echo"] == f"said {shown} twice: {shown}"
    assert saved[shown] == [shown, 1] and saved["results"]["adept_emotion_female"]
    assert saved["model_name"] == f"org/{shown}"
    assert "$MY_SERVICE_TOKEN" in caplog.text and secret not in caplog.text
    # lm-eval's own records keep lm-eval's source lines, though the save of ours is wrapped
    lm_eval_records = [r for r in caplog.records if r.name.startswith("lm_eval")]
    assert lm_eval_records and all(f"{os.sep}lm_eval{os.sep}" in r.pathname
                                   for r in lm_eval_records), lm_eval_records


@pytest.mark.parametrize("table", [
    {"results": {"arc_easy": {"alias": "arc_easy", "acc,none": 0.5, "acc_stderr,none": 0.1}},
     "versions": {"arc_easy": 1.0}, "n-shot": {"arc_easy": 0},
     "higher_is_better": {"arc_easy": {"acc": True}}},
])
def test_anyone_elses_table_is_lm_evals_own(table):
    import lm_eval.utils as utils

    from adept_eval.harness.startup import register

    register()
    assert utils.make_table(table) == utils.make_table.__wrapped__(table)
