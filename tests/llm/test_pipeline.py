"""How the shared LLM client moves work: items prepared ahead of the requests on worker threads
but sent in order, a bounded window in memory, failures that stop the feeding, the event loop
it runs on, and the request body as the wire carries it."""

import asyncio
import base64
import json
import threading
import time

import pytest

from adept_eval.errors import UserError
from adept_eval.llm import Connection, LLMClient, Part, run_sync
from adept_eval.llm.audio import AudioPayload
from adept_eval.llm.backends import Encoded, OpenAICompatible
from adept_eval.llm.client import EVENT_LOOP_ENV, event_loop_name


def _client(concurrency):
    return LLMClient(Connection(model="m", base_url="http://127.0.0.1:9/v1",
                                concurrency=concurrency), cache_path=None)


def test_items_are_prepared_ahead_but_requests_start_in_order():
    """Preparing runs ahead of the requests - up to ``lookahead`` items beyond the slots - so a
    freed slot finds the next item ready; a slow preparation never lets a later item jump
    the queue; results come back in input order."""
    client = _client(2)
    prepared, started = [], []
    gate = threading.Event()

    def prepare(i, item):
        if i == 0:
            time.sleep(0.2)  # the first item is the slowest to prepare
        prepared.append(i)
        return item * 10

    async def fn(i, value):
        started.append(i)
        while not gate.is_set() and i < 2:  # the first two requests hold their slots
            await asyncio.sleep(0.01)
        return value + 1

    async def main():
        task = asyncio.ensure_future(client.map(fn, list(range(12)), desc="t", progress=False,
                                                prepare=prepare, lookahead=3))
        for _ in range(200):  # until the window is full: 2 in flight + 3 prepared
            await asyncio.sleep(0.01)
            if len(prepared) >= 5:
                break
        await asyncio.sleep(0.1)
        window = sorted(prepared)
        gate.set()
        return window, await task

    window, results = run_sync(main())
    client.close()
    assert window == [0, 1, 2, 3, 4]  # nothing beyond concurrency + lookahead
    assert started == list(range(12))  # in order, though item 0 was ready last
    assert results == [10 * i + 1 for i in range(12)]


def test_a_failure_stops_the_feeding_and_is_raised():
    client = _client(2)
    prepared = []

    def prepare(i, item):
        prepared.append(i)
        return item

    async def fn(i, item):
        await asyncio.sleep(0.01)
        if i == 3:
            raise RuntimeError("boom at 3")
        return i

    with pytest.raises(RuntimeError, match="boom at 3"):
        run_sync(client.map(fn, list(range(200)), desc="t", progress=False, prepare=prepare,
                            lookahead=2))
    client.close()
    assert len(prepared) < 20  # not all 200: the feeding stopped at the failure


def test_a_failing_preparation_is_raised():
    client = _client(4)

    def prepare(i, item):
        if i == 5:
            raise ValueError("cannot prepare 5")
        return item

    async def fn(i, item):
        return item

    with pytest.raises(ValueError, match="cannot prepare 5"):
        run_sync(client.map(fn, list(range(50)), desc="t", progress=False, prepare=prepare))
    client.close()


def test_without_prepare_map_keeps_its_old_contract():
    client = _client(3)
    in_flight, peak = [0], [0]

    async def fn(i, item):
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        await asyncio.sleep(0.005)
        in_flight[0] -= 1
        return item * 2

    assert run_sync(client.map(fn, list(range(30)), desc="t", progress=False)) == \
        [2 * i for i in range(30)]
    assert peak[0] == 3


def _loop_type(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    else:
        monkeypatch.setenv(EVENT_LOOP_ENV, value)

    async def which():
        return type(asyncio.get_running_loop()).__module__

    return run_sync(which())


def test_the_event_loop_is_uvloop_when_installed_and_asyncio_on_request(monkeypatch):
    assert _loop_type(monkeypatch, "asyncio").startswith("asyncio")
    try:
        import uvloop  # noqa: F401
    except ImportError:
        assert _loop_type(monkeypatch, None).startswith("asyncio")  # the fallback
        with pytest.raises(UserError, match="uvloop is not installed"):
            _loop_type(monkeypatch, "uvloop")
        return
    assert _loop_type(monkeypatch, None).startswith("uvloop")
    assert _loop_type(monkeypatch, "uvloop").startswith("uvloop")


def test_a_bad_event_loop_setting_is_one_clear_message(monkeypatch):
    monkeypatch.setenv(EVENT_LOOP_ENV, "trio")
    with pytest.raises(UserError, match=f"{EVENT_LOOP_ENV}='trio'"):
        event_loop_name()


def test_run_sync_works_inside_a_running_loop(monkeypatch):
    monkeypatch.setenv(EVENT_LOOP_ENV, "asyncio")

    async def inner():
        return 41 + 1

    async def outer():  # a notebook's loop: run_sync moves to a helper thread
        return run_sync(inner())

    assert asyncio.run(outer()) == 42


def test_the_body_is_the_protocol_json_with_the_audio_in_base64():
    """``encode`` once (on a worker thread), send many times: the body is valid JSON whose
    last message carries the text and the audio bytes base64-encoded, whatever the bytes."""
    audio = bytes(range(256)) * 1000 + b"\x00\xff"  # every byte value, odd length
    parts = [Part("text", text='say "hi" \u00e9\n'), Part("audio", audio=AudioPayload(audio, "mp3"))]
    backend = OpenAICompatible("m", base_url="http://127.0.0.1:9/v1")
    encoded = backend.encode(parts)
    assert isinstance(encoded, Encoded)
    kwargs = {"model": "m", "temperature": 0.0, "max_tokens": 5, "seed": 3,
              "messages": [{"role": "system", "content": "be fair"}]}
    for body in (backend.body(kwargs, encoded), backend.body(kwargs, parts)):
        sent = json.loads(body)
        assert {k: sent[k] for k in ("model", "temperature", "max_tokens", "seed")} == \
            {"model": "m", "temperature": 0.0, "max_tokens": 5, "seed": 3}
        assert sent["messages"][0] == {"role": "system", "content": "be fair"}
        text, sound = sent["messages"][1]["content"]
        assert text == {"type": "text", "text": 'say "hi" \u00e9\n'}
        assert sound["type"] == "input_audio" and sound["input_audio"]["format"] == "mp3"
        assert base64.b64decode(sound["input_audio"]["data"], validate=True) == audio


def test_the_worker_threads_are_few_and_named():
    from adept_eval.llm.client import PREPARE_THREADS

    client = _client(64)
    names = set()

    def prepare(i, item):
        names.add(threading.current_thread().name)
        time.sleep(0.002)
        return item

    async def fn(i, item):
        return item

    run_sync(client.map(fn, list(range(100)), desc="t", progress=False, prepare=prepare))
    client.close()
    assert 1 <= len(names) <= PREPARE_THREADS <= 4
    assert all(n.startswith("adept-eval-prepare") for n in names)
