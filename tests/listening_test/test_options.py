"""The listening test's numeric options and its address: a value that cannot work is one message
naming the option before anything is built or served, never a test that misbehaves.

Found by using the commands: ``serve --port 99999`` printed that port's URL and listened on
34463 (99999 mod 65536); ``build --match-loudness nan`` wrote every stimulus as full-scale noise;
``--min-catch-correct 5`` excluded every participant; ``--max-participants -1`` turned everyone
away; a port in use printed the URL, then uvicorn's own error, and exited with status 3."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys

import pytest

from adept_eval.cli import build_parser
from adept_eval.errors import DesignError
from adept_eval.listening_test.design import build_test

TASK = "adept_syntactic_phrasing_female"


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("opts") / "test"
    build_test(corpus, out, {"natural": None}, tasks=[TASK], seed=1)
    return out


@pytest.mark.parametrize("command, option, value, expected", [
    ("serve", "--port", "99999", "must be at most 65535"),
    ("serve", "--port", "0", "must be at least 1"),
    ("serve", "--port", "-1", "must be at least 1"),
    ("serve", "--max-participants", "-1", "must be at least 1"),
    ("serve", "--new-sessions-per-minute", "0", "must be at least 1"),
    ("serve", "--audio-cache-mb", "nan", "not a number"),
    ("serve", "--mirror-every", "0", "must be more than 0"),
    ("build", "--min-catch-correct", "5", "must be at most 1"),
    ("build", "--catch-per-task", "-1", "must be at least 0"),
    ("build", "--match-loudness", "nan", "not a number"),
    # -200 built a silent test without a word; 5 was refused naming match_loudness=5.0
    ("build", "--match-loudness", "-200", "must be at least -70"),
    ("build", "--match-loudness", "5", "must be at most 0"),
    ("build", "--match-loudness", "0", "must be below 0"),
])
def test_a_number_that_cannot_work_is_one_message(command, option, value, expected, built,
                                                  tmp_path, capsys):
    """Parsed only (the command is not run: on the old code serve would have served)."""
    target = [str(tmp_path / "systems"), "-o", str(tmp_path / "new")] if command == "build" \
        else [str(built)]
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["listening-test", command, *target, option, value])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: expected" in err and expected in err and "Traceback" not in err


@pytest.mark.parametrize("kw, expected", [
    ({"match_loudness": math.nan}, "match_loudness=nan: a speech level in dBFS below 0"),
    ({"match_loudness": 3.0}, "match_loudness=3.0: a speech level in dBFS below 0"),
    ({"match_loudness": -200.0}, "match_loudness=-200.0: .* at least -70"),
    ({"min_catch_correct": 1.5}, "min_catch_correct=1.5: a share"),
])
def test_build_test_refuses_levels_and_shares_that_cannot_work(kw, expected, corpus, tmp_path):
    """The Python API too: NaN made every stimulus full-scale noise, and a level at or above
    full scale had every stimulus lowered on its own - not matched - while the test said so."""
    with pytest.raises(DesignError, match=expected):
        build_test(corpus, tmp_path / "t", {"natural": None}, tasks=[TASK], **kw)
    assert not (tmp_path / "t").exists()


def test_serve_on_a_port_in_use_is_one_message_before_the_url(built, tmp_path):
    pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "adept_eval.cli", "listening-test", "serve", str(built),
             "--port", str(port)], capture_output=True, text=True, timeout=120,
            env={**os.environ, "ADEPT_LISTENING_ADMIN_TOKEN": ""})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (f"error: --host 127.0.0.1 --port {port}: cannot listen "
                                   "there (Address already in use)")
    assert "Listening test at" not in done.stdout


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_responses_database_is_one_message_naming_it(damage, built, tmp_path):
    """status, export, report and serve said "unexpected DatabaseError ... This is a bug in
    adept-eval" (exit 3); serve printed its URL first."""
    import shutil
    import sqlite3

    from adept_eval.listening_test.store import Store

    test = tmp_path / "test"
    shutil.copytree(built, test)
    db = test / "responses.sqlite"
    if damage == "garbage":
        db.write_bytes(b"this is not a database at all" * 200)
    else:
        store = Store(db, sync_every=0)
        store.close()
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE filler (x)")
        con.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,)] * 400)
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        db.write_bytes(db.read_bytes()[:len(db.read_bytes()) // 2])
    for args in (["status", str(test)], ["export", str(test), "-o", str(tmp_path / "a.csv")],
                 ["report", str(test)], ["serve", str(test), "--port", "1"]):
        done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "listening-test", *args],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "ADEPT_LISTENING_ADMIN_TOKEN": ""})
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.startswith(f"error: {db}: the responses database is damaged"), \
            (args, done.stderr)
        assert "Listening test at" not in done.stdout and "bug" not in done.stderr


