"""Every error a user can cause: one message naming the file or option, non-zero exit, and a
traceback only when asked for (``--debug``; ``ADEPT_EVAL_DEBUG=1`` under lm_eval)."""

import os
import subprocess

import pytest

from adept_eval.cli import make_synthetic
from adept_eval.cli import main
from faults import console_script, ctrl_c_as_at_a_terminal


def _run(args, tmp_path, **env):
    full = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home"), "TQDM_DISABLE": "1", **env}
    full.pop("ADEPT_EVAL_CORPUS", None) if "ADEPT_EVAL_CORPUS" not in env else None
    return subprocess.run(args, capture_output=True, text=True, env=full, cwd=tmp_path,
                          timeout=600)


@pytest.mark.parametrize("args, expected", [
    (["prepare", "--corpus", "{tmp}/nope.zip"], "{tmp}/nope.zip: no such file or folder"),
    (["check", "{tmp}/absent"], "{tmp}/absent: no such folder"),
    (["manifest", "--corpus", "{corpus}", "-o", "{tmp}/file.txt/m"], "{tmp}/file.txt"),
    (["questions", "--corpus", "{corpus}", "-o", "{tmp}/file.txt/q.csv"], "{tmp}/file.txt"),
    (["prepare", "--corpus", "{tmp}/file.txt"], "{tmp}/file.txt: not a readable zip"),
])
def test_user_errors_are_one_message_without_traceback(args, expected, corpus, tmp_path, capsys):
    (tmp_path / "file.txt").write_text("not a folder, not a zip")
    fill = {"tmp": str(tmp_path), "corpus": str(corpus.root)}
    args = [a.format(**fill) for a in args]
    assert main([*args, "-q"] if args[0] != "check" else args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") or "no such folder" in err, err
    assert expected.format(**fill) in err and "Traceback" not in err


def test_real_process_exit_status_and_debug_switch(tmp_path):
    exe = console_script("adept-eval")
    done = _run([exe, "prepare", "-q", "--corpus", str(tmp_path / "nope")], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {tmp_path / 'nope'}: no such file or folder"
    for argv in ([exe, "--debug", "prepare", "--corpus", str(tmp_path / "nope")],
                 [exe, "prepare", "--corpus", str(tmp_path / "nope"), "--debug"]):
        done = _run(argv, tmp_path)
        assert done.returncode != 0 and "Traceback" in done.stderr and "CorpusError" in done.stderr


def test_a_bug_is_still_one_message(monkeypatch, capsys):
    def broken(args):
        raise KeyError("surprise")

    monkeypatch.setattr(make_synthetic, "run", broken)
    assert main(["make-synthetic", "x"]) == 3
    err = capsys.readouterr().err
    assert "unexpected KeyError" in err and "--debug" in err and "Traceback" not in err


def test_messages_are_printed_literally(tmp_path, capsys):
    weird = tmp_path / "[bold]x[/bold]"
    assert main(["prepare", "-q", "--corpus", str(weird)]) == 2
    assert f"{weird}: no such file or folder" in capsys.readouterr().err


def test_lm_eval_shows_our_errors_as_one_message(tmp_path):
    cmd = [console_script("lm_eval"), "--model", "adept-natural", "--tasks",
           "adept_emotion_female"]
    missing = tmp_path / "no-corpus-here"
    done = _run(cmd, tmp_path, ADEPT_EVAL_CORPUS=str(missing))
    assert done.returncode != 0
    assert f"error: {missing}: no such file or folder" in done.stderr
    assert "Traceback" not in done.stderr
    done = _run(cmd, tmp_path, ADEPT_EVAL_CORPUS=str(missing),
                ADEPT_EVAL_DEBUG="1")
    assert "Traceback" in done.stderr


@pytest.mark.parametrize("metadata, expected", [
    ("listener=nope", "unknown listener 'nope' (--metadata listener=...); available: acoustic"),
    ("listener=acoustic,bogus=1", "unknown option 'bogus'. Valid --metadata keys"),
])
def test_lm_eval_bad_metadata_is_one_message(metadata, expected, corpus, tmp_path):
    """settings.SettingsError (a UserError) reaches lm_eval's console as one line."""
    done = _run([console_script("lm_eval"), "--model", "adept-natural", "--tasks",
                 "adept_emotion_female", "--limit", "1", "--metadata", metadata], tmp_path,
                ADEPT_EVAL_CORPUS=str(corpus.root))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "ValueError" not in done.stderr
    error, = [line for line in done.stderr.splitlines() if "error: " in line]
    assert expected in error


def _one_error_line(done) -> str:
    assert "Traceback" not in done.stderr and "This is a bug" not in done.stderr, done.stderr
    lines = [x for x in done.stderr.splitlines() if "error" in x]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_ceiling_names_an_unknown_task_and_the_valid_ones(corpus, tmp_path):
    """A typo in --tasks is a user error (exit 2), not "unexpected KeyError ... a bug"."""
    done = _run([console_script("adept-eval"), "ceiling", "-q", "--tasks", "adept_emotoin"],
                tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done)
    assert line.startswith("error: --tasks: unknown ADEPT task or group 'adept_emotoin'"), line
    assert "did you mean adept_emotion" in line
    assert "valid: adept, adept_emotion," in line and "adept_topical_emphasis_male" in line


@pytest.mark.parametrize("value", ["-3", "0", "x"])
def test_ceiling_limit_must_be_a_positive_count(value, tmp_path):
    done = _run([console_script("adept-eval"), "ceiling", "-q", "--limit", value], tmp_path)
    assert done.returncode == 2
    assert "argument --limit: expected a whole number of at least 1" in done.stderr, done.stderr
    assert "islice" not in done.stderr


def test_ceiling_and_prepare_mark_the_synthetic_corpus(corpus, tmp_path):
    """As report and leaderboard do: figures on the stand-in are not ADEPT's."""
    exe = console_script("adept-eval")
    for args in (["prepare", "-q"], ["ceiling", "-q", "--tasks", "adept_emotion_female",
                                     "--limit", "1"]):
        done = _run([exe, *args], tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root), COLUMNS="250")
        assert done.returncode == 0, done.stderr
        assert "SYNTHETIC stand-in corpus: not ADEPT results" in done.stdout, done.stdout


def test_ceiling_quiet_draws_no_progress_bar(corpus, tmp_path):
    """`ceiling -q` ("no progress bars") drew lm-eval's bar and adept-eval's ("decoding ADEPT",
    "features", "acoustic: listening"): -q reached none of them. The real executable, in an
    environment without TQDM_* (which would hide the bars and the fault) and a fresh cache, so
    the corpus is decoded and features extracted; the same command without -q draws them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    exe = console_script("adept-eval")

    def ceiling(*extra, home):
        return subprocess.run([exe, "ceiling", *extra, "--tasks", "adept_marked_tonicity_female"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=600,
                              env={**env, "ADEPT_EVAL_HOME": str(tmp_path / home),
                                   "ADEPT_EVAL_CORPUS": str(corpus.root), "COLUMNS": "200"})

    def bars(text):
        return [x for x in text.replace("\r", "\n").splitlines() if "%|" in x]

    quiet = ceiling("-q", home="home_q")
    assert quiet.returncode == 0, quiet.stderr
    assert "marked_tonicity_female" in quiet.stdout
    assert bars(quiet.stderr) == [] and bars(quiet.stdout) == [], quiet.stderr
    loud = ceiling("--limit", "3", home="home_loud")
    assert loud.returncode == 0, loud.stderr
    drawn = " ".join(bars(loud.stderr))
    assert "decoding ADEPT" in drawn and "acoustic: listening" in drawn, loud.stderr


@pytest.mark.parametrize("content", ["stimulus_id,speaker\nemotion/fear/ad00_0000,female\n",
                                     '["not", "results"]', "\x00\x81binary"])
def test_report_of_a_file_that_is_not_results_json(content, tmp_path):
    path = tmp_path / "manifest.csv"
    path.write_text(content, encoding="latin-1")
    done = _run([console_script("adept-eval"), "report", str(path)], tmp_path)
    assert done.returncode == 2
    assert _one_error_line(done).startswith(f"error: {path}: not an lm-eval results JSON")


def _results_file(folder, system: str):
    """A minimal lm-eval results file: one ADEPT task, no recorded identity."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(
        {"results": {"adept_emotion_female": {"acc,none": 0.5, "n,none": 20}},
         "configs": {}, "model_name": system}))


