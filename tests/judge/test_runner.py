"""The speech judge against a loopback OpenAI-compatible server, over real HTTP (aiohttp)."""

import hashlib
import json
import math
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import evaluate
import numpy as np
import pytest
import soundfile as sf

from adept_eval.judge import JudgeConfig, JudgeItem, judge
from adept_eval.judge.runner import prepare_audio
from testing.judge_server import JudgeServer
from adept_eval.corpora.vstyle import load_records
from conftest import shared_or_skip


@pytest.fixture(scope="module")
def vstyle():
    return load_records(shared_or_skip("data", "vstyle_examples", "en"))


@pytest.fixture(scope="module")
def replay(vstyle):
    """sha256 of each response as the client sends it (16 kHz mono WAV) -> recorded verdict."""
    cfg = JudgeConfig()
    table = {}
    for rec in vstyle:
        for r in rec.responses:
            table[hashlib.sha256(prepare_audio(r.audio_path, cfg, "r")).hexdigest()] = r.judge_raw
    return table


@pytest.fixture
def server(replay):
    with JudgeServer() as srv:
        srv.replay = dict(replay)
        yield srv


def _cfg(server, tmp_path, **kw):
    base = dict(backend="openai", model="judge-under-test", base_url=server.url,
                cache_path=str(tmp_path / "cache.sqlite"), max_retries=3, timeout=10)
    return JudgeConfig(**{**base, **kw})


def _items(vstyle, system=None):
    return [JudgeItem(r.audio_path, rec.text, rec.ability, rec.audio_path,
                      f"{rec.record_id}/{r.model_name}")
            for rec in vstyle for r in rec.responses if system is None or r.model_name == system]


def test_evaluate_load_scores_vstyle_examples(vstyle, server, tmp_path):
    metric = evaluate.load("speech_judge")
    items = _items(vstyle)
    out = metric.compute(predictions=[i.response for i in items],
                         references=[i.instruction for i in items],
                         instruction_types=[i.instruction_type for i in items],
                         model="judge-under-test", base_url=server.url, concurrency=8,
                         cache_path=str(tmp_path / "c.sqlite"), progress=False)
    recorded = [r.judge_score for rec in vstyle for r in rec.responses]
    assert out["n"] == 231 and out["n_failed"] == 0 and out["failure_rate"] == 0.0
    assert [it["score"] for it in out["items"]] == recorded
    assert out["score"] == pytest.approx(statistics.mean(recorded))
    assert sum(out["histogram"].values()) == 231
    assert out["histogram"]["1"] == recorded.count(1)
    assert out["items"][0]["verdicts"][0].rstrip().endswith("]]")
    assert out["judge"]["prompt_sha256"] and out["judge"]["model"] == "judge-under-test"
    # per type means
    by_type = defaultdict(list)
    for rec in vstyle:
        for r in rec.responses:
            by_type[rec.ability].append(r.judge_score)
    from adept_eval.judge.runner import mean_interval

    for t, scores in by_type.items():
        assert out["score_by_type"][t]["score"] == pytest.approx(statistics.mean(scores))
        # each type's mean has its n and interval, as the overall score has (it had only n)
        assert out["score_by_type"][t]["n_judged"] == len(scores)
        assert out["score_by_type"][t]["score_ci95"] == pytest.approx(list(mean_interval(scores)),
                                                                      nan_ok=True)


