"""The audio-LLM listener on the shared client: it fails fast when the server is not there or
refuses us, keeps the real reason in each failure, and asks many questions at once."""

import os
import shutil
import socket
import subprocess

import pytest

from adept_eval.cli import main
from adept_eval.corpora.questions import build_questions
from testing.judge_server import JudgeServer


def _dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _listener(corpus, url, **kw):
    from adept_eval.scoring.listeners import get_listener

    return get_listener("audio-llm", corpus=corpus, llm_base_url=url, llm_model="m",
                        llm_cache="", **kw)


def _asked(corpus, task="adept_emotion_male", n=None):
    qs = build_questions(corpus, task)[:n]
    return [(q, {s: corpus.get(s).audio_path for s in q.stimuli}) for q in qs]


def test_ceiling_without_a_server_stops_at_once_naming_the_url(use_corpus, capsys):
    url = _dead_url()
    code = main(["ceiling", "--listener", "audio-llm", "--tasks", "adept_emotion_male",
                 "--option", f"llm_base_url={url}", "llm_model=m", "llm_cache="])
    err = capsys.readouterr().err
    assert code != 0
    assert url in " ".join(err.split()) and "Connect call failed" in " ".join(err.split())


def test_lm_eval_without_a_server_exits_non_zero(corpus, tmp_path):
    lm_eval = shutil.which("lm_eval")
    if lm_eval is None:
        pytest.skip("lm_eval console script not on PATH")
    url = _dead_url()
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root),
           "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    done = subprocess.run([lm_eval, "--model", "adept-natural", "--tasks", "adept_emotion_male",
                           "--metadata", f'{{"listener": "audio-llm", "llm_base_url": "{url}", '
                           '"llm_model": "m", "llm_cache": ""}'],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode != 0
    assert url in done.stderr and "Connect call failed" in done.stderr


def test_a_refused_key_stops_at_once_and_a_named_key_works(corpus, monkeypatch):
    from adept_eval.scoring.listeners.audio_llm import LLMUnavailable

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    with JudgeServer(api_key="local-secret") as srv:
        with pytest.raises(LLMUnavailable, match=r"HTTP 401"):
            _listener(corpus, srv.url)
        assert srv.authorization == set()  # OpenAI's key never went to this server
        monkeypatch.setenv("MY_SERVER_KEY", "local-secret")
        listener = _listener(corpus, srv.url, llm_api_key_env="MY_SERVER_KEY", orders=1)
        srv.responder = lambda body, audios, texts: "Answer: A"
        answers = listener.answer_many(_asked(corpus, n=2))
    assert [a.status for a in answers] == ["ok", "ok"]


def test_each_failure_keeps_its_real_reason(corpus):
    with JudgeServer() as srv:
        listener = _listener(corpus, srv.url, orders=2, llm_max_retries=0)
        srv.add_fault("500", times=10)
        answer = listener.answer(*_asked(corpus, n=1)[0])
    assert answer.status == "failed"
    assert "InternalServerError (HTTP 500)" in answer.detail
    assert "InternalServerError (HTTP 500)" in answer.responses[0].detail


def test_answer_many_asks_concurrently_and_in_order(corpus):
    asked = _asked(corpus, n=8)
    with JudgeServer(latency=0.3) as srv:
        srv.responder = lambda body, audios, texts: "Answer: B"
        listener = _listener(corpus, srv.url, orders=1, llm_concurrency=8)
        answers = listener.answer_many(asked)
        assert srv.max_in_flight >= 4  # one at a time would never exceed 1
        assert srv.requests == 8
    assert len(answers) == 8 and all(a.status == "ok" for a in answers)
    assert [a.responses[0].choice for a in answers] == [1] * 8
