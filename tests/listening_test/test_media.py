"""``listening_test.media``: audio served from memory answers as the file on disk would."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("httpx", reason="needs httpx (test extra)")

from adept_eval.listening_test.design import load_test


def test_audio_from_memory_answers_every_range_form_like_the_file_does(test_dir):
    """Audio is served from memory; each range form a browser or a proxy may send gets the
    bytes and headers HTTP asks for, the same as the file on disk, within the memory budget."""
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    config = load_test(test_dir)
    tokens = [config.calibration_token, *config.headphone_tokens]
    on_disk = {t: (test_dir / "audio" / config.files[t]).read_bytes() for t in tokens}
    one_file = max(len(b) for b in on_disk.values())
    budget_mb = 2.5 * one_file / 2 ** 20  # room for two files: the rest are read again
    with TestClient(create_app(test_dir, admin_token="", audio_cache_mb=budget_mb,
                                min_listening=0)) as c:
        for _ in range(2):  # a first read (from disk) and a second (from memory, or evicted)
            for tok in tokens:
                data, n = on_disk[tok], len(on_disk[tok])
                full = c.get(f"/audio/{tok}")
                assert full.status_code == 200 and full.content == data
                assert full.headers["content-length"] == str(n)
                assert full.headers["accept-ranges"] == "bytes"
                etag = full.headers["etag"]
                assert c.get(f"/audio/{tok}", headers={"If-None-Match": etag}).status_code == 304
                cases = {"bytes=0-": (0, n), "bytes=100-199": (100, 200),
                         f"bytes=10-{n + 50}": (10, n), f"bytes={n - 1}-": (n - 1, n)}
                for rng, (a, b) in cases.items():
                    part = c.get(f"/audio/{tok}", headers={"Range": rng})
                    assert part.status_code == 206, rng
                    assert part.content == data[a:b], rng
                    assert part.headers["content-range"] == f"bytes {a}-{b - 1}/{n}", rng
                    assert part.headers["content-length"] == str(b - a), rng
                head = c.head(f"/audio/{tok}")
                assert head.status_code == 200 and head.content == b""
                assert head.headers["content-length"] == str(n)
                past = c.get(f"/audio/{tok}", headers={"Range": f"bytes={n}-"})
                assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{n}"
                two = c.get(f"/audio/{tok}", headers={"Range": "bytes=0-9,20-29"})
                assert two.status_code == 206 and b"multipart/byteranges" in \
                    two.headers["content-type"].encode()
                assert data[0:10] in two.content and data[20:30] in two.content
                suffix = c.get(f"/audio/{tok}", headers={"Range": "bytes=-100"})
                assert suffix.status_code == 206 and suffix.content == data[-100:]
        cached = c.app.state.audio
        assert 0 < cached.cached_bytes <= budget_mb * 2 ** 20