def test_add_batch_combine_arrays_and_direct_class(vstyle, server, tmp_path):
    from adept_eval.harness.startup import speech_judge_path
    from adept_eval.metrics.speech_judge import SpeechJudge

    items = _items(vstyle)[:6]
    opts = dict(model="judge-under-test", base_url=server.url, cache_path="", progress=False)
    by_path = evaluate.load(str(speech_judge_path()))
    for it in items[:3], items[3:]:
        by_path.add_batch(predictions=[i.response for i in it], references=[i.instruction for i in it],
                          instruction_types=[i.instruction_type for i in it])
    batched = by_path.compute(**opts)
    combined = evaluate.combine([SpeechJudge()]).compute(
        predictions=[i.response for i in items], references=[i.instruction for i in items],
        instruction_types=[i.instruction_type for i in items], **opts)
    arrays = []
    for i in items:
        data, rate = sf.read(i.response, dtype="float32")
        arrays.append({"array": data if data.ndim == 1 else data.mean(1), "sampling_rate": rate})
    from_arrays = SpeechJudge().compute(predictions=arrays, references=[i.instruction for i in items],
                                        instruction_types=[i.instruction_type for i in items], **opts)
    assert batched["n"] == combined["n"] == from_arrays["n"] == 6
    assert [x["score"] for x in batched["items"]] == [x["score"] for x in combined["items"]]
    assert all(x["status"] == "ok" for x in from_arrays["items"])


def test_paths_and_arrays_mixed_are_judged_alike(vstyle, server, tmp_path):
    """A path first made the array items `bad_input ... file is missing`; an array first raised
    `AttributeError: 'str' object has no attribute 'get'` inside datasets' encode_batch. Mixed
    in one batch, over batches, and one by one with ``add``, each is judged as given alone."""
    from adept_eval.metrics.speech_judge import SpeechJudge

    items = _items(vstyle)[:4]
    opts = dict(model="judge-under-test", base_url=server.url, cache_path="", progress=False)
    given = dict(references=[i.instruction for i in items],
                 instruction_types=[i.instruction_type for i in items])

    def array(path):
        data, rate = sf.read(path, dtype="float32")
        return {"array": data if data.ndim == 1 else data.mean(1), "sampling_rate": rate}

    alone = {k: [x["score"] for x in SpeechJudge().compute(
        predictions=[array(i.response) if k == "a" else i.response for i in items],
        **given, **opts)["items"]] for k in "pa"}
    for kinds in ("papa", "apap"):
        predictions = [array(i.response) if k == "a" else i.response
                       for k, i in zip(kinds, items)]
        out = SpeechJudge().compute(predictions=predictions, **given, **opts)
        assert [x["status"] for x in out["items"]] == ["ok"] * 4, out["items"]
        assert [x["score"] for x in out["items"]] == [alone[k][n] for n, k in enumerate(kinds)]
        assert (out["n"], out["n_failed"]) == (4, 0)
    expected = [alone[k][n] for n, k in enumerate("ppaa")]
    metric = SpeechJudge()
    metric.add_batch(predictions=[items[0].response, items[1].response],
                     references=given["references"][:2],
                     instruction_types=given["instruction_types"][:2])
    metric.add_batch(predictions=[array(items[2].response), array(items[3].response)],
                     references=given["references"][2:],
                     instruction_types=given["instruction_types"][2:])
    assert [x["score"] for x in metric.compute(**opts)["items"]] == expected
    metric = SpeechJudge()
    for k, i in zip("apap", items):
        metric.add(prediction=array(i.response) if k == "a" else i.response,
                   reference=i.instruction, instruction_types=i.instruction_type)
    assert [x["score"] for x in metric.compute(**opts)["items"]] == \
        [alone[k][n] for n, k in enumerate("apap")]
    missing = SpeechJudge().compute(predictions=[array(items[0].response),
                                                 str(tmp_path / "gone.wav")],
                                    references=given["references"][:2],
                                    instruction_types=given["instruction_types"][:2], **opts)
    assert [x["status"] for x in missing["items"]] == ["ok", "bad_input"]
    assert missing["n_failed"] == 1 and "gone.wav: file is missing" in missing["items"][1]["detail"]


def test_empty_inputs_are_one_clear_error():
    """Empty lists used to fail inside evaluate (it reads the first example to pick the input
    format) as a bare IndexError; they are one message naming the metric, before any request."""
    from adept_eval.metrics.speech_judge import SpeechJudge

    with pytest.raises(ValueError, match="speech_judge: predictions is empty"):
        SpeechJudge().compute(predictions=[], references=[], instruction_types=[],
                              model="judge", base_url="http://127.0.0.1:9/v1", cache_path="")