def test_bracketed_text_is_printed_literally_not_eaten_as_markup(tmp_path):
    """Rich takes "[plot]" or "[bold]" for markup: the missing-matplotlib hint lost its extra's
    name, a system called "[bold]tts" its brackets. Run as the real executable, with
    matplotlib made unimportable for that process only."""
    import sys

    _results_file(tmp_path / "out" / "tts", "[bold]tts[/bold] [plot]")
    done = _run([sys.executable, "-c",
                 "import runpy, sys; sys.modules['matplotlib'] = None; "
                 f"sys.argv = ['adept-eval', 'leaderboard', 'out', '-o', 'l[plot]b']; "
                 f"runpy.run_path({console_script('adept-eval')!r}, run_name='__main__')"],
                tmp_path, COLUMNS="250")
    assert done.returncode == 0, done.stderr
    assert "no chart: pip install 'adept-eval[plot]' for matplotlib" in done.stdout, done.stdout
    assert "[bold]tts[/bold] [plot]" in done.stdout and "l[plot]b/leaderboard.md" in done.stdout


# ----------------------------------------------------------------------------- secrets in values
@pytest.mark.parametrize("option, value, names", [
    ("--model_args", "command=bin/mytts.py --api-key mysupersecretvalue99 --text {text} --ref "
     "{reference} --out {output},name=t3", "--api-key"),
    ("--metadata", "judge_base_url=http://127.0.0.1:9/v1?token=mysecretvalue123", "token="),
])
def test_lm_eval_refuses_a_secret_inside_an_option_value(option, value, names, corpus, tmp_path):
    """A key inside a value (a tts-command template's ``--api-key X``, a URL's ``?token=X``) is
    refused before lm-eval logs the options or writes results, as ``sk-...`` values are: the
    samples redact it, but results_*.json's config, the console log and a Hub upload would not."""
    program = tmp_path / "bin" / "mytts.py"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\ncp \"$4\" \"$6\"\n")
    program.chmod(0o755)
    model = "tts-command" if option == "--model_args" else "adept-natural"
    argv = [console_script("lm_eval"), "--model", model, "--tasks",
            "adept_marked_tonicity_female", "--limit", "1", "--output_path", "out",
            "--log_samples", option, value]
    done = _run(argv, tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    assert done.returncode != 0
    line = _one_error_line(done)
    assert f"refusing secrets in {option}" in line and names in line, line
    assert "environment" in line
    secret = value.split("?token=")[-1] if "token=" in value else "mysupersecretvalue99"
    assert secret not in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tasks, metadata, key, says", [
    ("vstyle_en_empathy", "language=en", "language", "--tasks vstyle_en or vstyle_zh"),
    ("vstyle_en_empathy", "category=empathy", "category", "--tasks vstyle_en_<category>"),
    ("adept_emotion_female", "task=x", "task", "choose tasks with --tasks"),
])
def test_lm_eval_refuses_a_key_the_task_sets_itself(tasks, metadata, key, says, corpus, tmp_path):
    """lm-eval calls the task loader with --metadata and the task YAML's dataset_kwargs side by
    side: the same key in both was a TypeError traceback ("got multiple values for keyword
    argument"). It is one message naming the option and how to choose what it would set."""
    done = _run([console_script("lm_eval"), "--model", "adept-natural", "--tasks", tasks,
                 "--limit", "1", "--metadata", metadata], tmp_path,
                ADEPT_EVAL_CORPUS=str(corpus.root), VSTYLE_DIR=str(tmp_path / "absent"))
    assert done.returncode != 0
    line = _one_error_line(done)
    assert f"{key!r} is not a --metadata key" in line and says in line, line


