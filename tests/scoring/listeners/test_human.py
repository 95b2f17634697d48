"""Human responses files as they arrive from real platforms and spreadsheets: every encoding a
user is likely to save, every malformed row reported with the file and line, before any audio;
and runs of people, recognised by the listener's kind (not its label, which also names the
responses file and counts): ranked together, and given no binomial interval without their
logged samples (people's responses are not independent trials)."""

import json
import math
import sys

import pytest

from adept_eval.cli import main
from adept_eval.corpora import spec
from adept_eval.corpora.questions import build_questions
from adept_eval.errors import ResponsesError
from adept_eval.results.leaderboard import build, heading, sections
from adept_eval.scoring.listeners.human import HumanListener
from conftest import run_lm_eval
from run_files import _results, _run

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


# ------------------------------------------------------------------ blinded ids from the export
MULTI = "adept_emotion_female"  # several stimuli per question: answers may name a stimulus


def _export(corpus, tmp_path, *extra):
    """What `adept-eval questions` writes, read back as rows."""
    import csv

    from adept_eval.cli import main

    out = tmp_path / "questions.csv"
    assert main(["questions", "-q", "--corpus", str(corpus.root), "-o", str(out),
                 "--tasks", f"{TASK},{MULTI}", *extra]) == 0
    with open(out, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _blinded_answers(export, path, wrong_every=3):
    """Responses keyed by blinded question ids; emotion answers name the chosen stimulus by its
    blinded id, the others give the letter. Every ``wrong_every``-th answer is wrong."""
    lines, right = ["participant,question_id,answer"], 0
    for i, row in enumerate(export):
        letters = [c.split(".", 1)[0] for c in row["choices"].split(" | ")]
        pick = letters.index(row["answer"])
        if i % wrong_every == 0:
            pick = (pick + 1) % len(letters)
        else:
            right += 1
        blinded = row["blinded_stimuli"].split(" | ")
        answer = blinded[pick] if row["task"] == MULTI else letters[pick]
        lines.append(f"p1,{row['blinded_question_id']},{answer}")
    path.write_text("\n".join(lines) + "\n")
    return right


def _score(listener, corpus):
    from adept_eval.corpora.questions import all_questions

    qs = [q for t, qs in all_questions(corpus).items() if t in (TASK, MULTI) for q in qs]
    answers = [listener.answer(q, {}) for q in qs]
    return sum(a.correct(q) for a, q in zip(answers, qs)), sum(len(a.responses) for a in answers)


def test_responses_keyed_by_the_exports_blinded_ids_are_scored(corpus, tmp_path):
    export = _export(corpus, tmp_path)
    path = tmp_path / "blinded.csv"
    right = _blinded_answers(export, path)
    assert 0 < right < len(export)
    listener = HumanListener(responses=str(path), corpus=corpus)
    assert _score(listener, corpus) == (right, len(export))


def test_a_studys_own_salt_comes_from_the_variable_salt_env_names(corpus, tmp_path,
                                                                  monkeypatch):
    salt = "our private study salt 7f3a"
    export = _export(corpus, tmp_path, "--salt", salt)
    path = tmp_path / "blinded.csv"
    right = _blinded_answers(export, path)
    # without the salt the ids match nothing, and the message says what to do
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    assert "salt_env=" in str(info.value) and salt not in str(info.value)
    with pytest.raises(ResponsesError, match="MY_STUDY_SALT is not set"):
        HumanListener(responses=str(path), salt_env="MY_STUDY_SALT", corpus=corpus)
    monkeypatch.setenv("MY_STUDY_SALT", salt)
    listener = HumanListener(responses=str(path), salt_env="MY_STUDY_SALT", corpus=corpus)
    assert _score(listener, corpus) == (right, len(export))
    assert salt not in json.dumps(listener.identity())


def test_blinded_and_real_ids_of_one_question_are_one_question(corpus, tmp_path):
    row, = [r for r in _export(corpus, tmp_path) if r["task"] == MULTI][:1]
    path = tmp_path / "r.csv"
    stimulus = row["blinded_stimuli"].split(" | ")[0]
    path.write_text("participant,question_id,answer\n"
                    f"p1,{row['question_id']},A\n"
                    f"P1,{row['blinded_question_id']},B\n"
                    f"p2,{stimulus},A\n")
    with pytest.raises(ResponsesError) as info:
        HumanListener(responses=str(path), corpus=corpus)
    msg = str(info.value)
    assert f"line 3: participant 'P1' answered {row['question_id']!r} again" in msg
    assert f"line 4: unknown question_id {stimulus!r}" in msg and "stimulus" in msg


def test_lm_eval_scores_blinded_responses_and_records_no_salt(use_corpus, tmp_path, monkeypatch):
    salt = "another private salt 91c2"
    monkeypatch.setenv("MY_STUDY_SALT", salt)
    export = [r for r in _export(use_corpus, tmp_path, "--salt", salt) if r["task"] == MULTI]
    path = tmp_path / "blinded.csv"
    right = _blinded_answers(export, path, wrong_every=2)
    out = run_lm_eval("adept-natural", [MULTI], metadata={
        "listener": "human", "responses": str(path), "salt_env": "MY_STUDY_SALT"})
    r = out["results"][MULTI]
    assert r["n,none"] == len(export) and r["acc,none"] == pytest.approx(right / len(export))
    assert salt not in json.dumps(out, default=str)


def test_a_file_answering_some_questions_says_how_many(corpus, tmp_path):
    """2 of the task's 20 questions answered: lm_eval reports n 2, so the run says in one line
    how many questions the file covers of how many, and which subcategories have no responses
    (their accuracy is undefined) - not a silent n 2 beside bare NaNs."""
    import os
    import subprocess

    from faults import console_script

    task = "adept_emotion_female"
    qs = build_questions(corpus, task)
    path = tmp_path / "answers.csv"
    path.write_text("participant,question_id,answer\n" + "".join(
        f"p1,{q.question_id},{q.answer_letter}\n" for q in qs[:2]))
    missing = sorted({q.target for q in qs} - {q.target for q in qs[:2]})
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "TQDM_DISABLE": "1",
           "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    done = subprocess.run([console_script("lm_eval"), "--model", "adept-natural", "--tasks", task,
                           "--metadata", f"listener=human,responses={path}"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line, = [x for x in done.stderr.splitlines() if "answers.csv has responses" in x]
    assert line.startswith("warning: answers.csv has responses to 2 of the 20 questions of "
                           f"{task}: the 18 without responses are left out of n"), line
    assert f"no responses at all for {', '.join(missing)}" in line
    # a file that answers every question asked warns of nothing
    full = tmp_path / "full.csv"
    full.write_text(_csv(qs, participants=("p1",)))
    assert HumanListener(responses=str(full), corpus=corpus).coverage_warning(qs) is None


# ----------------------------------------------------------------------------- runs of people
def _people(system: str, acc: float, participants: int, responses_file: str) -> dict:
    data = _results(system, {t: acc for t in spec.TASKS}, listener="human")
    data["adept_eval"]["suites"]["adept"]["scorer"] = {
        "listener": "human", "participants": participants, "responses": 165 * participants,
        "responses_file": responses_file}
    for t, r in data["results"].items():
        r["n,none"] = spec.TASKS[t].n_questions * participants
    return data


def test_people_runs_of_two_systems_share_one_ranked_section(tmp_path):
    runs = [_run(tmp_path, "sys-a", "2026-01-01T00-00-00", _people("sys-a", 0.8, 8, "ans-a.csv")),
            _run(tmp_path, "sys-b", "2026-01-01T00-00-01", _people("sys-b", 0.6, 10, "ans-b.csv")),
            _run(tmp_path, "machine", "2026-01-01T00-00-02",
                 _results("machine", {t: 0.7 for t in spec.TASKS}))]
    assert all(r.people for r in runs[:2]) and not runs[2].people
    rows = {r.system: r for r in build(runs)}
    ranked, apart = sections(list(rows.values()), "adept")
    assert not apart
    people = next(m for m in ranked if {r.system for r in m} == {"sys-a", "sys-b"})
    assert [r.figure("adept", "rank") for r in people] == [1, 2]
    assert "`human (participants may differ between runs)`" in heading(people, "adept")
    # no logged samples: people's responses are not independent trials, so no interval, and
    # no two-proportion test over them (it would pretend they were): the pair counts as tied
    for r in people:
        assert r.figure("adept", "ci_low") is None or math.isnan(r.figure("adept", "ci_low"))
        assert r.figure("adept", "rank_range") == "1-2"
        assert "not tested (people's runs" in r.figure("adept", "tie_method")
    # a machine listener's results alone: the exact interval at the largest design effect its
    # sentences can have (60 sentences of 165 questions), wider than over the questions
    machine = rows["machine"]
    assert machine.figure("adept", "rank") == 1
    assert 0.5 < machine.figure("adept", "ci_low") < 0.7 < machine.figure("adept", "ci_high")


def test_report_gives_people_without_samples_no_binomial_interval(tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    run = _run(tmp_path, "sys-a", "2026-01-01T00-00-00", _people("sys-a", 0.8, 8, "ans-a.csv"))
    assert main(["report", str(run.results_path)]) == 0
    out = capsys.readouterr().out
    pooled = next(line for line in out.splitlines() if line.strip().startswith("adept "))
    assert pooled.split()[-1] == "---", pooled
