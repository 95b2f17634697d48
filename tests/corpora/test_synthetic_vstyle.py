"""The synthetic VStyle (``corpora.synthetic_vstyle``, ``adept-eval make-synthetic --vstyle``):
VStyle's layout, readable by the VStyle tasks, marked synthetic, never written over a real copy;
and its run's report, whose overall score and intervals are whole numbers or a dash."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from adept_eval.cli import main
from adept_eval.corpora.synthetic_vstyle import ANSWERS, build_vstyle, is_synthetic
from adept_eval.corpora.vstyle import CATEGORIES, load_records, locate


def test_layout_records_and_answers(tmp_path):
    out = build_vstyle(tmp_path / "vs")
    folder = locate("en", out)
    records = load_records(folder)
    assert len(records) == 2 * sum(len(s) for s in CATEGORIES.values()) == 32
    assert {(r.category, r.subcategory) for r in records} == \
        {(c, s) for c, subs in CATEGORIES.items() for s in subs}
    answers = {p.stem for p in (out / ANSWERS).iterdir()}
    assert answers == {r.record_id for r in records}
    assert all(os.path.getsize(r.audio_path) > 1000 for r in records)
    assert is_synthetic(folder / "metadata.jsonl")
    before = {p.name: p.read_bytes() for p in (out / ANSWERS).iterdir()}
    build_vstyle(out)  # an earlier synthetic VStyle is written again, the same
    assert before == {p.name: p.read_bytes() for p in (out / ANSWERS).iterdir()}


def test_a_real_copy_is_never_written_over(tmp_path, capsys):
    real = tmp_path / "VStyle" / "en"
    real.mkdir(parents=True)
    line = {"instruct_id": "1", "instruct_text": "Say it.", "ability": "empathy/anger",
            "instruct_audio_path": "wav/x.wav"}
    (real / "metadata.jsonl").write_text(json.dumps(line) + "\n")
    assert not is_synthetic(real / "metadata.jsonl")
    assert main(["make-synthetic", "--vstyle", str(tmp_path / "VStyle")]) == 2
    assert "not a synthetic VStyle" in capsys.readouterr().err
    assert sorted(p.name for p in real.iterdir()) == ["metadata.jsonl"]


def test_a_run_whose_judgements_all_failed_reports_dashes_not_nan(tmp_path):
    """`report` printed `nan-nan` for the interval of a task whose judgements all failed, and
    no overall score at all; the overall now has its interval and n, and a figure that does not
    exist is a dash."""
    from faults import console_script
    from testing.judge_server import JudgeServer

    vs = build_vstyle(tmp_path / "vs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VSTYLE", "HF_"))}
    env["HF_HUB_OFFLINE"] = "1"
    with JudgeServer() as judge:
        judge.responder = lambda body, audios, texts: (
            "No verdict." if "empathy" in json.dumps(body) and "angry" not in texts[0] else
            "Fine.\n\nFinal score: [[4]]")
        done = subprocess.run(
            [console_script("lm_eval"), "--model", "audio-dir", "--model_args",
             f"path={vs / ANSWERS},name=s2s", "--tasks", "vstyle_en", "--metadata",
             f"vstyle_dir={vs}", f"judge_base_url={judge.url}", "judge_model=m",
             "judge_max_retries=0", "--output_path", str(tmp_path / "out"), "--log_samples"],
            capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "SYNTHETIC VStyle, not VStyle results" in done.stderr
    done = subprocess.run([console_script("adept-eval"), "report", str(tmp_path / "out")],
                          capture_output=True, text=True, env={**env, "COLUMNS": "80"},
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "nan" not in done.stdout, done.stdout
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()
            if line.strip().startswith(("vstyle_en_", "overall"))}
    assert rows["vstyle_en_empathy"][1:] == ["-", "-", "0", "8"], done.stdout
    assert rows["vstyle_en_role_play"][1:] == ["4.00", "4.00-4.00", "4", "0"]
    overall = " ".join(line for line in done.stdout.splitlines()
                       if "overall (en" in line or "judged in" in line or "empathy)" in line)
    # three categories judged (24 answers), empathy's 8 failed: no overall of the four, and
    # never the mean of the other three passed off as it
    assert overall.split()[-4:] == ["-", "-", "24", "8"], done.stdout
    assert "none judged in empathy" in " ".join(done.stdout.split())
    assert "SYNTHETIC stand-in corpus: not VStyle results" in done.stdout