def test_a_none_input_is_one_clear_error():
    """``instruction_types=None`` (or ``references=None``) failed inside evaluate with
    "TypeError: 'NoneType' object is not subscriptable"; it is one message naming the input."""
    from adept_eval.metrics.speech_judge import SpeechJudge

    given = dict(predictions=["a.wav"], references=["Say it sadly."],
                 instruction_types=["instruction/emotion"])
    for name in ("instruction_types", "references"):
        with pytest.raises(ValueError, match=f"^speech_judge: {name} is None: give a list"):
            SpeechJudge().compute(**{**given, name: None}, model="judge",
                                  base_url="http://127.0.0.1:9/v1", cache_path="")


def test_a_dead_server_is_named_by_the_metrics_own_options():
    """``compute(base_url=<dead>)`` said "speech judge: judge_base_url=... does not answer (...
    is judge_base_url right, does it need judge_api_key_env=NAME?)": lm-eval's option names,
    which an evaluate user never typed. The metric's message names base_url and api_key_env."""
    from adept_eval.errors import LLMUnavailable
    from adept_eval.metrics.speech_judge import SpeechJudge

    with pytest.raises(LLMUnavailable) as info:
        SpeechJudge().compute(predictions=["a.wav"], references=["Say it sadly."],
                              instruction_types=["instruction/emotion"], model="judge",
                              base_url="http://127.0.0.1:9/v1", cache_path="", progress=False)
    message = str(info.value)
    assert message.startswith("speech_judge: base_url=http://127.0.0.1:9/v1 does not answer")
    assert "does it need api_key_env=NAME?" in message and "judge_" not in message


def test_a_key_given_as_a_value_points_to_api_key_env():
    """``api_key="sk-..."`` was "unknown option(s) api_key" and no more: the message says keys
    come from the environment and which option names the variable, before any request."""
    from adept_eval.metrics.speech_judge import SpeechJudge

    with pytest.raises(ValueError, match=r"unknown option\(s\) api_key;.*api_key_env=NAME"):
        SpeechJudge().compute(predictions=["a.wav"], references=["b.wav"],
                              instruction_types=["emotion"], model="judge",
                              base_url="http://127.0.0.1:9/v1", api_key="sk-not-a-real-key")


def test_transient_faults_are_retried_and_nothing_is_lost(vstyle, server, tmp_path):
    items = _items(vstyle)[:20]
    server.add_fault("429", 1.0)
    server.add_fault("500", times=2)
    server.add_fault("drop")
    server.add_fault("timeout", 3.0)
    server.add_fault("malformed")
    t = time.monotonic()
    out = judge(items, _cfg(server, tmp_path, timeout=1.5, concurrency=4), progress=False)
    assert time.monotonic() - t >= 1.0  # waited for Retry-After
    assert out["n"] == 20 and out["n_failed"] == 0
    assert [x["item_id"] for x in out["items"]] == [i.item_id for i in items]
    recorded = [r.judge_score for rec in vstyle for r in rec.responses][:20]
    assert [x["score"] for x in out["items"]] == recorded
    # every item was answered exactly once with a verdict (the malformed one twice: re-asked)
    assert sum(server.completed.values()) == 21


def test_persistent_failures_are_failures_not_scores(vstyle, server, tmp_path):
    items = _items(vstyle)[:4]
    server.add_fault("malformed", times=3)  # item asked 3 times (1 + 2 re-asks), all bad
    server.add_fault("500", times=50)  # later: the transport gives up too
    out = judge(items, _cfg(server, tmp_path, concurrency=1, max_retries=1), progress=False)
    statuses = [x["status"] for x in out["items"]]
    assert statuses.count("failed") == 4
    assert out["n_failed"] == 4 and out["n_judged"] == 0 and math.isnan(out["score"])
    first = out["items"][0]
    assert first["score"] is None and "unparseable" in first["detail"]
    assert "request failed" in out["items"][1]["detail"]
    assert out["histogram"] == {str(s): 0 for s in range(1, 6)}


