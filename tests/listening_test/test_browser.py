"""A real headless Chromium takes the whole listening test as a participant would.

Debian's ``chromium`` and ``chromium-driver`` via Selenium; skipped (with the reason) where they
are absent. Playback is sped up 16x in the page (``window.ADEPT_PLAYBACK_RATE``) so the test is
quick; everything else is what a participant does: consent, calibration tone, six headphone
trials, every sample played to its end, an answer per question, the completion code. A
screenshot of each page type is saved (``ADEPT_EVAL_SCREENSHOTS=DIR`` keeps copies) and checked.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
selenium = pytest.importorskip("selenium", reason="needs selenium (test extra)")

from adept_eval.listening_test.design import build_test, load_test
from testing.crowd import AnswerKey


def headphone_key(config, participant: str) -> list[int]:
    """The headphone check's right answers in the order ``participant`` hears the trials."""
    from adept_eval.listening_test.design import headphone_order

    return [config.headphone_answers[i] for i in headphone_order(config, participant)]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="Debian packages chromium and "
                                "chromium-driver are not installed")
TASKS = ["adept_propositional_attitude_female", "adept_syntactic_phrasing_female"]
RATE = 16


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--autoplay-policy=no-user-gesture-required",
                 "--window-size=900,760", f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def served(tmp_path, corpus, systems, serve):
    """A one-system test, built and served for real: (its folder, its server)."""
    out = tmp_path / "test"
    build_test(corpus, out, {"copy": systems["copy"]}, tasks=TASKS, seed=5,
               completion_code="C0MPL3TE", screenout_code="SCR33N")
    # the page plays audio RATE times faster than real time here: no listening time
    return out, serve(out, "--min-listening", "0")


def wait_for(driver, condition, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} on page "
                         f"{driver.find_element('id', 'app').get_attribute('data-page')}")


def page(driver) -> str:
    return driver.find_element("id", "app").get_attribute("data-page")


