"""Trusted proxies and client networks (``addresses``), and what the real server does with
``--proxy``: per-address limits count the real clients behind a proxy, and nobody else can name
itself another address."""

from __future__ import annotations

import pytest

from adept_eval.errors import OptionError
from adept_eval.listening_test.addresses import Proxies, network_of


def test_networks_group_neighbouring_addresses():
    assert network_of("203.0.113.7") == network_of("203.0.113.200") == "203.0.113.0/24"
    assert network_of("203.0.114.7") != network_of("203.0.113.7")
    assert network_of("2001:db8::1") == network_of("2001:db8::ffff:1") == "2001:db8::/64"
    assert network_of("::ffff:203.0.113.9") == "203.0.113.0/24"
    assert network_of("testclient") == "testclient"


def test_only_a_trusted_proxy_names_the_client_and_only_by_the_right_end():
    none = Proxies.parse("")
    assert not none and none.client("10.0.0.5", "1.2.3.4") == "10.0.0.5"
    proxy = Proxies.parse("10.0.0.5, 192.168.0.0/16")
    assert proxy.trusts("10.0.0.5") and proxy.trusts("192.168.4.4") and not proxy.trusts("10.0.0.6")
    assert proxy.client("10.0.0.6", "1.2.3.4") == "10.0.0.6"  # not a proxy: believed nothing
    # the client wrote "6.6.6.6" itself; the proxy appended the address it saw
    assert proxy.client("10.0.0.5", "6.6.6.6, 1.2.3.4") == "1.2.3.4"
    assert proxy.client("10.0.0.5", "6.6.6.6, 1.2.3.4, 192.168.1.1") == "1.2.3.4"
    assert proxy.client("10.0.0.5", None) == "10.0.0.5"
    everyone = Proxies.parse("*")
    assert everyone.client("172.17.0.1", "6.6.6.6, 1.2.3.4") == "1.2.3.4"
    with pytest.raises(OptionError, match="'10.0.0.x' is not an IP address"):
        Proxies.parse("10.0.0.x")


httpx = pytest.importorskip("httpx", reason="needs httpx (test extra)")


def _start(c, pid, forwarded=None):
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return c.post("/api/session", json={"participant": pid}, headers=headers).status_code


def test_behind_a_proxy_each_client_has_its_own_limit(test_dir, serve):
    """Behind a proxy every participant arrives from the proxy's address: 30 new sessions a
    minute for everyone together. With ``--proxy`` the real client (the address the proxy
    appended) is what is limited: 5 clients x 3 sessions pass under a limit of 3, the 4th of
    one client is refused, and a client naming another address in the header it sends
    gains nothing."""
    pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
    server = serve(test_dir, "--new-sessions-per-minute", "3", "--proxy", "127.0.0.1")
    with httpx.Client(base_url=server.url) as c:
        codes = [_start(c, f"c{k}p{i}", f"198.51.{k}.7") for k in range(5) for i in range(3)]
        assert codes == [200] * 15
        assert _start(c, "c0p3", "198.51.0.7") == 429
        # the client's own entry is left of the proxy's: it does not choose the address
        assert _start(c, "c0p4", "203.0.113.1, 198.51.0.7") == 429


def test_without_a_proxy_a_forwarded_header_is_not_believed(test_dir, serve):
    """The default trusts no proxy (uvicorn's own default trusted 127.0.0.1's header): a
    client cannot dodge its limit by naming other addresses."""
    pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
    server = serve(test_dir, "--new-sessions-per-minute", "3")
    with httpx.Client(base_url=server.url) as c:
        codes = [_start(c, f"x{i}", f"198.51.{i}.7") for i in range(5)]
    assert codes == [200, 200, 200, 429, 429]


def test_neighbouring_addresses_share_a_network_limit(test_dir, serve):
    """30 sessions from each of 127.0.0.10-19 made 300; a network (/24) now starts at most
    twice an address's limit."""
    pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
    server = serve(test_dir, "--new-sessions-per-minute", "3")
    codes = []
    for i in range(5):
        transport = httpx.HTTPTransport(local_address=f"127.0.0.{10 + i}")
        with httpx.Client(base_url=server.url, transport=transport) as c:
            codes += [_start(c, f"n{i}p{k}") for k in range(3)]
    assert codes.count(200) == 6 and codes[:6] == [200] * 6
    transport = httpx.HTTPTransport(local_address="127.0.1.10")  # another network
    with httpx.Client(base_url=server.url, transport=transport) as c:
        assert _start(c, "other") == 200


def test_a_malformed_proxy_is_one_message(test_dir):
    """`serve --proxy` with something that is no address: one line naming the option."""
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("adept-eval")
    command = [str(exe)] if exe.is_file() else [sys.executable, "-m", "adept_eval.cli"]
    r = subprocess.run([*command, "listening-test", "serve", str(test_dir), "--proxy",
                        "10.0.0.x"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stdout + r.stderr
    assert "--proxy 10.0.0.x: '10.0.0.x' is not an IP address" in r.stderr