@pytest.mark.parametrize("flag, says", [
    (["--use_cache", "{tmp}/cache/db"], "keys each answer by its prompt alone"),
    (["--cache_requests", "true"], "keys a task's questions by the task name alone"),
    (["--cache_requests", "refresh"], "keys a task's questions by the task name alone"),
    (["--apply_chat_template"], "no chat prompt"),
    (["--check_integrity"], "lm_eval validate"),
    (["--system_instruction", "Speak clearly"], "read no text prompt"),
    (["--gen_kwargs", "temperature=0.5,do_sample=True"], "generate no text"),
])
def test_lm_eval_refuses_options_that_would_replay_or_crash(flag, says, corpus, systems,
                                                             tmp_path):
    """--use_cache replayed an earlier run's sample records (keyed by prompt, not by system or
    files): a second system, every sample present, was scored with the first one's missing
    sample (acc 0.9, failed 1). --cache_requests replayed questions built with other --metadata
    (graded=false still printed graded figures). --apply_chat_template and --check_integrity
    ended in lm-eval tracebacks. --system_instruction and --gen_kwargs were ignored, yet written
    into the results as the run's settings. Each is one message naming the flag, before
    anything runs."""
    flag = [f.format(tmp=tmp_path) for f in flag]
    done = _run([console_script("lm_eval"), "--model", "audio-dir", "--model_args",
                 f"path={systems['copy']}", "--tasks", "adept_marked_tonicity_female",
                 *flag], tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    assert done.returncode == 2, done.stderr[-2000:]
    line = _one_error_line(done)
    assert line.startswith(f"error: {flag[0]}: not for adept-eval") and says in line, line
    assert "Running" not in done.stderr and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("flag, says", [
    (["--log_samples"], "--log_samples needs --output_path"),
    (["--predict_only"], "--predict_only needs --output_path"),
    (["--wandb_args", "project=x"], "--wandb_args: wandb is not installed"),
    (["--output_path", "out", "--hf_hub_log_args", "hub_results_org=o,push_results_to_hub=True"],
     "--hf_hub_log_args push_results_to_hub=True: lm-eval pushes with the token in the "
     "HF_TOKEN environment variable, which is not set"),
])
def test_lm_eval_flag_mistakes_are_one_message(flag, says, corpus, tmp_path):
    """lm-eval's own checks of these flags ended in tracebacks (a ValueError twice, and an
    UnboundLocalError from its W&B logger when wandb is missing): for a run of our tasks, one
    message naming the flag, exit status 2."""
    import importlib.util

    if flag[0] == "--wandb_args" and importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    done = _run([console_script("lm_eval"), "--model", "adept-natural", "--tasks",
                 "adept_marked_tonicity_female", *flag], tmp_path,
                ADEPT_EVAL_CORPUS=str(corpus.root), HF_TOKEN="")
    assert done.returncode == 2, done.stderr[-2000:]
    line = _one_error_line(done)
    assert line == f"error: {says}" or line.startswith(f"error: {says}"), line
    assert not (tmp_path / "out").exists()
    assert "TypeError" not in done.stderr and "multiple values" not in done.stderr


def _tts_program(tmp_path):
    program = tmp_path / "bin" / "mytts.py"
    program.parent.mkdir(exist_ok=True)
    program.write_text("#!/bin/sh\ncp \"$2\" \"$4\"\n")
    program.chmod(0o755)
    return program


@pytest.mark.parametrize("case", ["ADEPT_EVAL_HOME", "HF_HOME", "cache_dir", "path"])
def test_lm_eval_unusable_cache_or_option_type_is_one_message(case, corpus, systems, tmp_path):
    """A cache variable or cache_dir= naming a regular file, and a JSON --model_args value of
    the wrong type, were tracebacks (NotADirectoryError from the first folder made under it; a
    TypeError from Path(list)). Each is one message naming the variable or option."""
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    env = {"ADEPT_EVAL_CORPUS": str(corpus.root)}
    model, args = "adept-natural", []
    if case == "ADEPT_EVAL_HOME":
        env["ADEPT_EVAL_HOME"], says = str(afile), f"ADEPT_EVAL_HOME={afile}: not a folder"
    elif case == "HF_HOME":
        env["HF_HOME"], says = str(afile), f"HF_HOME={afile}: not a folder"
        env["ADEPT_EVAL_HOME"] = ""  # which _run sets, and which would hide HF_HOME
    elif case == "cache_dir":
        program = _tts_program(tmp_path)
        model, says = "tts-command", "cache_dir=afile: cannot hold the samples"
        args = ["--model_args",
                f"command={program} --ref {{reference}} --out {{output}},cache_dir=afile"]
    else:
        model = "audio-dir"
        says = "audio-dir --model_args path: expected text (a string), got a list"
        args = ["--model_args", '{"path": ["%s"]}' % systems["copy"]]
    done = _run([console_script("lm_eval"), "--model", model, "--tasks",
                 "adept_marked_tonicity_female", "--limit", "1", *args], tmp_path, **env)
    assert done.returncode != 0
    line = _one_error_line(done)
    assert says in line, line


def test_lm_eval_output_path_that_cannot_hold_results_is_fatal(corpus, tmp_path):
    """lm-eval caught its own save failure, logged "Could not save results aggregated" and exited
    0 after the whole evaluation. --output_path a regular file is now refused before scoring,
    one message naming it."""
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    done = _run([console_script("lm_eval"), "--model", "adept-natural", "--tasks",
                 "adept_emotion_female", "--limit", "1", "--output_path", str(taken),
                 "--log_samples"], tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    assert done.returncode != 0, done.stderr[-2000:]
    error, = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert f"--output_path {taken}: {taken} is a file, not a folder" in error
    assert "Traceback" not in done.stderr
    assert "Running" not in done.stderr  # refused before any scoring


def test_a_save_that_fails_after_scoring_is_fatal_and_leaves_no_half_file(tmp_path):
    """A save failing after the checks (a full disk; the folder replaced meanwhile): lm-eval's
    own tracker raises, naming the file, instead of logging a warning and returning."""
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    from adept_eval.errors import ResultsNotSaved
    from adept_eval.harness.startup import register

    register()
    out = tmp_path / "out"
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.model_source = "adept-natural"  # a run of ours
    tracker.general_config_tracker.model_name_sanitized = "sys"
    out.mkdir()
    (out / "sys").write_text("in the way")
    with pytest.raises(ResultsNotSaved, match=f"could not save the results to {out / 'sys'}/"):
        tracker.save_results_aggregated(results={"results": {}}, samples=None)
    (out / "sys").unlink()
    real_write = type(out).write_text

    def half(self, text, *a, **k):  # the disk fills half-way through the file
        real_write(self, text[:len(text) // 2], *a, **k)
        raise OSError(28, "No space left on device")

    import unittest.mock as mock

    with mock.patch.object(type(out), "write_text", half), \
            pytest.raises(ResultsNotSaved, match="No space left on device"):
        tracker.save_results_aggregated(results={"results": {"x": 1}}, samples=None)
    assert not list((out / "sys").glob("results_*.json"))


def test_ctrl_c_during_lm_eval_is_one_word_not_a_traceback(corpus, tmp_path):
    """Ctrl-C in the middle of an `lm_eval` run with adept tasks printed a 40-line traceback
    through lm-eval and the tasks, where `adept-eval` says "interrupted"."""
    import signal
    import sys
    import time

    started = tmp_path / "started"
    script = tmp_path / "slow_tts.py"
    script.write_text("import pathlib, sys, time\n"
                      f"pathlib.Path({str(started)!r}).touch()\n"
                      "time.sleep(600)\n")
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home"), "TQDM_DISABLE": "1",
           "ADEPT_EVAL_CORPUS": str(corpus.root)}
    env.pop("ADEPT_EVAL_DEBUG", None)
    proc = subprocess.Popen(
        [console_script("lm_eval"), "--model", "tts-command", "--model_args",
         f"command={sys.executable} {script} {{output}},name=slow,cache_dir={tmp_path / 'c'}",
         "--tasks", "adept_emotion_female", "--limit", "1"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=ctrl_c_as_at_a_terminal)
    try:
        deadline = time.monotonic() + 300
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started.exists(), proc.communicate(timeout=60)
        proc.send_signal(signal.SIGINT)
        # the synthesis it interrupts would take 10 minutes: the run must not wait for it
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert err.rstrip().endswith("interrupted"), err[-2000:]


def test_make_synthetic_writes_over_nothing_but_an_earlier_synthetic_corpus(synthetic_root,
                                                                           tmp_path, capsys):
    """`make-synthetic ADEPT.zip` beside the downloaded real ADEPT.zip replaced it without a
    word, and on the real extracted corpus it overwrote its recordings with synthetic ones (a
    corpus that is neither). Anything already there that is not a synthetic corpus is one
    message naming the path, and left as it was; an earlier synthetic corpus is written again
    (the documented command run twice)."""
    import shutil

    real_zip = tmp_path / "ADEPT.zip"
    real_zip.write_bytes(b"PK\x03\x04 the real corpus")
    real_dir = tmp_path / "real"
    shutil.copytree(synthetic_root, real_dir)
    one = real_dir / "txt" / "emotion" / "anger"
    first = sorted(one.glob("*.txt"))[0]
    first.write_text("Words a real speaker read.\n")  # not the synthetic corpus' sentence
    before = sorted(p.stat().st_mtime_ns for p in real_dir.rglob("*.wav"))
    for target in (real_zip, real_dir):
        assert main(["make-synthetic", str(target)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"error: {target}: already there and not a synthetic corpus (the real "
                       "ADEPT, or other files): make-synthetic writes only to a new path, an "
                       "empty folder or an earlier synthetic corpus; name another"), err
    assert real_zip.read_bytes() == b"PK\x03\x04 the real corpus"
    assert sorted(p.stat().st_mtime_ns for p in real_dir.rglob("*.wav")) == before
    again = tmp_path / "again"
    shutil.copytree(synthetic_root, again)  # an earlier synthetic corpus: written again
    assert main(["make-synthetic", str(again)]) == 0
    (tmp_path / "empty").mkdir()
    assert main(["make-synthetic", str(tmp_path / "empty")]) == 0


def test_the_top_level_help_says_what_the_command_does(capsys):
    """`adept-eval --help` printed its module docstring, reST quotes and all ("``adept-eval``:
    prepare the corpus, list what to synthesise, check a system's samples"), naming none of
    report, compare, publish or leaderboard."""
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "``" not in out
    for word in ("report", "compare", "publish", "leaderboard", "listening tests"):
        assert word in out.split("positional arguments")[0], word
