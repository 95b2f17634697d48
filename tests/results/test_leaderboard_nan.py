"""A score that is not a number (NaN) is never ranked: ``stats.competition_ranks`` refuses it,
and the leaderboard shows such a row apart with the reason."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adept_eval.scoring import stats
from adept_eval.corpora.vstyle import CATEGORIES


def test_competition_ranks_refuses_nan():
    # 3.2 was ranked above 4.1 (a NaN compares false with everything, so sorting went wrong)
    with pytest.raises(ValueError, match="not a number"):
        stats.competition_ranks([3.2, math.nan, 4.1])
    assert stats.competition_ranks([3.2, 4.1, 4.1]) == [3, 1, 1]
    assert stats.competition_ranks([3.2, 4.1], higher_is_better=False) == [1, 2]


def _vstyle_run(folder: Path, system: str, score: float, failed: int) -> None:
    tasks = [f"vstyle_en_{c}" for c in CATEGORIES]
    results = {"vstyle_en": {"score,speech_judge": score}}
    for t in tasks:
        judged = 0 if math.isnan(score) else 10
        results[t] = {"score,speech_judge": score, "n,speech_judge": judged,
                      "n_failed,speech_judge": failed}
    data = {"results": results, "configs": {},
            "config": {"model": "audio-dir", "model_args": {"name": system}},
            "adept_eval": {"system": system, "version": "test", "suites": {"vstyle": {
                "tasks": tasks, "complete": True,
                "scorer": {"backend": "openai", "model": "judge-x"}, "corpus": {}}}}}
    (folder / system).mkdir(parents=True)
    (folder / system / "results_2026-01-01T00-00-00.json").write_text(
        json.dumps(data, allow_nan=True))


def test_a_vstyle_run_whose_judgements_all_failed_is_shown_apart(tmp_path):
    runs = tmp_path / "runs"
    _vstyle_run(runs, "low", 3.2, 0)
    _vstyle_run(runs, "failed", math.nan, 10)
    _vstyle_run(runs, "high", 4.1, 0)
    exe = Path(sys.executable).with_name("adept-eval")
    out = subprocess.run([str(exe), "leaderboard", str(runs), "-o", str(tmp_path / "board")],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert out.returncode == 0, out.stderr
    board = next((tmp_path / "board").glob("*.md")).read_text()
    ranked, _, apart = board.partition("## VStyle runs not ranked")
    rows = {line.split("|")[3].strip(): line for line in ranked.splitlines()
            if line.startswith("| ") and line.split("|")[3].strip() in ("low", "high", "failed")}
    assert set(rows) == {"low", "high"}, board
    assert rows["high"].split("|")[1].strip() == "1" and rows["low"].split("|")[1].strip() == "2"
    failed = [line for line in apart.splitlines() if line.startswith("| failed |")]
    assert failed and "no score" in failed[0], board


def test_a_vstyle_section_on_its_published_sample_says_so(tmp_path):
    """Runs over VStyle's published examples (metadata_sample.jsonl) are ranked among
    themselves (their corpus differs from the benchmark's), and the section says they are not
    VStyle results."""
    from adept_eval.results.leaderboard import build, heading, sections
    from adept_eval.results.runs import load_run

    for name, score in (("a", 3.0), ("b", 4.0)):
        _vstyle_run(tmp_path, name, score, 0)
        path = tmp_path / name / "results_2026-01-01T00-00-00.json"
        data = json.loads(path.read_text())
        data["adept_eval"]["suites"]["vstyle"]["corpus"] = {
            "name": "VStyle-en", "sha256": "cd" * 32, "file": "metadata_sample.jsonl",
            "synthetic": False, "sample": True}
        path.write_text(json.dumps(data))
    rows = build([load_run(tmp_path / n) for n in ("a", "b")])
    (members,), apart = sections(rows, "vstyle")
    assert not apart and {r.system for r in members} == {"a", "b"}
    assert heading(members, "vstyle").endswith(
        "VStyle's published sample (the project page's examples), not VStyle results")
    assert all(r.vstyle_sample for r in rows)
