"""Every error a user can cause: one message naming the file or option, non-zero exit, and a
traceback only when asked for (``--debug``; ``ADEPT_EVAL_DEBUG=1`` under lm_eval)."""

import os
import subprocess

import pytest

from adept_eval import cli
from adept_eval.cli import main
from faults import console_script


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

    monkeypatch.setattr(cli, "cmd_make_synthetic", broken)
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