def test_a_failure_after_retries_says_how_many_attempts_it_took(vstyle, server, tmp_path):
    """An item whose requests failed every retry read "request failed: InternalServerError (HTTP
    500): server error", the same as one never retried: lm-eval's samples keep only that
    detail, so the retries (bounded by max_retries) went unreported there."""
    server.add_fault("500", times=3)
    server.add_fault("401")  # not retried: nothing to add
    out = judge(_items(vstyle)[:2], _cfg(server, tmp_path, concurrency=1, max_retries=2),
                progress=False)
    first, second = out["items"]
    assert first["requests"] == 3 and first["detail"] == (
        "judgement 1: request failed: InternalServerError (HTTP 500): server error "
        "(gave up after 3 attempts)")
    assert second["requests"] == 1 and second["detail"].endswith("invalid api key")


def test_a_verdict_cut_off_at_max_tokens_is_a_failure_not_a_score(vstyle, server, tmp_path):
    """A verdict cut off at max_tokens (finish_reason "length") that had quoted the prompt's
    "Final score: [[1]]" before it stopped was scored 1; it is a counted failure saying why."""
    server.add_fault("length")
    out = judge(_items(vstyle)[:2], _cfg(server, tmp_path, concurrency=1, max_tokens=64),
                progress=False)
    first, second = out["items"]
    assert first["status"] == "failed" and first["score"] is None
    assert "cut off at max_tokens=64" in first["detail"]
    assert second["status"] == "ok" and out["n_judged"] == 1 and out["n_failed"] == 1
    assert out["histogram"]["1"] == int(second["score"] == 1)


def test_cache_makes_reruns_free(vstyle, server, tmp_path):
    items = _items(vstyle)[:10]
    cfg = _cfg(server, tmp_path)
    first = judge(items, cfg, progress=False)
    before = server.requests
    second = judge(items, cfg, progress=False)
    assert server.requests == before and second["n_cached_judgements"] == 10
    assert [x["score"] for x in first["items"]] == [x["score"] for x in second["items"]]
    # another prompt is another judge: not served from the cache
    judge(items[:2], _cfg(server, tmp_path, prompt="T {instruction_type} {input_instruction}"),
          progress=False)
    assert server.requests == before + 2


def test_a_verdict_read_another_way_is_not_served_from_the_cache(vstyle, server, tmp_path,
                                                                  monkeypatch):
    """The cache keeps the score a verdict was read as; when verdicts are read differently
    (this stop: one cut off inside its last bracket or at max_tokens is no score), a score read
    the old way must not be served again: the parser's version is part of the key."""
    from adept_eval.judge import runner

    items = _items(vstyle)[:3]
    cfg = _cfg(server, tmp_path)
    judge(items, cfg, progress=False)
    before = server.requests
    assert judge(items, cfg, progress=False)["n_cached_judgements"] == 3
    monkeypatch.setattr(runner, "PARSER_VERSION", "another")
    again = judge(items, cfg, progress=False)
    assert again["n_cached_judgements"] == 0 and server.requests == before + 3


KILLABLE = r'''
import json, sys
from adept_eval.judge import JudgeConfig, JudgeItem, judge
items = [JudgeItem(*x) for x in json.load(open(sys.argv[1]))]
cfg = JudgeConfig(model="judge-under-test", base_url=sys.argv[2], cache_path=sys.argv[3],
                  concurrency=int(sys.argv[5]))
out = judge(items, cfg, progress=False)
json.dump([x["score"] for x in out["items"]], open(sys.argv[4], "w"))
'''


