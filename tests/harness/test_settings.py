"""Who owns each ``--model_args`` / ``--metadata`` key (``harness.settings``), no secrets in
either, and only the chosen listener's options read."""

import os
import subprocess
import sys

import pytest

from adept_eval import secrecy
from adept_eval.errors import SettingsError
from adept_eval.harness import settings

#: the keys the start-up hook records from ``--model_args audio-dir path=...,name=...``
RECORDED = frozenset({"path", "name"})


# ----------------------------------------------------------------------------- ownership
def test_cache_dir_in_metadata_reaches_the_acoustic_listener():
    # with the model's keys recorded (as the start-up hook does), cache_dir from --metadata is
    # the listener's, even though openai-speech also declares a cache_dir
    share = settings.split({"path": "/x", "name": "s", "cache_dir": "/feat", "listener": "acoustic",
                            "version": 1.0}, suite="adept", listener="acoustic",
                           model_keys=RECORDED)
    assert share.listener == {"cache_dir": "/feat"}
    assert share.model == {"path": "/x", "name": "s"}


def test_cache_dir_reaches_the_listener_without_the_hook_record():
    share = settings.split({"cache_dir": "/feat"}, suite="adept", listener="acoustic")
    assert share.listener == {"cache_dir": "/feat"}
    assert share.model == {"cache_dir": "/feat"}  # a model declares it too: both get it


def test_unknown_or_misplaced_keys_are_errors_listing_the_valid_ones():
    with pytest.raises(SettingsError, match=r"unknown option 'colour'.*listener 'acoustic': cache_dir"):
        settings.split({"colour": "red"}, suite="adept", listener="acoustic")
    with pytest.raises(SettingsError, match="option of listener audio-llm.*uses listener 'acoustic'"):
        settings.split({"llm_model": "m"}, suite="adept", listener="acoustic")
    with pytest.raises(SettingsError, match="unknown judge setting 'judge_colour'"):
        settings.split({"judge_colour": "x"}, suite="vstyle")
    with pytest.raises(SettingsError, match=r"unknown listener 'robot' \(--metadata listener="
                                            r"\.\.\.\); available: acoustic, audio-llm, human"):
        settings.split({}, suite="adept", listener="robot")
    # keys owned by the other suite's components pass through a mixed run
    assert settings.split({"judge_model": "m"}, suite="adept", listener="acoustic").others
    assert settings.split({"listener": "human", "responses": "a.csv"}, suite="vstyle").others


def test_a_refused_key_names_the_model_whose_keys_were_recorded():
    with pytest.raises(SettingsError, match=r"model 'audio-dir': its --model_args"):
        settings.split({"colour": "red"}, suite="adept", listener="acoustic",
                       model_keys=RECORDED, model="audio-dir")


def test_only_the_chosen_listener_is_read():
    """An acoustic run's options are routed without importing the audio-LLM listener (nor the
    LLM client with it); a key nobody owns is what makes the others be read."""
    code = ("import sys\n"
            "from adept_eval.harness import settings\n"
            "settings.split({'cache_dir': '/f', 'corpus': None, 'listener': 'acoustic'}, "
            "suite='adept', listener='acoustic', model_keys=frozenset({'path'}))\n"
            "print(sorted(m for m in sys.modules if m.startswith(('adept_eval.llm', "
            "'adept_eval.judge', 'adept_eval.scoring.listeners.'))))\n")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={**os.environ, "ADEPT_EVAL_NO_LM_EVAL_HOOK": "1"})
    assert loaded.stdout.strip() == "['adept_eval.scoring.listeners.acoustic']", loaded.stdout


# ----------------------------------------------------------------------------- secrets
@pytest.mark.parametrize("options", [
    {"api_key": "abc"}, {"llm_api_key": "abc"}, {"hf_token": "abc"}, {"password": "x"},
    {"judge_model": "sk-" + "a" * 30}, {"note": "hf_" + "B" * 30}, {"x": "AIza" + "c" * 35},
    {"judge_base_url": "https://bob:hunter2pw@judge.example/v1"},  # a password in a URL
])
def test_secret_options_are_refused_without_repeating_them(options):
    with pytest.raises(SettingsError, match="_env") as err:
        settings.split(options, suite="adept", listener="acoustic")
    for value in options.values():
        if len(value) > 5:
            assert value not in str(err.value)


def test_a_server_url_without_a_password_is_not_a_secret():
    for url in ("http://127.0.0.1:8000/v1", "https://judge.example/v1?x=1"):
        settings.split({"judge_base_url": url}, suite="vstyle")  # no SettingsError


def test_env_named_options_and_counts_are_not_secrets():
    assert not secrecy.secret_name("judge_api_key_env")
    assert not secrecy.secret_name("judge_max_tokens")
    assert secrecy.secret_name("llm_api_key") and secrecy.secret_name("hf_token")
    # where a secret is kept is what a user should pass instead of the secret: never refused
    assert not secrecy.secret_name("key_file") and not secrecy.secret_name("token_path")
    assert secrecy.secret_value("tts --key-file /etc/tts.key --out {output}") is None
    assert secrecy.secret_value("tts --api-key abcdefgh123 --out {output}")


def test_environment_secret_values_are_refused(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok_1234567890")
    with pytest.raises(SettingsError, match=r"\$MY_SERVICE_TOKEN"):
        secrecy.refuse_secrets({"command": "tts --auth tok_1234567890 {output}"})


def test_keys_the_tasks_set_are_refused_naming_how_to_choose_them():
    with pytest.raises(SettingsError, match="'task' is not a --metadata key .*--tasks"):
        settings.refuse_task_keys({"task": "adept_emotion_female"}, "--metadata")
    settings.refuse_task_keys({"corpus": "/c"}, "--metadata")  # not a task's key: no error


# ----------------------------------------------------------------------------- through lm-eval
def test_metadata_cache_dir_reaches_the_acoustic_listener_in_a_run(use_corpus, tmp_path):
    from conftest import run_lm_eval

    feat = tmp_path / "features"
    res = run_lm_eval("adept-natural", ["adept_marked_tonicity_female"],
                      metadata={"cache_dir": str(feat)}, limit=2)
    assert res["results"]["adept_marked_tonicity_female"]["n,none"] == 2
    assert feat.is_dir() and any(p.is_file() for p in feat.rglob("*"))
    ident = res["adept_eval"]["suites"]["adept"]
    assert ident["corpus"]["synthetic"] is True and ident["complete"] is False
    assert ident["scorer"]["listener"] == "acoustic"
    with pytest.raises(SettingsError, match="unknown option 'cache_dri'"):
        run_lm_eval("adept-natural", ["adept_marked_tonicity_female"],
                    metadata={"cache_dri": str(feat)}, limit=1)


def test_lm_eval_cli_refuses_secret_options_before_logging_them(corpus, tmp_path):
    import shutil

    exe = shutil.which("lm_eval")
    if exe is None:
        pytest.skip("lm_eval console script not on PATH")
    secret = "sk-" + "cliSecretValue" * 2
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root),
           "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    for extra in (["--model_args", f"path={tmp_path},api_key={secret}"],
                  ["--model_args", f"path={tmp_path}", "--metadata", f"llm_api_key={secret}"]):
        done = subprocess.run([exe, "--model", "audio-dir", *extra, "--tasks",
                               "adept_emotion_female", "--output_path", str(tmp_path / "out")],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "refusing secrets" in done.stderr and "_env" in done.stderr
        assert secret not in done.stdout + done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "out").exists()