def test_build_reserves_natural_and_tasks_take_one_comma_separated_value(corpus, tmp_path):
    """`build natural=sys --natural` dropped the user's system; `build natural=sys` labelled a
    TTS system as the natural speech; `build --tasks T copy=sys` took the folder for a task."""
    from adept_eval.corpora.corpus import load_corpus

    folder = tmp_path / "sys_copy"
    folder.mkdir()

    def build(*args):
        return subprocess.run(
            [sys.executable, "-m", "adept_eval.cli", "listening-test", "build", "--corpus",
             str(corpus.root), *args], capture_output=True, text=True, timeout=300,
            cwd=tmp_path)

    for args in ((f"natural={folder}", "--natural"), (f"natural={folder}",)):
        done = build(*args, "-o", str(tmp_path / "t"))
        assert done.returncode == 2, done.stderr
        assert "the system name 'natural' is reserved for ADEPT's natural recordings" in \
            done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t").exists()
    done = build("--tasks", TASK, "--natural", "-o", str(tmp_path / "t2"), "--seed", "1")
    assert done.returncode == 0, done.stderr
    done = build("--tasks", f"{TASK},adept_emotion_female", "--natural", "-o",
                 str(tmp_path / "t3"), "--seed", "1")
    assert done.returncode == 0, done.stderr
    from adept_eval.listening_test.design import load_test

    assert load_test(tmp_path / "t3").tasks == (TASK, "adept_emotion_female")
    # the old spelling: a task where a folder goes is named as such
    done = build("--tasks", TASK, "adept_emotion_female", "--natural", "-o", str(tmp_path / "t4"))
    assert done.returncode == 2 and "adept_emotion_female: an ADEPT task given where a " \
        "system's folder goes" in done.stderr, done.stderr
    # the reviewer's command: the folder after --tasks is a system, not a task
    done = build("--tasks", TASK, f"copy={folder}", "-o", str(tmp_path / "t5"))
    assert "unknown ADEPT task" not in done.stderr and str(folder) in done.stderr, done.stderr


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "adept_eval.cli", "listening-test", *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ADEPT_LISTENING_ADMIN_TOKEN": ""})


def _copy(built, tmp_path):
    import shutil

    test = tmp_path / "test"
    shutil.copytree(built, test)
    return test


def _foreign_answers(db):
    """A responses database holding another test's answers (another task's question)."""
    from adept_eval.listening_test.store import ResponseRow, Store

    other = "adept_emotion_female"
    store = Store(db, sync_every=0)
    store.create_participant("p1", lambda arrival: {
        "seed": 1, "index": arrival, "systems": {other: "natural"}, "task_order": [other],
        "items": [{"key": f"{other}/ad00_0000/anger", "kind": "question", "task": other,
                   "system": "natural", "question_id": f"{other}/ad00_0000/anger",
                   "audio": ["0123456789abcdef01234567"]}]})
    store.add_response(ResponseRow("p1", f"{other}/ad00_0000/anger", "question", other,
                                   "natural", f"{other}/ad00_0000/anger", 0, 0, True, (0, 1),
                                   900, 1.0e9), completes=True)
    store.close()


def test_another_tests_responses_are_one_message_and_build_refuses_their_folder(
        built, corpus, tmp_path):
    """A folder rebuilt over another test's responses.sqlite (or another test's test.json
    copied over a folder with answers): report, status and export said "unexpected KeyError:
    'adept_emotion_female/ad00_0000/anger' ... This is a bug" (export wrote them out)."""
    test = _copy(built, tmp_path)
    db = test / "responses.sqlite"
    _foreign_answers(db)
    for args in (["status", str(test)], ["export", str(test), "-o", str(tmp_path / "a.csv")],
                 ["report", str(test)], ["serve", str(test), "--port", "1"],
                 ["plan", "--pilot", str(test), "--difference", "0.1"]):
        done = _cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.startswith(f"error: {db}: its responses do not belong to this "
                                      "test's design (1 task not in it"), (args, done.stderr)
        assert "question id not in it, e.g. adept_emotion_female/ad00_0000/anger" in \
            done.stderr and "bug" not in done.stderr and "Traceback" not in done.stderr
        assert "Listening test at" not in done.stdout
    assert not (tmp_path / "a.csv").exists()

    # build refuses a folder that holds a responses database, before writing anything
    folder = tmp_path / "rebuilt"
    folder.mkdir()
    _foreign_answers(folder / "responses.sqlite")
    done = _cli("build", "--corpus", str(corpus.root), "--natural", "--tasks", TASK, "-o",
                str(folder))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"error: {folder / 'responses.sqlite'}: {folder} already holds a responses database "
        "(another test's answers); build the test in another folder, or move the database "
        "away first")
    assert not (folder / "test.json").exists() and not (folder / "audio").exists()