@pytest.mark.parametrize("concurrency,n", [(1, 12), (8, 48)])
def test_killed_run_resumes_and_equals_uninterrupted(vstyle, replay, tmp_path, concurrency, n):
    """kill -9 mid-run, rerun: only the missing judgements are asked again, plus at most the
    requests that were in flight (items prepared ahead of the requests cost nothing)."""
    import sqlite3

    items = _items(vstyle)[:n]
    assert len(items) == n
    spec = tmp_path / "items.json"
    spec.write_text(json.dumps([[i.response, i.instruction, i.instruction_type, None, i.item_id]
                                for i in items]))
    script = tmp_path / "run.py"
    script.write_text(KILLABLE)
    cache = tmp_path / "cache.sqlite"
    with JudgeServer(latency=0.3) as srv:
        srv.replay = dict(replay)
        proc = subprocess.Popen([sys.executable, str(script), str(spec), srv.url, str(cache),
                                 str(tmp_path / "a.json"), str(concurrency)])
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline and done < n // 3:
            time.sleep(0.2)
            if cache.exists():
                try:
                    done = sqlite3.connect(str(cache)).execute(
                        "SELECT COUNT(*) FROM judgements").fetchone()[0]
                except sqlite3.Error:
                    pass
        proc.kill()
        proc.wait()
        assert n // 3 <= done < n, done
        before = srv.requests
        subprocess.run([sys.executable, str(script), str(spec), srv.url, str(cache),
                        str(tmp_path / "b.json"), str(concurrency)], check=True, timeout=120)
        resumed_requests = srv.requests - before
    assert resumed_requests <= n - done + concurrency  # what was missing (+ what was in flight)
    resumed = json.loads((tmp_path / "b.json").read_text())
    with JudgeServer() as fresh:
        fresh.replay = dict(replay)
        clean = judge(items, JudgeConfig(model="judge-under-test", base_url=fresh.url,
                                         cache_path=""), progress=False)
    assert resumed == [x["score"] for x in clean["items"]]


def test_bad_input_fails_only_that_item(vstyle, server, tmp_path):
    good = _items(vstyle)[:2]
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(16000), 16000)
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF....not audio")
    long = tmp_path / "long.wav"
    sf.write(long, 0.1 * np.sin(np.arange(16000 * 20) / 7.0), 16000)
    items = good + [JudgeItem(str(tmp_path / "missing.wav"), "say hi", "t"),
                    JudgeItem(str(silent), "say hi", "t"), JudgeItem(str(broken), "say hi", "t"),
                    JudgeItem(good[0].response, "   ", "t"),
                    JudgeItem(str(long), "say hi", "t")]
    out = judge(items, _cfg(server, tmp_path, max_audio_seconds=10), progress=False)
    st = [(x["status"], x["detail"]) for x in out["items"]]
    assert [s for s, _ in st] == ["ok", "ok", "bad_input", "bad_input", "bad_input", "bad_input",
                                  "too_long"]
    assert "missing" in st[2][1] and "silent" in st[3][1] and "not decodable audio" in st[4][1]
    assert "transcript" in st[5][1] and "not truncated" in st[6][1]
    assert out["n_failed"] == 5 and out["failure_rate"] == pytest.approx(5 / 7)


def test_an_empty_path_is_named_as_such(vstyle, server, tmp_path):
    """A prediction "" (an answer that was never written) read "response: .: cannot be read (Is
    a directory)": Path("") is the current folder. It says the path is empty."""
    items = _items(vstyle)[:1] + [JudgeItem("", "say hi", "t"), JudgeItem("  ", "say hi", "t")]
    out = judge(items, _cfg(server, tmp_path), progress=False)
    assert [x["status"] for x in out["items"]] == ["ok", "bad_input", "bad_input"]
    assert [x["detail"] for x in out["items"][1:]] == ["response: no audio (an empty path)"] * 2


def test_k_judgements_median_and_spread(vstyle, tmp_path):
    with JudgeServer() as srv:
        items = _items(vstyle)[:1]
        key = hashlib.sha256(prepare_audio(items[0].response, JudgeConfig(), "r")).hexdigest()
        answers = ["Final score: [[2]]", "Final score: [[5]]", "Final score: [[4]]"]

        class Rotating(dict):  # a judge that answers differently each time it is asked
            def get(self, k, default=None):
                return answers.pop(0) if k == key and answers else default

        srv.replay = Rotating()
        out = judge(items, _cfg(srv, tmp_path, judgements=3, cache_path=""), progress=False)
    item = out["items"][0]
    assert item["scores"] == [2, 5, 4] and item["score"] == 4 and item["spread"] == 3
    assert out["judge"]["judgements"] == 3 and out["judge"]["temperature"] == 1.0
    assert out["histogram"] == {"1": 0, "2": 1, "3": 0, "4": 1, "5": 1}


