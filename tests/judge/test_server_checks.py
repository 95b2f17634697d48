"""The judge's server is checked before any work, its verdicts are cached per server, and the
mistakes a user makes in a VStyle run are one message each, never a traceback.

Servers are the loopback OpenAI-compatible judge (testing.judge_server), spoken to by the real
client over HTTP; a dead server is a port nobody listens on."""

import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from adept_eval.judge import JudgeConfig, JudgeItem, judge
from adept_eval.errors import LLMUnavailable
from adept_eval.errors import OptionError
from testing.judge_server import JudgeServer
from conftest import shared_or_skip


@pytest.fixture(scope="module")
def examples():
    return shared_or_skip("data", "vstyle_examples", "en")


@pytest.fixture(scope="module")
def mp3s(examples):
    return sorted(str(p) for p in (examples / "wav").glob("*-Kimi.mp3"))[:4]


def _dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _items(files):
    return [JudgeItem(f, f"say it happily {i}", "instruction/emotion", item_id=str(i))
            for i, f in enumerate(files)]


def _cfg(url, cache, **kw):
    return JudgeConfig(**{"model": "m", "base_url": url, "cache_path": str(cache), "timeout": 10,
                          "max_retries": 1, **kw})


# ----------------------------------------------------------------------------- the cache key
def test_a_verdict_is_cached_per_server_and_a_dead_server_is_not_served_from_it(mp3s, tmp_path):
    cache = tmp_path / "judge.sqlite"
    with JudgeServer(default_verdict="Fine.\n\nFinal score: [[3]]") as first:
        out = judge(_items(mp3s), _cfg(first.url, cache), progress=False)
        assert [x["score"] for x in out["items"]] == [3.0] * len(mp3s)
        # the same server again: every verdict from the cache
        asked = first.requests
        again = judge(_items(mp3s), _cfg(first.url, cache), progress=False)
        assert first.requests == asked and all(x["cached"] == 1 for x in again["items"])
    # another server, same model name, same cache: it is asked, its own verdicts are the scores
    with JudgeServer(default_verdict="Great.\n\nFinal score: [[5]]") as second:
        other = judge(_items(mp3s), _cfg(second.url, cache), progress=False)
        assert second.requests == len(mp3s)
    assert [x["score"] for x in other["items"]] == [5.0] * len(mp3s)
    assert all(x["cached"] == 0 for x in other["items"])
    # a server that is down: one error naming the option and the URL, no score from the cache
    dead = _dead_url()
    with pytest.raises(LLMUnavailable, match=r"judge_base_url=" + dead.replace(".", r"\.")):
        judge(_items(mp3s), _cfg(dead, cache), progress=False)


def test_no_secret_enters_the_cache(mp3s, tmp_path, monkeypatch):
    cache = tmp_path / "judge.sqlite"
    secrets = ["sk-first-secret-0123456789", "sk-second-secret-9876543210", "pa55w0rd-in-url"]
    with JudgeServer() as srv:
        monkeypatch.setenv("MY_JUDGE_KEY", secrets[0])
        judge(_items(mp3s), _cfg(srv.url, cache, api_key_env="MY_JUDGE_KEY"), progress=False)
        assert srv.authorization == {f"Bearer {secrets[0]}"}  # the key was really sent
        # another key for the same server and model: the same verdicts (a key is no part of
        # the cache key), and credentials in the URL are not part of the server's identity
        monkeypatch.setenv("MY_JUDGE_KEY", secrets[1])
        asked = srv.requests
        out = judge(_items(mp3s), _cfg(srv.url, cache, api_key_env="MY_JUDGE_KEY"),
                    progress=False)
        assert srv.requests == asked and all(x["cached"] == 1 for x in out["items"])
        url = srv.url.replace("http://", f"http://judge:{secrets[2]}@")
        out = judge(_items(mp3s), _cfg(url, cache), progress=False)
        assert srv.requests == asked and all(x["cached"] == 1 for x in out["items"])
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(cache.name))
    assert b"127.0.0.1" in stored  # the rows record the server that answered...
    for secret in secrets:
        assert secret.encode() not in stored  # ...and never a key or a password


# ----------------------------------------------------------------------------- servers down
def test_an_item_failing_while_the_server_is_up_is_a_counted_failure(mp3s, tmp_path):
    with JudgeServer() as srv:
        srv.add_fault("500", times=2)  # the first item's request and its one retry
        out = judge(_items(mp3s[:2]), _cfg(srv.url, "", concurrency=1), progress=False)
    assert [x["status"] for x in out["items"]] == ["failed", "ok"]
    assert out["items"][0]["score"] is None and out["n_failed"] == 1