@pytest.mark.parametrize("tables, problem", [
    ("CREATE TABLE responses(x)", "no table participants"),
    ("CREATE TABLE participants(x); CREATE TABLE responses(x)",
     "table participants has no column participant, arrival, token, plan, started, "
     "consented, headphone, headphone_passed, completed"),
    ("CREATE TABLE notes(x)", "no table participants or responses"),
])
def test_an_sqlite_file_that_is_not_a_responses_database_is_one_message(tables, problem, built,
                                                                         tmp_path):
    """status, export and report said "unexpected OperationalError: no such column:
    participant ... This is a bug"; serve started and created sessions in it."""
    import sqlite3

    test = _copy(built, tmp_path)
    db = test / "responses.sqlite"
    con = sqlite3.connect(db)
    con.executescript(tables)
    con.close()
    for args in (["status", str(test)], ["export", str(test), "-o", str(tmp_path / "a.csv")],
                 ["report", str(test)], ["serve", str(test), "--port", "1"],
                 ["plan", "--pilot", str(test), "--difference", "0.1"]):
        done = _cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.strip() == (f"error: {db}: not a listening test's responses "
                                       f"database ({problem}); move it away to start an "
                                       "empty one"), (args, done.stderr)
        assert "Listening test at" not in done.stdout
    con = sqlite3.connect(db)  # refused before anything was written into it
    names = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    journal = con.execute("PRAGMA journal_mode").fetchone()[0]
    con.close()
    assert names == sorted(t.split("(")[0].split()[-1] for t in tables.split(";"))
    assert journal == "delete"  # not switched to WAL (which rewrites the file's header)
    assert db.read_bytes()[18:20] == b"\x01\x01"


def test_a_responses_database_without_the_later_fetched_table_is_still_read(built, tmp_path):
    """Databases written before `fetched` existed are upgraded, not refused."""
    import sqlite3

    from adept_eval.listening_test.store import Store

    test = _copy(built, tmp_path)
    db = test / "responses.sqlite"
    Store(db, sync_every=0).close()
    con = sqlite3.connect(db)
    con.execute("DROP TABLE fetched")
    con.commit()
    con.close()
    Store(db, sync_every=0).close()
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM fetched").fetchone() == (0,)
    con.close()


def _empty_responses(built, tmp_path):
    from adept_eval.listening_test.store import Store

    test = _copy(built, tmp_path)
    Store(test / "responses.sqlite", sync_every=0).close()
    return test


def test_export_to_a_folder_is_one_message_and_leaves_no_temporary_file(built, tmp_path,
                                                                        capsys):
    """`export T -o T` printed "error: T.tmp -> T: Is a directory" and left T.tmp behind."""
    from adept_eval.cli import main

    test = _empty_responses(built, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for target in (test, tmp_path):
        assert main(["listening-test", "export", str(test), "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.strip() == (f"error: {target}: a folder; -o names the responses file to "
                               f"write, e.g. {target / 'responses.csv'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not list(tmp_path.rglob("*.tmp"))
    # a participants file that cannot be written: the responses file's .tmp is not left either
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "r_participants.csv").mkdir()
    assert main(["listening-test", "export", str(test), "-o", str(tmp_path / "out" / "r.csv")]) \
        == 2
    assert "r_participants.csv: a folder" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r_participants.csv"]


def test_a_report_without_charts_removes_an_earlier_reports_charts(built, tmp_path, capsys):
    """A report drawing no chart (no responses) left the earlier run's charts beside its
    report.json with n=0."""
    from adept_eval.cli import main

    test = _empty_responses(built, tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    (out / f"{TASK}.png").write_bytes(b"an earlier report's chart")
    (out / "notes.png").write_bytes(b"not one of the report's")
    assert main(["listening-test", "report", str(test), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["notes.png", "report.json"]
    assert capsys.readouterr().out.rstrip().endswith(f"written: {out / 'report.json'}")


def test_report_says_when_incomplete_participants_are_included(built, tmp_path, capsys):
    """With --include-incomplete the header still said "over included participants"."""
    from adept_eval.cli import main

    test = _empty_responses(built, tmp_path)
    assert main(["listening-test", "report", str(test), "-o", str(tmp_path / "r"),
                 "--include-incomplete"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(the tutorial's step 4) over included participants and incomplete ones " \
        "(--include-incomplete), with 95% intervals" in out
    assert main(["listening-test", "report", str(test), "-o", str(tmp_path / "r")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(the tutorial's step 4) over included participants, with 95% intervals" in out
