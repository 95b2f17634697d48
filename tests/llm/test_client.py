"""The shared LLM client layer against the loopback judge server, over real HTTP (aiohttp):
faults that are not HTTP errors, requests counted as sent, audio sent as it is, the cache."""

import hashlib
import time

import numpy as np
import pytest
import soundfile as sf

from adept_eval.judge import JudgeConfig, JudgeItem, judge
from testing.judge_server import JudgeServer
from conftest import shared_or_skip


@pytest.fixture(scope="module")
def mp3s():
    folder = shared_or_skip("data", "vstyle_examples", "en", "wav")
    return sorted(str(p) for p in folder.glob("*.mp3"))[:12]


def _items(files, tag="x"):
    return [JudgeItem(f, f"{tag} say it happily {i}", "instruction/emotion", item_id=str(i))
            for i, f in enumerate(files)]


def _cfg(server, **kw):
    return JudgeConfig(**{"model": "m", "base_url": server.url, "cache_path": "", "timeout": 10,
                          "max_retries": 2, **kw})


@pytest.mark.parametrize("fault", ["html200", "notjson200"])
def test_a_200_that_is_not_a_completion_fails_only_that_item(mp3s, fault):
    with JudgeServer() as srv:
        srv.add_fault(fault)
        out = judge(_items(mp3s[:4]), _cfg(srv, concurrency=1), progress=False)
    assert out["n"] == 4 and out["n_failed"] == 1 and out["n_judged"] == 3
    failed = [x for x in out["items"] if x["status"] != "ok"]
    assert failed[0]["status"] == "failed" and "malformed reply" in failed[0]["detail"]
    assert failed[0]["score"] is None


def test_n_requests_counts_every_request_sent(mp3s):
    with JudgeServer() as srv:
        srv.add_fault("500", times=2)
        srv.add_fault("timeout", 2.0)
        srv.add_fault("429", 0.1)
        srv.add_fault("drop")
        out = judge(_items(mp3s[:6]), _cfg(srv, concurrency=1, timeout=1.0, max_retries=5),
                    progress=False)
        time.sleep(0.1)
        sent = srv.requests
    assert out["n_failed"] == 0
    assert out["n_requests"] == sent == 6 + 5  # 5 faults, each retried once
    assert sum(x["requests"] for x in out["items"]) == out["n_requests"]


def test_original_mp3_bytes_are_sent_and_nothing_decoded_twice(mp3s, tmp_path):
    from adept_eval.judge.runner import JudgeRunner

    with JudgeServer() as srv:
        srv.keep_bodies = True
        files = mp3s[:3] * 2  # each file twice: checked (decoded) once
        runner = JudgeRunner(_cfg(srv, cache_path=str(tmp_path / "c.sqlite")))
        results = runner.run(_items(files), progress=False)
        assert runner.client.checks.decodes == 3
        runner.client.close()
        sent = [p["input_audio"] for b in srv.bodies for p in b["messages"][-1]["content"]
                if p["type"] == "input_audio"]
        # a warm rerun (new runner, same cache, same server) asks nothing and decodes nothing
        asked = srv.requests
        runner = JudgeRunner(_cfg(srv, cache_path=str(tmp_path / "c.sqlite")))
        again = runner.run(_items(files), progress=False)
        assert runner.client.checks.decodes == 0 and srv.requests == asked
        runner.client.close()
    assert all(r.status == "ok" for r in results)
    assert {a["format"] for a in sent} == {"mp3"}
    import base64

    assert {hashlib.sha256(base64.b64decode(a["data"])).hexdigest() for a in sent} == \
        {hashlib.sha256(open(f, "rb").read()).hexdigest() for f in mp3s[:3]}
    assert [r.score for r in again] == [r.score for r in results]
    assert all(r.cached == 1 for r in again)


