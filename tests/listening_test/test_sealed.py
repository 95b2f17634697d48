"""Sealed tests (``sealed``): a copy of a test that may be made public, as a Docker Space's
files are, whose design only the key in ``ADEPT_LISTENING_KEY`` opens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="needs the listening-test extra (cryptography)")


def _adept_eval(*args, env=None):
    exe = Path(sys.executable).with_name("adept-eval")
    command = [str(exe)] if exe.is_file() else [shutil.which("adept-eval")]
    return subprocess.run([*command, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=300)


def test_a_sealed_copy_holds_no_secret_and_serves_only_with_its_key(test_dir, tmp_path, serve):
    """The documented Docker Space copied test.json into the image: the audio-token-to-system
    map, the headphone key, the beep tokens and the completion codes, public with the Space.
    `listening-test seal` writes a copy holding the audio and the design encrypted; nothing in
    it names a system, a beep, a key or a code, and `serve` opens it with the key from the
    environment only."""
    import httpx

    from adept_eval.listening_test.design import load_test

    config = load_test(test_dir)
    sealed = tmp_path / "space" / "test"
    done = _adept_eval("listening-test", "seal", test_dir, "-o", sealed)
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip().splitlines()[-1]
    assert len(key) == 44
    files = sorted(p.relative_to(sealed).as_posix() for p in sealed.rglob("*") if p.is_file())
    assert "test.json" not in files and "test.sealed" in files
    assert set(files) == {"test.sealed", *(f"audio/{name}" for name in config.files.values())}
    secrets = [config.completion_code, config.screenout_code, *config.systems,
               json.dumps(config.samples)[:40], *config.catch_tokens, "headphone_answers",
               key]
    for path in sealed.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(s.encode() in data for s in secrets), path

    without = _adept_eval("listening-test", "serve", sealed, "--port", "1")
    assert without.returncode != 0 and "Traceback" not in without.stdout + without.stderr
    assert "ADEPT_LISTENING_KEY" in without.stdout + without.stderr
    wrong = _adept_eval("listening-test", "serve", sealed, "--port", "1",
                        env={"ADEPT_LISTENING_KEY": "A" * 43 + "="})
    assert "does not open it" in wrong.stdout + wrong.stderr

    server = serve(sealed, "--min-listening", "0", env={"ADEPT_LISTENING_KEY": key})
    with httpx.Client(base_url=server.url) as c:
        r = c.post("/api/session", json={"participant": "space1"})
        assert r.status_code == 200 and r.json()["state"]["title"] == config.title
    status = _adept_eval("listening-test", "status", sealed, "--json",
                         env={"ADEPT_LISTENING_KEY": key})
    assert status.returncode == 0 and json.loads(status.stdout)["participants"] == 1