def test_concurrency_bound_and_rate_limit(vstyle, server, tmp_path):
    server.latency = 0.2
    items = _items(vstyle)[:12]
    judge(items, _cfg(server, tmp_path, concurrency=3, cache_path=""), progress=False)
    assert server.max_in_flight <= 3
    server.latency = 0.0
    t = time.monotonic()
    judge(items[:5], _cfg(server, tmp_path, rpm=600, cache_path=""), progress=False)
    assert time.monotonic() - t >= 0.4  # 5 starts, 0.1 s apart


def test_keys_go_only_to_their_own_service(vstyle, server, tmp_path, monkeypatch):
    """A set GEMINI/OpenAI key is never sent to another server; a custom server gets a key only
    through an explicit api_key_env."""
    secret, other = "AIza" + "x" * 35, "sk-" + "y" * 40
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", other)
    items = _items(vstyle)[:2]
    for backend in ("gemini", "openai"):
        out = judge(items, JudgeConfig(backend=backend, model="m" if backend == "openai" else "",
                                       base_url=server.url, cache_path=""), progress=False)
        assert out["n_judged"] == 2
    assert server.authorization == set()  # neither key went to the loopback server
    out = judge(items, JudgeConfig(backend="gemini", base_url=server.url, api_key_env="GEMINI_API_KEY",
                                   cache_path=str(tmp_path / "c.sqlite")), progress=False)
    assert out["n_judged"] == 2 and out["judge"]["backend"] == "gemini"
    assert out["judge"]["model"] == "gemini-2.5-pro"
    assert server.authorization == {f"Bearer {secret}"}
    assert secret not in json.dumps(out)
    assert secret.encode() not in (tmp_path / "c.sqlite").read_bytes()
    with pytest.raises(ValueError, match="MY_JUDGE_KEY"):
        judge(items, JudgeConfig(base_url=server.url, model="m", api_key_env="MY_JUDGE_KEY",
                                 cache_path=""), progress=False)


def test_openai_key_never_goes_to_a_server_named_by_openai_base_url(vstyle, server,
                                                                    monkeypatch):
    """With OPENAI_BASE_URL naming a local server (as vLLM users set it) and no base_url,
    OPENAI_API_KEY was sent to that server, and without the key the run stopped with "no API
    key for api.openai.com"; the key is resolved for the server actually asked."""
    secret = "sk-" + "z" * 40
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    items = _items(vstyle)[:1]
    out = judge(items, JudgeConfig(model="m", cache_path=""), progress=False)
    assert out["n_judged"] == 1 and server.authorization == set()
    monkeypatch.delenv("OPENAI_API_KEY")
    assert judge(items, JudgeConfig(model="m", cache_path=""), progress=False)["n_judged"] == 1


def test_missing_key_for_hosted_backend_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    from adept_eval.llm.backends import get_backend

    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        get_backend("gemini")


def test_t_quantile_matches_scipy():
    """The summary's interval uses its own t quantile (scipy.stats costs ~1 s to import)."""
    from scipy import stats

    from adept_eval.judge.runner import mean_interval
    from adept_eval.scoring.stats import t_quantile

    for df in (1, 2, 3, 4, 7, 10, 31, 200, 1499):
        assert t_quantile(0.95, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-9)
    values = [1.0, 2.0, 3.0, 5.0, 4.0, 3.0]
    lo, hi = stats.t.interval(0.95, 5, loc=np.mean(values), scale=stats.sem(values))
    assert mean_interval(values) == pytest.approx((lo, hi), rel=1e-9)