def test_wav_format_converts_and_checks_stay_honest(tmp_path):
    rate = 16000
    t = np.arange(rate) / rate
    dc = tmp_path / "dc.wav"
    sf.write(dc, np.full(rate, 0.5, dtype=np.float32), rate, subtype="PCM_16")
    flac = tmp_path / "tone.flac"
    sf.write(flac, 0.2 * np.sin(2 * np.pi * 220 * t), 44100)
    with JudgeServer() as srv:
        srv.keep_bodies = True
        out = judge([JudgeItem(str(dc), "say hi", "t"), JudgeItem(str(flac), "say hi", "t")],
                    _cfg(srv), progress=False)
        fmts = [p["input_audio"]["format"] for b in srv.bodies
                for p in b["messages"][-1]["content"] if p["type"] == "input_audio"]
    assert out["items"][0]["status"] == "bad_input" and "constant offset" in out["items"][0]["detail"]
    assert out["items"][1]["status"] == "ok" and fmts == ["wav"]  # FLAC converted to WAV


def test_cache_writes_never_wait_for_the_disk(tmp_path):
    """put() only queues: it returns while another process holds the database's write lock,
    the row is served from memory meanwhile, and committed once the lock is free."""
    import sqlite3

    from adept_eval.llm.cache import ReplyCache

    path = tmp_path / "c.sqlite"
    cache = ReplyCache(path)
    blocker = sqlite3.connect(str(path), isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # what a slow disk sync looks like to the writer
    for i in range(100):
        cache.put(f"k{i}", "v", 3, {"j": 1})  # would wait (up to 30 s) if it wrote itself
    assert cache.get("k99") == ("v", 3)
    blocker.execute("ROLLBACK")
    blocker.close()
    cache.close()
    reopened = ReplyCache(path)
    assert len(reopened) == 100 and reopened.get("k0") == ("v", 3)
    reopened.close()


def test_an_html_200_does_not_kill_an_lm_eval_vstyle_run(tmp_path):
    """The judge's reply is an HTML page with status 200 for one response: that response is
    one counted failure and the lm_eval run finishes with the others scored."""
    import shutil

    from conftest import run_lm_eval

    from adept_eval.corpora.vstyle import load_records

    folder = shared_or_skip("data", "vstyle_examples", "en")
    records = [r for r in load_records(folder) if r.category == "empathy"]
    wav = tmp_path / "wav"
    wav.mkdir()
    for rec in records:
        kimi = next(r for r in rec.responses if r.model_name == "Kimi")
        shutil.copy(kimi.audio_path, wav / f"{rec.record_id}.mp3")
    with JudgeServer() as server:
        server.add_fault("html200")
        res = run_lm_eval("audio-dir", ["vstyle_en_empathy"],
                          model_args={"path": str(wav), "name": "kimi"},
                          metadata={"vstyle_dir": str(folder), "judge_base_url": server.url,
                                    "judge_model": "m", "judge_cache": "",
                                    "judge_concurrency": 1})
    r = res["results"]["vstyle_en_empathy"]
    assert r["n_failed,speech_judge"] == 1
    assert r["n,speech_judge"] == len(records) - 1


def test_error_reasons_keep_status_and_body_but_never_the_key(monkeypatch):
    from email.utils import formatdate

    from adept_eval.llm.backends import OpenAICompatible, _retry_after

    monkeypatch.setenv("MY_KEY", "sk-secret-value")
    b = OpenAICompatible("m", base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY")
    assert b._status_error(503, b"<html>bad gateway for sk-secret-value</html>") == \
        "InternalServerError (HTTP 503): <html>bad gateway for ***</html>"
    assert b._status_error(400, b'{"error": {"message": "audio too long"}}') == \
        "BadRequestError (HTTP 400): audio too long"
    assert _retry_after({"retry-after-ms": "250"}) == 0.25
    assert _retry_after({"Retry-After": "3"}) == 3.0
    assert 5 <= _retry_after({"Retry-After": formatdate(time.time() + 7, usegmt=True)}) <= 7
    assert _retry_after({"Retry-After": "3600"}) == 60.0  # capped: a run must not look hung
    assert _retry_after({}) is None


def test_a_reply_echoing_our_key_never_stores_it(mp3s, tmp_path, monkeypatch):
    """A server that echoes the key it was sent (in a verdict here; a transcript would be the
    same) used to have it kept in the item's verdicts and in the reply cache: lm-eval's results
    were then refused at writing, and every rerun served the key again from the cache."""
    key = "sk-test-echoed-0123456789abcdef"
    monkeypatch.setenv("JUDGE_KEY_UNDER_TEST", key)
    cache = tmp_path / "cache.sqlite"
    with JudgeServer(api_key=key) as srv:
        srv.responder = lambda body, audios, texts: f"Your key is {key}.\n\nFinal score: [[4]]"
        out = judge(_items(mp3s[:2]), _cfg(srv, api_key_env="JUDGE_KEY_UNDER_TEST",
                                           cache_path=str(cache)), progress=False)
        again = judge(_items(mp3s[:2]), _cfg(srv, api_key_env="JUDGE_KEY_UNDER_TEST",
                                             cache_path=str(cache)), progress=False)
    assert out["n_judged"] == 2 and again["n_cached_judgements"] == 2
    assert all(v == "Your key is ***.\n\nFinal score: [[4]]"
               for r in (out, again) for x in r["items"] for v in x["verdicts"])
    assert key.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_a_missing_key_variable_is_named_by_the_option_that_set_it(monkeypatch):
    """`--metadata judge_api_key_env=NOPE_KEY` (unset) said "api_key_env=NOPE_KEY: ...", an
    option the user never typed; the message names the one they did."""
    from adept_eval.errors import UserError
    from adept_eval.llm.client import Connection, check_server

    monkeypatch.delenv("NOPE_KEY_FOR_TEST", raising=False)
    connection = Connection(backend="openai", model="m", base_url="http://127.0.0.1:9/v1",
                            api_key_env="NOPE_KEY_FOR_TEST")
    for option in ("judge_api_key_env", "llm_api_key_env", "api_key_env"):
        with pytest.raises(UserError) as info:
            check_server(connection, who="speech judge", url_option="judge_base_url",
                         key_option=option)
        assert str(info.value) == (f"{option}=NOPE_KEY_FOR_TEST: that environment variable "
                                   "is not set")


def test_a_key_with_a_line_break_is_stripped_or_named_not_a_traceback(mp3s, monkeypatch):
    """A key variable read from a file with its line break (``MY_KEY="sk-...\\n"``) went into
    the Authorization header as it was: aiohttp raised "Forbidden control character detected in
    headers" at the first request, a traceback naming neither the variable nor the option. The
    whitespace around a key is dropped; a control character inside it is one message naming
    the option and the variable."""
    from adept_eval.errors import UserError
    from adept_eval.llm.client import Connection, check_server

    key = "sk-test-key-0123456789"
    with JudgeServer(api_key=key) as srv:
        monkeypatch.setenv("KEY_WITH_NEWLINE", key + "\r\n")
        out = judge(_items(mp3s[:2]), _cfg(srv, api_key_env="KEY_WITH_NEWLINE", cache_path=""),
                    progress=False)
        assert out["n_judged"] == 2 and srv.authorization == {f"Bearer {key}"}
        monkeypatch.setenv("KEY_WITH_NEWLINE", "sk-one\nsk-two")
        with pytest.raises(UserError) as info:
            check_server(Connection(model="m", base_url=srv.url, api_key_env="KEY_WITH_NEWLINE"),
                         who="speech judge", url_option="judge_base_url",
                         key_option="judge_api_key_env")
    message = str(info.value)
    assert message.startswith("judge_api_key_env=KEY_WITH_NEWLINE: ") and "line break" in message
    assert "sk-one" not in message
