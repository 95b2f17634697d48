"""``adept-eval agreement`` through the real executables: people's answers scored by ``lm_eval``'s
human listener, or read straight from the answers files, and the acoustic listener's runs of
the same two systems, the figures checked against the answers written; and refusals as one
message naming the file or option."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from faults import console_script
from run_files import write_answers_run

TASK = "adept_marked_tonicity_female"


def _run(exe, args, cwd, env):
    return subprocess.run([console_script(exe), *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=600)


@pytest.fixture
def env(corpus, tmp_path):
    return {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "TQDM_DISABLE": "1",
            "ADEPT_EVAL_HOME": str(tmp_path / "home")}


def _answers(corpus, path, right_share: dict[str, int]):
    """Four participants' answers to every question of TASK: participant i answers right when
    i < right_share[the question's position's parity], else the first wrong letter.

    Returns:
        How many answers are right, how many there are, and question id -> letters chosen.
    """
    from adept_eval.corpora.questions import LETTERS, all_questions

    rows = ["participant,task,question_id,answer"]
    counts = {"right": 0, "all": 0, "chosen": {}}
    for n, q in enumerate(all_questions(corpus)[TASK]):
        wrong = next(x for x in LETTERS[:q.n_choices] if x != q.answer_letter)
        for i in range(4):
            ok = i < right_share[n % 2]
            rows.append(f"p{i},{TASK},{q.question_id},{q.answer_letter if ok else wrong}")
            counts["right"] += ok
            counts["all"] += 1
            counts["chosen"].setdefault(q.question_id, []).append(
                q.answer_letter if ok else wrong)
    path.write_text("\n".join(rows) + "\n")
    return counts


def _listener_letters(folder):
    """question id -> the letter the listener chose (None: failed), from its logged samples."""
    (samples,) = folder.rglob(f"samples_{TASK}_*.jsonl")
    out = {}
    for line in samples.read_text().splitlines():
        record = json.loads(line)["acc"]
        record = record[0] if isinstance(record, list) else record
        out[record["question_id"]] = (record["answer"] or [None])[0]
    return out


def test_agreement_of_lm_eval_runs_through_the_executables(corpus, systems, tmp_path, env):
    """Two systems heard by people and scored by the acoustic listener: the command pairs each
    listener run with its system's people's run, and its agreement with each person is the
    share of people's answers that equal the listener's logged answer, counted here."""
    natural = _answers(corpus, tmp_path / "answers-natural.csv", {0: 4, 1: 3})
    flat = _answers(corpus, tmp_path / "answers-flat.csv", {0: 2, 1: 1})
    flat_args = ["--model_args", f"path={systems['flat']},name=flat"]
    for model, args, answers in (("adept-natural", [], "answers-natural.csv"),
                                 ("audio-dir", flat_args, "answers-flat.csv")):
        for out, extra in (("people/", ["--metadata", "listener=human", f"responses={answers}"]),
                           ("out/", [])):
            done = _run("lm_eval", ["--model", model, *args, "--tasks", TASK, "--output_path",
                                    out, "--log_samples", *extra], tmp_path, env)
            assert done.returncode == 0, done.stderr[-3000:]
    done = _run("adept-eval", ["agreement", "people/", "out/", "--json", "agreement.json"],
                tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "agrees with each person" in done.stdout and "wrote agreement.json" in done.stdout
    assert "only 2 systems a rank correlation says little" in done.stdout
    result = json.loads((tmp_path / "agreement.json").read_text())
    (entry,) = result["listeners"]
    assert entry["listener"].startswith("acoustic")
    by_system = entry["systems"]
    assert set(by_system) == {"adept-natural", "flat"}
    for name, counts in (("adept-natural", natural), ("flat", flat)):
        pooled = by_system[name]["pooled"]
        letters = _listener_letters(tmp_path / "out" / name)
        matches = sum(c == letters[q] for q, chosen in counts["chosen"].items() for c in chosen)
        assert pooled["responses"] == counts["all"] and pooled["participants"] == 4
        assert pooled["acc_people"] == pytest.approx(counts["right"] / counts["all"])
        assert pooled["per_participant"]["agreement"] == pytest.approx(matches / counts["all"])
        assert pooled["questions"] == 10 and pooled["sentences"] == 5
        each = pooled["per_participant"]
        assert each["ci_low"] <= each["agreement"] <= each["ci_high"]
    # the listener answers its own references right and a system without prosody less often
    assert by_system["adept-natural"]["pooled"]["acc_machine"] == 1.0
    assert by_system["flat"]["pooled"]["acc_machine"] < 1.0
    ranking = entry["ranking"]
    assert [s["system"] for s in ranking["systems"]] == ["adept-natural", "flat"]
    assert ranking["kendall_tau_b"] == 1.0 and ranking["smallest_p"] == 0.5
    # the exported answers read directly give the same figures as their lm_eval runs
    done = _run("adept-eval", ["agreement", "out/", "--responses",
                               "adept-natural=answers-natural.csv", "flat=answers-flat.csv",
                               "--json", "direct.json"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    direct = json.loads((tmp_path / "direct.json").read_text())["listeners"][0]
    for name in ("adept-natural", "flat"):
        assert direct["systems"][name]["people"] == f"answers-{name.removeprefix('adept-')}.csv"
        for figure in ("pooled", "tasks"):
            assert direct["systems"][name][figure] == by_system[name][figure]
    assert direct["ranking"] == ranking


def test_a_refusal_is_one_message_naming_the_file(tmp_path, env):
    questions = [(TASK, f"{TASK}/q{i}", f"s{i}", "A", [("p1", "A"), ("p2", "B")])
                 for i in range(3)]
    write_answers_run(tmp_path, "people/a", "a", questions, people=True)
    other = write_answers_run(tmp_path, "out/b", "b", [(t, q, s, r, [("", "A")])
                                                       for t, q, s, r, _ in questions],
                              people=False)
    done = _run("adept-eval", ["agreement", "people", "out"], tmp_path, env)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error:") and "Traceback" not in done.stderr
    message = " ".join(lines)
    assert str(other.relative_to(tmp_path)) in message
    assert "no people's answers to 'b' are given" in message


def test_responses_must_be_system_equals_file(tmp_path, env):
    done = _run("adept-eval", ["agreement", "out", "--responses", "answers.csv"], tmp_path, env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--responses answers.csv: give SYSTEM=FILE" in done.stderr