def shoot(driver, folder: Path, name: str, shots: dict) -> None:
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    shots[name] = (page(driver), path)
    keep = os.environ.get("ADEPT_EVAL_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / f"listening_test_{name}.png")


def play_all_and_wait(driver) -> None:
    driver.execute_script(f"window.ADEPT_PLAYBACK_RATE = {RATE};")
    buttons = driver.find_elements("css selector", "button.play")
    for b in buttons:
        b.click()
        wait_for(driver, lambda: "played" in b.get_attribute("class"), what="a sample to end")


def test_a_participant_completes_the_whole_test_in_chromium(browser, served, tmp_path):
    import httpx

    test_dir, server = served
    config = load_test(test_dir)
    key = AnswerKey(config)
    shots: dict = {}
    d = browser
    d.get(f"{server.url}/?PROLIFIC_PID=browser_p01&STUDY_ID=x&SESSION_ID=y")
    wait_for(d, lambda: page(d) == "consent", what="the consent page")
    start = d.find_element("id", "start")
    assert not start.is_enabled()
    shoot(d, tmp_path, "consent", shots)
    shown_code = d.find_element("id", "resume-code-shown").text  # for a change of device
    d.find_element("id", "agree").click()
    start.click()
    wait_for(d, lambda: page(d) == "headphone-intro", what="the headphone check")
    cont = d.find_element("css selector", "button.primary")
    assert not cont.is_enabled()
    play_all_and_wait(d)  # the calibration tone
    cont.click()
    for i, right in enumerate(headphone_key(config, "browser_p01")):
        wait_for(d, lambda: page(d) == "headphone", what="a headphone trial")
        radios = d.find_elements("css selector", "input[name=quiet]")
        assert all(not r.is_enabled() for r in radios)  # not before the tones were heard
        play_all_and_wait(d)
        if i == 0:
            shoot(d, tmp_path, "headphone_check", shots)
        radios[right].click()
        d.find_element("css selector", "button.primary").click()
    participant, token = d.execute_script("return [session.participant, session.token];")
    assert participant == "browser_p01"
    from adept_eval.listening_test.session import resume_code

    assert shown_code == resume_code(token)
    api = httpx.Client(base_url=server.url, headers={"X-Participant": participant,
                                                     "X-Session-Token": token})
    seen_designs, answered = set(), 0
    while True:
        wait_for(d, lambda: page(d) in ("question", "done"), what="a question")
        if page(d) == "done":
            break
        state = api.get("/api/state").json()
        item = state["item"]
        assert d.find_element("id", "progress-text").text == \
            f"{state['progress']['done']} of {state['progress']['total']} answered"
        radios = d.find_elements("css selector", "input[name=choice]")
        assert len(radios) == len(item["choices"]) and all(not r.is_enabled() for r in radios)
        assert len(d.find_elements("css selector", "button.play")) == len(item["audio"])
        play_all_and_wait(d)
        if item["design"] not in seen_designs:
            shoot(d, tmp_path, f"question_{item['design']}", shots)
            seen_designs.add(item["design"])
        wait_for(d, lambda: radios[0].is_enabled(), what="answers to unlock")
        radios[key.right(item)].click()
        d.find_element("id", "submit").click()
        answered += 1
        wait_for(d, lambda: api.get("/api/state").json()["progress"]["done"] == answered,
                 what="the answer to be stored")
    code = d.find_element("id", "completion-code").text
    shoot(d, tmp_path, "done", shots)
    assert code == "C0MPL3TE"
    assert seen_designs == {"multi", "single"}
    with sqlite3.connect(test_dir / "responses.sqlite") as db:
        rows = db.execute("SELECT kind, correct FROM responses WHERE participant=?",
                          (participant,)).fetchall()
        completed = db.execute("SELECT completed FROM participants WHERE participant=?",
                               (participant,)).fetchone()[0]
    assert len(rows) == answered == 20 + 2 and completed is not None
    assert all(correct for _, correct in rows)  # every click landed on the intended choice

    # a second participant without headphones is screened out, with the screen-out code
    d.delete_all_cookies()
    d.get(f"{server.url}/?PROLIFIC_PID=browser_p02")
    wait_for(d, lambda: page(d) == "consent", what="the consent page")
    d.find_element("id", "agree").click()
    d.find_element("id", "start").click()
    wait_for(d, lambda: page(d) == "headphone-intro", what="the headphone check")
    play_all_and_wait(d)
    d.find_element("css selector", "button.primary").click()
    for right in headphone_key(config, "browser_p02"):
        wait_for(d, lambda: page(d) == "headphone", what="a headphone trial")
        play_all_and_wait(d)
        d.find_elements("css selector", "input[name=quiet]")[(right + 1) % 3].click()
        d.find_element("css selector", "button.primary").click()
    wait_for(d, lambda: page(d) == "screened-out", what="the screen-out page")
    assert d.find_element("id", "completion-code").text == "SCR33N"
    shoot(d, tmp_path, "screened_out", shots)

    # another browser with the first participant's id gets a clear page, not their session;
    # the resume code shown to them at the start moves the session here
    d.delete_all_cookies()
    d.execute_script("localStorage.clear();")
    d.get(f"{server.url}/?PROLIFIC_PID=browser_p01")
    wait_for(d, lambda: page(d) == "in-use", what="the already-in-use page")
    shoot(d, tmp_path, "in_use", shots)
    d.find_element("id", "resume-code").send_keys("WRONG-CODE")
    d.find_element("id", "resume").click()
    wait_for(d, lambda: d.find_element("id", "resume-error").text, what="the refusal")
    assert page(d) == "in-use"
    d.find_element("id", "resume-code").clear()
    d.find_element("id", "resume-code").send_keys(shown_code)
    d.find_element("id", "resume").click()
    wait_for(d, lambda: page(d) == "done", what="the resumed session")
    assert d.find_element("id", "completion-code").text == "C0MPL3TE"

    # the participant id is read from whichever parameter the platform uses
    for name in ("participant", "workerId", "PARTICIPANT_ID"):
        d.get(f"{server.url}/?{name}=via_{name}")
        wait_for(d, lambda: page(d) == "consent", what=f"the consent page for {name}=")
        assert d.execute_script("return session.participant;") == f"via_{name}"

    expected = {"consent": "consent", "headphone_check": "headphone",
                "question_multi": "question", "question_single": "question", "done": "done",
                "screened_out": "screened-out", "in_use": "in-use"}
    assert {name: kind for name, (kind, _) in shots.items()} == expected
    for _, path in shots.values():
        assert path.stat().st_size > 5000  # a rendered page, not a blank image


def test_a_crowd_at_the_door_waits_for_a_place_instead_of_failing(served, browser, tmp_path):
    """A 429 on arrival (too many new sessions from one address at once) showed "Something went
    wrong". The page now says to keep it open and tries again, and the test starts once a
    place comes free (here after the minute of --new-sessions-per-minute 1)."""
    import httpx

    out, _ = served
    from testing.crowd import ServerProcess

    with ServerProcess(out, args=("--new-sessions-per-minute", "1")) as server:
        assert httpx.post(f"{server.url}/api/session",
                          json={"participant": "first"}).status_code == 200
        d = browser
        d.get(f"{server.url}/?PROLIFIC_PID=second")
        notice = wait_for(d, lambda: d.execute_script(
            "const n = document.getElementById('notice'); return n && n.textContent;"),
            what="the waiting notice")
        assert "keep this page open" in notice and page(d) != "error"
        shoot(d, tmp_path, "waiting", {})
        wait_for(d, lambda: page(d) == "consent", timeout=90, what="the consent page")


def test_the_admin_table_stays_in_its_box(served, browser, tmp_path):
    """The /admin table spilled out of the page's box (long task names, six columns in a
    box made for one question)."""
    out, _ = served
    from testing.crowd import ServerProcess

    with ServerProcess(out, env={"ADEPT_LISTENING_ADMIN_TOKEN": "t0ken"}) as server:
        d = browser
        d.get(f"{server.url}/admin?token=t0ken")
        wait_for(d, lambda: d.find_elements("css selector", "main.admin table"),
                 what="the admin table")
        box, table, page_width = d.execute_script(
            "const m = document.querySelector('main.admin').getBoundingClientRect();"
            "const t = document.querySelector('main.admin table').getBoundingClientRect();"
            "return [m.right, t.right, document.documentElement.scrollWidth];")
        d.save_screenshot(str(tmp_path / "admin.png"))
        keep = os.environ.get("ADEPT_EVAL_SCREENSHOTS")
        if keep:
            shutil.copy(tmp_path / "admin.png", Path(keep) / "admin.png")
        assert table <= box and page_width <= 900
