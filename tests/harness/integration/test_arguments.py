"""lm-eval's command line is lm-eval's own for anyone else's run: ``--model_args`` with braces
and malformed JSON fail as they fail without adept-eval (a run of ours keeps its ``key=value``
braces and its unechoed JSON message: tests/docs/test_documented_commands.py)."""

from __future__ import annotations

import os

import pytest

from faults import console_script
from testing.lm_eval_guest import lm_eval_with_and_without, write_local_tasks


@pytest.mark.parametrize("value", ["foo={bar}", '{"pretrained": "x",}'])
def test_anyone_elses_bad_model_args_fail_as_without_adept_eval(value, tmp_path):
    """With the plugin, ``foo={bar}`` ran and malformed JSON was adept-eval's exit-2 message:
    both are lm-eval's ValueError (exit status 1) without it, and now with it."""
    tasks = write_local_tasks(tmp_path / "tasks")
    runs = lm_eval_with_and_without(
        [console_script("lm_eval"), "--model", "dummy", "--model_args", value, "--tasks",
         "guest_choice", "--include_path", str(tasks), "--limit", "1"],
        tmp_path, {**os.environ, "TQDM_DISABLE": "1"})
    plain, guest = runs["without"], runs["with"]
    assert plain.returncode == 1, plain.stderr[-2000:]
    last = plain.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: Invalid JSON"), last
    assert guest.returncode == plain.returncode, guest.stderr[-2000:]
    assert guest.stderr.strip().splitlines()[-1] == last
    assert "Running" not in guest.stderr  # refused while parsing, as lm-eval refuses it


def test_lm_evals_json_parser_is_its_own():
    """lm-eval's ``try_parse_json`` (lm-eval's own test_try_parse_json_with_invalid_json) is
    never replaced."""
    import lm_eval._cli.utils as utils

    from adept_eval.harness.startup import register

    register()
    assert not getattr(utils.try_parse_json, "_adept_eval", False)
    with pytest.raises(ValueError, match="Invalid JSON"):
        utils.try_parse_json("{invalid")
    assert utils.try_parse_json("a=b") == "a=b"
