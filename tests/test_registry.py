"""The one registry shape (listeners, LLM backends, models) and the one rule for option text."""

import os
import subprocess
import sys

import pytest

from adept_eval.options import parse_model_args, yes_no
from adept_eval.errors import OptionError
from adept_eval.registry import Registry


# ----------------------------------------------------------------------------- yes/no options
@pytest.mark.parametrize("text, value", [
    ("1", True), ("true", True), ("Yes", True), (" ON ", True), (True, True), (1, True),
    ("0", False), ("false", False), ("NO", False), ("off", False), (False, False), (0, False),
])
def test_yes_no_reads_every_spelling_alike(text, value):
    assert yes_no(text, "x") is value


@pytest.mark.parametrize("text", ["flase", "", "2", "y", None, 2])
def test_unknown_yes_no_text_is_an_error_naming_the_option(text):
    with pytest.raises(OptionError, match=r"--metadata graded= must be true or false"):
        yes_no(text, "graded", "--metadata")


def test_models_and_listeners_share_the_yes_no_rule(tmp_path):
    from adept_eval.models.audio_dir import AudioDirSystem

    # a misspelt value used to switch the check off without a word
    with pytest.raises(OptionError, match="check_samples="):
        AudioDirSystem(path=str(tmp_path), check_samples="flase")
    assert AudioDirSystem(path=str(tmp_path), check_samples="off").check_samples is False
    assert AudioDirSystem(path=str(tmp_path), check_samples="on").check_samples is True


def test_model_args_have_one_parser():
    assert parse_model_args("path=/x,name=s") == {"path": "/x", "name": "s"}
    assert parse_model_args("  ") == {} and parse_model_args(None) == {}
    given = {"path": "/x"}
    assert parse_model_args(given) == given and parse_model_args(given) is not given


# ----------------------------------------------------------------------------- registry
def test_registry_loads_lazily_and_names_the_unknown():
    reg = Registry("part", {"ordered": "collections:OrderedDict"}, error=KeyError)
    reg.register("fixed", "textwrap:TextWrapper", width=4)
    assert reg.names() == ["fixed", "ordered"] and "ordered" in reg
    assert reg.target("ordered") == "collections:OrderedDict"  # not imported by listing
    made = reg.create("fixed", tabsize=2)  # the entry's option under the caller's
    assert (made.width, made.tabsize) == (4, 2)
    assert reg.create("fixed", width=8).width == 8
    assert "tabsize" in reg.options("fixed") and "width" not in reg.options("fixed")
    with pytest.raises(KeyError, match="unknown part 'nope'; available: fixed, ordered"):
        reg.get("nope")

    @reg.register("mine")
    class Mine:
        def __init__(self, colour: str = "", _private=None):
            pass

    assert reg.get("mine") is Mine and reg.options("mine") == {"colour"}
    reg.unregister("mine")
    assert "mine" not in reg


def test_listeners_backends_and_models_use_the_registry_without_importing_early():
    """Naming the built-in parts imports none of them; each loads when it is asked for."""
    code = ("import sys\n"
            "from adept_eval.scoring.listeners import LISTENERS\n"
            "from adept_eval.names import MODELS\n"
            "assert LISTENERS.names() == ['acoustic', 'audio-llm', 'human'], LISTENERS.names()\n"
            "assert 'tts-command' in MODELS\n"
            "assert not [m for m in sys.modules if m.startswith(('adept_eval.scoring.listeners.',"
            " 'adept_eval.models'))], sorted(sys.modules)\n"
            "LISTENERS.options('human')\n"
            "assert 'adept_eval.scoring.listeners.human' in sys.modules\n"
            "assert 'adept_eval.scoring.listeners.acoustic' not in sys.modules\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
    from adept_eval.llm.backends import BACKENDS, get_backend
    from adept_eval.errors import BackendSetupError

    assert BACKENDS.names() == ["gemini", "openai"]
    with pytest.raises(BackendSetupError, match="unknown LLM backend 'nope'"):
        get_backend("nope")


# ----------------------------------------------------------------------------- listener options
@pytest.mark.parametrize("metadata, expected", [
    ("workers=two", "--metadata workers=two: expected a positive number of processes"),
    ("workers=0", "--metadata workers=0: expected a positive number of processes"),
    ("temperature=hot", "--metadata temperature=hot: expected a positive number"),
    ("temperature=0", "--metadata temperature=0: expected a positive number"),
    ("cache_dir=/etc/passwd", "--metadata cache_dir=/etc/passwd: not a folder features can be "
                              "written to"),
    ("listener=audio-llm,llm_model=m,llm_base_url=http://127.0.0.1:9/v1,llm_concurrency=abc",
     "--metadata llm_concurrency=abc: not a whole number"),
    ("listener=audio-llm,llm_model=m,llm_base_url=http://127.0.0.1:9/v1,orders=0",
     "--metadata orders=0: must be at least 1"),
])
def test_lm_eval_bad_listener_option_is_one_message_before_any_question(metadata, expected,
                                                                        corpus, tmp_path):
    """Through the real `lm_eval`: one line naming the option, no traceback, nothing scored. (A
    cache folder that cannot be written used to fail every question one by one - charged to the
    system as wrong answers, exit status 0.)"""
    from faults import console_script

    done = subprocess.run(
        [console_script("lm_eval"), "--model", "adept-natural", "--tasks", "adept_emotion_female",
         "--limit", "1", "--metadata", metadata, "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env={**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root)})
    assert done.returncode == 2  # as adept-eval's own commands
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    error, = [line for line in done.stderr.splitlines() if "error: " in line]
    assert expected in error
    assert not list((tmp_path / "out").rglob("results_*.json"))


# ----------------------------------------------------------------------------- numeric options
@pytest.mark.parametrize("value, rule, expected", [
    ("8", {"whole": True}, 8), (8, {"whole": True}, 8), (" 2.5 ", {}, 2.5), ("3.0", {"whole": True}, 3),
    ("none", {"optional": True}, None), ("", {"optional": True}, None), (None, {"optional": True}, None),
])
def test_numeric_options_read_text_and_numbers_alike(value, rule, expected):
    from adept_eval.options import number

    assert number(value, "x", **rule) == expected


@pytest.mark.parametrize("value, rule, problem", [
    ("abc", {"whole": True}, "not a whole number"), ("2.5", {"whole": True}, "not a whole number"),
    ("nan", {}, "not a number"), ("inf", {}, "not a number"), (True, {}, "not a number"),
    ("0", {"positive": True}, "must be more than 0"), ("-1", {"least": 0}, "must be at least 0"),
    ("", {}, "not a number"),
])
def test_a_bad_numeric_option_is_an_error_naming_it(value, rule, problem):
    from adept_eval.options import number

    with pytest.raises(OptionError) as info:
        number(value, "concurrency", "--model_args", **rule)
    assert str(info.value) == f"--model_args concurrency={value}: {problem}"


def test_openai_speech_numeric_args_are_one_message(monkeypatch):
    from adept_eval.models.openai_speech import OpenAISpeechSystem

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    with pytest.raises(OptionError, match=r"--model_args concurrency=abc: not a whole number"):
        OpenAISpeechSystem(model="m", base_url="http://127.0.0.1:9/v1", concurrency="abc")
