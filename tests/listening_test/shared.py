"""What the listening-test tests share: the design the app's tests serve, its admin token, a
participant's moves as the page makes them (through a Starlette ``TestClient``), and a wait
for a server started by hand."""

from __future__ import annotations

#: the tasks of the two-system design (``built`` in conftest.py): 20 + 15 + 10 questions
TASKS = ["adept_emotion_female", "adept_topical_emphasis_male", "adept_syntactic_phrasing_female"]
#: the admin token of the ``client`` fixture's app
ADMIN = "admin-secret-token"


def start(client, pid="p1"):
    """Arrive (or come back) as the page does: with the session's token once it has one.

    Args:
        client: A ``TestClient`` of the app.
        pid: The participant id.

    Returns:
        (the headers of the session's later calls, the state the app answered with).
    """
    tokens = client.__dict__.setdefault("tokens", {})
    r = client.post("/api/session", json={"participant": pid, "token": tokens.get(pid)})
    assert r.status_code == 200, r.text
    tokens[pid] = r.json()["token"]
    return {"X-Participant": pid, "X-Session-Token": r.json()["token"]}, r.json()["state"]


def to_questions(client, pid="p1"):
    """Arrive, consent and pass the headphone check.

    Args:
        client: A ``TestClient`` of the app.
        pid: The participant id.

    Returns:
        (the session's headers, the state at the first question).
    """
    h, _ = start(client, pid)
    state = client.post("/api/consent", json={"consent": True}, headers=h).json()["state"]
    r = client.post("/api/headphone", json={"answers": headphone_key(client, state)}, headers=h)
    assert r.json()["passed"] is True
    return h, r.json()["state"]


def headphone_key(client, state, fetch=True) -> list[int]:
    """The headphone check's right answers for the trials a state shows (each participant
    gets them in an order of their own), fetching the trials first as the page does.

    Args:
        client: A ``TestClient`` of the app.
        state: The state at the headphone check.
        fetch: Fetch the trials' tones first.

    Returns:
        The quiet tone of each trial, in the order shown.
    """
    config = client.app.state.config
    quiet = dict(zip(config.headphone_tokens, config.headphone_answers))
    trials = state["headphone"]["trials"]
    if fetch:
        for url in trials:
            assert client.get(url).status_code == 200
    return [quiet[url.split("?")[0].rsplit("/", 1)[-1]] for url in trials]


def answer(client, h, state, position=0, played=None, fetch=True):
    """Answer the current item as the page does: after fetching (playing) its samples.

    Args:
        client: A ``TestClient`` of the app.
        h: The session's headers.
        state: The state holding the current item.
        position: The presented position chosen.
        played: The ``played`` flags sent (default: every sample played).
        fetch: Fetch the item's samples first.

    Returns:
        The app's response to the answer.
    """
    it = state["item"]
    if fetch:
        for url in it.get("audio", ()):
            assert client.get(url).status_code == 200
    return client.post("/api/answer", headers=h, json={
        "item": it["index"], "choice": position,
        "played": played if played is not None else [True] * len(it["audio"])})


def wait_until_serving(url: str, tries: int) -> None:
    """Poll ``url``/healthz until a server started outside the ``serve`` fixture answers (a
    started process takes a moment), at most ``tries`` times, 0.1 s apart."""
    import threading

    import httpx

    for _ in range(tries):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            threading.Event().wait(0.1)


def headphone_answers(config, state, fetch=None) -> list[int]:
    """The headphone check's right answers for the trials a state shows, over HTTP (a real
    server): each participant hears the trials in an order of their own.

    Args:
        config: The test's design.
        state: The state at the headphone check.
        fetch: An ``httpx.Client`` to fetch the trials' tones with first (as the page does;
            the server takes no answer to tones it never sent), or None.

    Returns:
        The quiet tone of each trial, in the order shown.
    """
    quiet = dict(zip(config.headphone_tokens, config.headphone_answers))
    trials = state["headphone"]["trials"]
    if fetch is not None:
        for url in trials:
            assert fetch.get(url).status_code == 200
    return [quiet[url.split("?")[0].rsplit("/", 1)[-1]] for url in trials]