def test_openai_speech_with_its_server_down_stops_when_created():
    from adept_eval.models.openai_speech import OpenAISpeechSystem

    dead = _dead_url()
    with pytest.raises(LLMUnavailable, match=r"openai-speech: base_url=" + dead.replace(".", r"\.")
                       + r" does not answer: .*Connect call failed"):
        OpenAISpeechSystem(model="m", base_url=dead)
    with JudgeServer() as srv:  # a server that answers: created, one GET /models
        OpenAISpeechSystem(model="m", base_url=srv.url)
        assert srv.preflights == 1 and srv.requests == 0


def _lm_eval(args, tmp_path, **env):
    lm_eval = shutil.which("lm_eval")
    if lm_eval is None:
        pytest.skip("lm_eval console script not on PATH")
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home"), **env}
    env.pop("VSTYLE_DIR", None)
    env.pop("ADEPT_EVAL_DEBUG", None)
    return subprocess.run([lm_eval, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)


def _one_error(done) -> str:
    """The run failed with one ``error:`` message and no traceback; the message."""
    assert done.returncode != 0, done.stdout[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    return errors[0]


@pytest.mark.parametrize("case", ["dead_judge", "concurrency", "prompts", "prompt_name",
                                  "vstyle_dir", "offline", "dead_speech_model"])
def test_vstyle_run_mistakes_are_one_message(case, examples, tmp_path):
    dead = _dead_url()
    judge_args = f"judge_base_url={dead},judge_model=x,judge_cache={tmp_path / 'c.sqlite'}"
    model = ["--model", "audio-dir", "--model_args", f"path={examples / 'wav'},pattern={{id}}-Kimi"]
    metadata = f"vstyle_dir={examples},{judge_args}"
    env = {}
    missing = tmp_path / "no" / "such" / "folder"
    if case == "concurrency":
        metadata += ",judge_concurrency=abc"
        expect = ["--metadata judge_concurrency='abc': not a whole number"]
    elif case == "prompts":
        metadata += f",judge_prompts={missing}"
        expect = [f"judge_prompts={missing}: no such folder or file"]
    elif case == "prompt_name":  # a prompt file named after no category: never used before
        prompts = tmp_path / "eval_prompts"
        prompts.mkdir()
        for stem in ("role_playing", "roleplay"):
            (prompts / f"{stem}.txt").write_text("{instruction_type} {input_instruction}")
        metadata += f",judge_prompts={prompts}"
        expect = [f"judge_prompts={prompts}: prompt file roleplay.txt matches no VStyle category",
                  "acoustic_attributes, instruction, role_play, empathy"]
    elif case == "vstyle_dir":
        metadata = f"vstyle_dir={missing},{judge_args}"
        expect = [f"vstyle_dir={missing}: no such folder"]
    elif case == "offline":  # no network: the Hub download fails at once
        metadata = judge_args
        env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
        expect = ["VStyle dataset (zhanjun/VStyle, en) could not be fetched", "vstyle_dir=",
                  "VSTYLE_DIR"]
    elif case == "dead_speech_model":
        model = ["--model", "openai-speech", "--model_args", f"model=m,base_url={dead}"]
        expect = [f"openai-speech: base_url={dead} does not answer", "Connect call failed"]
    else:
        expect = [f"speech judge: judge_base_url={dead} does not answer", "Connect call failed"]
    done = _lm_eval([*model, "--tasks", "vstyle_en", "--metadata", metadata], tmp_path, **env)
    message = _one_error(done)
    for text in expect:
        assert text in message, message
    assert "n_failed" not in done.stdout  # no table: nothing was run


def test_vstyle_missing_answers_say_what_on_missing_wrong_does_there(examples, tmp_path):
    """A VStyle run missing answers stops with one message whose advice fits VStyle:
    on_missing=wrong makes the unanswered instructions counted failed judgements, never scores
    (it said "score the questions that need them as wrong answers", ADEPT's words); with the
    option the run completes and its warning says the same."""
    answers = tmp_path / "answers"
    answers.mkdir()
    for mp3 in sorted((examples / "wav").glob("empathy-*-Kimi.mp3"))[:2]:
        shutil.copy(mp3, answers / mp3.name)
    said = "count the VStyle instructions left unanswered as failed judgements (n_failed; " \
           "never scored)"
    with JudgeServer() as srv:
        run = ["--tasks", "vstyle_en_empathy", "--metadata",
               f"vstyle_dir={examples},judge_base_url={srv.url},judge_model=m,"
               f"judge_cache={tmp_path / 'c.sqlite'}"]
        model_args = f"path={answers},pattern={{id}}-Kimi,name=partial"
        done = _lm_eval(["--model", "audio-dir", "--model_args", model_args, *run], tmp_path)
        message = _one_error(done)
        assert f"pass on_missing=wrong in --model_args to {said}" in message, message
        assert "wrong answers" not in message
        assert srv.requests == 0  # nothing was judged
        done = _lm_eval(["--model", "audio-dir", "--model_args",
                         model_args + ",on_missing=wrong", *run], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"on_missing=wrong {said.replace('count', 'counts', 1)}" in done.stderr
    assert "wrong answers" not in done.stderr and "n_failed" in done.stdout


def test_audio_llm_listener_down_is_one_message(corpus, tmp_path):
    dead = _dead_url()
    done = _lm_eval(["--model", "adept-natural", "--tasks", "adept_emotion_male", "--metadata",
                     f'{{"listener": "audio-llm", "llm_base_url": "{dead}", "llm_model": "m", '
                     '"llm_cache": ""}'], tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    message = _one_error(done)
    assert f"audio-llm listener: llm_base_url={dead} does not answer" in message


# ----------------------------------------------------------------------------- junk audio
def test_an_mp3_holding_junk_is_named_not_decodable(tmp_path):
    junk = tmp_path / "answer-Kimi.mp3"
    junk.write_bytes(np.random.default_rng(1).bytes(5000))
    tagged = tmp_path / "tagged.mp3"  # an ID3 tag, then junk
    tagged.write_bytes(b"ID3\x03\x00\x00\x00\x00\x00\x05hello" +
                       np.random.default_rng(2).bytes(3000))
    code = ("import sys\nfrom adept_eval.errors import AudioError\nfrom adept_eval.signal.audio import read_audio\n"
            "for f in sys.argv[1:]:\n"
            "    try:\n        read_audio(f)\n    except AudioError as e:\n        print(e)\n")
    done = subprocess.run([sys.executable, "-c", code, str(junk), str(tagged)],
                          capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr
    for path, line in zip((junk, tagged), lines):
        assert line.startswith(f"{path}: not decodable audio"), line
        assert "does not exist" not in line  # libsndfile's words for a file it cannot place
    # the judge fails that item only, with the same words
    with JudgeServer() as srv:
        out = judge([JudgeItem(str(junk), "say hi", "t"), JudgeItem(str(tagged), "say hi", "t")],
                    _cfg(srv.url, ""), progress=False)
        assert srv.requests == 0
    assert [x["status"] for x in out["items"]] == ["bad_input", "bad_input"]
    assert all("not decodable audio" in x["detail"] for x in out["items"])


def test_real_mp3s_are_still_recognised(tmp_path):
    from adept_eval.signal.audio import read_audio

    t = np.arange(8000) / 8000
    for rate in (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000):
        path = tmp_path / f"tone{rate}.mp3"
        sf.write(path, (0.3 * np.sin(2 * np.pi * 220 * t)).astype("float32"), rate)
        assert read_audio(path).rate == rate


def test_judge_options_are_read_as_their_types():
    from adept_eval.errors import JudgeOptionError

    cfg = JudgeConfig(concurrency="8", rpm="30", seed="none", include_instruction_audio="yes")
    assert (cfg.concurrency, cfg.rpm, cfg.seed, cfg.include_instruction_audio) == \
        (8, 30.0, None, True)
    for field, value in [("concurrency", "abc"), ("concurrency", 0), ("timeout", "-1"),
                         ("judgements", 1.5), ("audio_format", "flac"), ("backend", "claude")]:
        with pytest.raises(JudgeOptionError, match=f"{field}="):
            JudgeConfig(**{field: value})
    # "unknown LLM backend 'claude'" named neither judge_backend nor the metric's backend=
    from adept_eval.harness.vstyle import judge_config

    with pytest.raises(OptionError, match=r"^--metadata judge_backend='claude': no such "
                                          r"backend; use gemini or openai$"):
        judge_config({"judge_backend": "claude", "judge_model": "m"})
