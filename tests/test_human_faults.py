"""Human responses files as they arrive from real platforms and spreadsheets: every encoding a
user is likely to save, every malformed row reported with the file and line, before any audio."""

import json
import sys

import pytest

from adept_eval.listeners.human import HumanListener, ResponsesError
from adept_eval.questions import build_questions
from conftest import run_lm_eval

TASK = "adept_topical_emphasis_female"


@pytest.fixture
def questions(corpus):
    return build_questions(corpus, TASK)


def _csv(questions, participants=("p0", "José"), right=True):
    lines = ["participant,task,question_id,answer"]
    for p in participants:
        for q in questions:
            answer = q.answer_letter if right else "ABC"[(q.answer + 1) % 3]
            lines.append(f"{p},{q.task},{q.question_id},{answer}")
    return "\r\n".join(lines) + "\r\n"


def _n(listener):
    return listener.identity()["responses"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp1252", "utf-16-le"])
def test_every_common_encoding_is_read(corpus, questions, tmp_path, encoding):
    path = tmp_path / "responses.csv"
    path.write_bytes(_csv(questions).encode(encoding))
    listener = HumanListener(responses=str(path), corpus=corpus)
    assert _n(listener) == 2 * len(questions)
    who = {r.participant for v in listener._by_question.values() for r in v}
    assert who == {"p0", "José"}


def test_undecodable_file_is_named(corpus, tmp_path):
    path = tmp_path / "responses.csv"
    path.write_bytes(b"participant,question_id,answer\n\x81\x8d\x8f,x,A\n")
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    assert str(path) in str(info.value) and "UTF-8" in str(info.value)


def test_jsonl_line_that_is_not_an_object(corpus, questions, tmp_path):
    q = questions[0]
    good = {"participant": "p1", "question_id": q.question_id, "answer": "A"}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps([good]) + "\n\n\"A\"\n")
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    msg = str(info.value)
    assert msg.startswith(str(path))
    assert "line 2: a list, not an object" in msg and "line 4: a string, not an object" in msg


def test_json_array_is_read_and_an_object_is_explained(corpus, questions, tmp_path):
    rows = [{"participant": "p1", "question_id": q.question_id, "answer": q.answer_letter}
            for q in questions]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rows, indent=2))
    assert _n(HumanListener(responses=str(path), corpus=corpus)) == len(questions)
    path.write_text(json.dumps({"responses": rows}))
    assert _n(HumanListener(responses=str(path), corpus=corpus)) == len(questions)
    path.write_text(json.dumps(rows[0]))
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    assert "holds a list of response objects" in str(info.value)
    assert "missing column" not in str(info.value)


def test_unclosed_csv_quote_is_reported_at_its_line(corpus, questions, tmp_path):
    q0, q1, q2 = questions[:3]
    path = tmp_path / "r.csv"
    path.write_text("participant,question_id,answer\n"
                    f"p1,{q0.question_id},A\n"
                    f'p1,{q1.question_id},"B\n'
                    f"p1,{q2.question_id},C\n")
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    msg = str(info.value)
    assert str(path) in msg and "line 3" in msg and "quote" in msg
    assert "None" not in msg


def test_participant_ids_are_normalised_so_duplicates_are_caught(corpus, questions, tmp_path):
    q = questions[0]
    path = tmp_path / "r.csv"
    path.write_text("participant,question_id,answer\n"
                    f"p1,{q.question_id},A\n"
                    f'"p1 ",{q.question_id},B\n'
                    f"P1,{q.question_id},C\n")
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    msg = str(info.value)
    assert "2 unusable responses" in msg
    assert "line 3: participant 'p1' answered" in msg and "line 4: participant 'P1'" in msg


def test_every_error_names_the_file(corpus, tmp_path):
    for name, content in (("a.csv", ""), ("b.csv", "who,what\nx,y\n"), ("c.json", "{oops")):
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(ResponsesError) as info:
            HumanListener(responses=str(path), corpus=corpus)
        assert str(path) in str(info.value), str(info.value)
    with pytest.raises(ResponsesError, match="missing"):
        HumanListener(responses=str(tmp_path / "none.csv"), corpus=corpus)


TTS = r'''
import shutil, sys, pathlib
pathlib.Path(sys.argv[4]).open("a").write(sys.argv[1] + "\n")
shutil.copy(sys.argv[2], sys.argv[3])
'''


def test_bad_responses_file_fails_before_any_synthesis(use_corpus, tmp_path):
    script = tmp_path / "tts.py"
    script.write_text(TTS)
    log = tmp_path / "calls.log"
    bad = tmp_path / "r.jsonl"
    bad.write_text('["not", "an", "object"]\n')
    args = {"command": f"{sys.executable} {script} {{text}} {{reference}} {{output}} {log}",
            "name": "copy-tts", "cache_dir": str(tmp_path / "cache")}
    with pytest.raises(ResponsesError, match="line 1"):
        run_lm_eval("tts-command", [TASK], model_args=args,
                    metadata={"listener": "human", "responses": str(bad)})
    assert not log.exists(), "the system synthesised audio before the responses were checked"
