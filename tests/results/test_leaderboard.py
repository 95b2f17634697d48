"""The leaderboard: rank ranges (which systems are statistically tied) through the shell on
complete runs made through `lm_eval`, in every output and on the Hub; a score that is not a
number (NaN) never ranked but shown apart with the reason; and every source named to
`adept-eval leaderboard` holding runs, a run reached through two sources counted once."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import adept_eval.results.leaderboard as leaderboard_module

from adept_eval.cli import main
from adept_eval.corpora import spec
from adept_eval.corpora.vstyle import CATEGORIES
from adept_eval.errors import PublishError
from adept_eval.results.leaderboard import leaderboard
from adept_eval.results.runs import find_runs
from adept_eval.scoring import stats
from adept_eval.suites import SUITES, Metric, Suite
from run_files import _results
from run_files import _run as _results_run
from testing.hub_server import HubServer


def _run(args, env, cwd):
    done = subprocess.run(args, capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                          cwd=cwd, timeout=900)
    assert done.returncode == 0, f"{args[:3]}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _exe(name):
    return shutil.which(name) or name


@pytest.fixture(scope="module")
def full_runs(tmp_path_factory, synthetic_root, systems):
    """Four complete ADEPT runs with logged samples: a system that copies the references'
    prosody, the very same samples under another name (a certain tie), one that copies half of
    them and one with flat prosody."""
    tmp = tmp_path_factory.mktemp("ties")
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_root),
           "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    for name, system in (("copy", "copy"), ("copy-again", "copy"), ("partial", "partial"),
                         ("flat", "flat")):
        _run([_exe("lm_eval"), "--model", "audio-dir", "--model_args",
              f"path={systems[system]},name={name}", "--tasks", "adept", "--output_path",
              str(tmp / "out"), "--log_samples"], env, tmp)
    return tmp, env


def _expected_ranges(comparison: dict) -> dict[str, str]:
    """Rank ranges written out from `adept-eval compare`'s Holm-adjusted pooled p-values: a
    system's best rank is 1 + the systems significantly better, its worst the number of
    systems minus those significantly worse."""
    systems = [r["system"] for r in comparison["runs"]]
    acc, better, worse = {}, {s: 0 for s in systems}, {s: 0 for s in systems}
    for pair in comparison["pairs"]:
        cell = pair["adept"]["pooled"]
        acc[pair["a"]], acc[pair["b"]] = cell["acc_a"], cell["acc_b"]
        if cell["p_adjusted"] < 0.05:
            hi, lo = (pair["a"], pair["b"]) if cell["acc_difference"] > 0 else (pair["b"], pair["a"])
            better[lo] += 1
            worse[hi] += 1
    out = {}
    for s in systems:
        low, high = 1 + better[s], len(systems) - worse[s]
        out[s] = str(low) if low == high else f"{low}-{high}"
    return out


def test_rank_ranges_in_every_output_and_on_the_hub(full_runs):
    tmp, env = full_runs
    out = tmp / "out"
    _run([_exe("adept-eval"), "compare", *(str(out / s) for s in
                                           ("copy", "copy-again", "partial", "flat")),
          "--json", str(tmp / "all.json")], env, tmp)
    expected = _expected_ranges(json.loads((tmp / "all.json").read_text()))
    assert expected["copy"] == expected["copy-again"] == "1-2"  # identical samples
    with HubServer() as hub:
        hub_env = {**env, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
                   "HF_TOKEN": hub.token, "HF_HUB_DISABLE_TELEMETRY": "1",
                   "HF_HOME": str(tmp / "hf")}
        _run([_exe("adept-eval"), "leaderboard", str(out), "-o", str(tmp / "lb"), "--push",
              "adept-lab/leaderboard"], hub_env, tmp)
        pushed = hub.repo("adept-lab/leaderboard").files
    rows = {r["system"]: r for r in csv.DictReader(open(tmp / "lb" / "leaderboard.csv"))}
    assert {s: rows[s]["adept_rank_range"] for s in expected} == expected
    assert "paired by question (cluster-robust t test over sentences)" in rows["flat"]["adept_tie_method"]
    assert "Holm-adjusted over 6 pairs" in rows["flat"]["adept_tie_method"]
    assert rows["copy"]["adept_rank"] == rows["copy-again"]["adept_rank"] == "1"
    table = pq.read_table(tmp / "lb" / "leaderboard.parquet").to_pylist()
    assert {r["system"]: r["adept_rank_range"] for r in table} == expected
    md = (tmp / "lb" / "leaderboard.md").read_text()
    assert "| rank | rank range | system |" in md
    assert "| 1 | 1-2 | copy |" in md and "| 1 | 1-2 | copy-again |" in md
    assert (tmp / "lb" / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    # publish (the leaderboard's Hub upload) carries the same column and says what it means
    hub_table = pq.read_table(io.BytesIO(pushed["leaderboard.parquet"])).to_pylist()
    assert {r["system"]: r["adept_rank_range"] for r in hub_table} == expected
    assert b"rank range" in pushed["README.md"] and b"| 1 | 1-2 | copy |" in pushed["README.md"]


def _console_ranks(stdout: str) -> dict[str, tuple[str, str]]:
    """(rank, rank range) per system from the console table's rows: rank, range, system, acc."""
    import re

    shown = re.sub(r"\x1b\[[0-9;]*m", "", stdout)
    return {m.group(3): (m.group(1), m.group(2)) for m in re.finditer(
        r"^\s*(\d+)\s+(\d+(?:-\d+)?)\s+(\S+)\s+[01]\.\d{3}\s", shown, re.M)}


def test_console_table_shows_the_rank_ranges(full_runs):
    """`adept-eval leaderboard` prints each system's rank range beside its rank: the two runs of
    the very same samples share "1-2", as in the CSV; on an 80-column terminal nothing is cut."""
    import re

    tmp, env = full_runs
    done = _run([_exe("adept-eval"), "leaderboard", str(tmp / "out"), "-o",
                 str(tmp / "lb-console")], env, tmp)
    shown = _console_ranks(done.stdout)
    rows = {r["system"]: r for r in csv.DictReader(open(tmp / "lb-console" / "leaderboard.csv"))}
    assert set(shown) == {"copy", "copy-again", "partial", "flat"}, done.stdout
    assert shown["copy"] == shown["copy-again"] == ("1", "1-2"), done.stdout
    assert {s: shown[s] for s in rows} == {
        s: (r["adept_rank"], r["adept_rank_range"]) for s, r in rows.items()}
    assert shown["flat"][1] == "4", done.stdout  # flat prosody: worse than every other
    assert "rank range" in done.stdout and "Holm-adjusted over 6 pairs" in done.stdout
    tty = subprocess.run([_exe("adept-eval"), "leaderboard", str(tmp / "out"), "-o",
                          str(tmp / "lb-console80")], capture_output=True, text=True, cwd=tmp,
                         env={**env, "COLUMNS": "80", "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"},
                         timeout=900)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", tty.stdout)
    assert tty.returncode == 0 and "…" not in plain, plain
    assert _console_ranks(tty.stdout) == shown, plain
    assert re.search(r"\brank\s*\n?.*\brange\b", plain), plain  # the header, maybe folded


def test_rank_ranges_without_samples_say_how_they_were_decided(full_runs):
    tmp, env = full_runs
    bare = tmp / "bare"
    if not bare.exists():
        shutil.copytree(tmp / "out", bare)
        for f in bare.rglob("samples_*.jsonl"):
            f.unlink()
    _run([_exe("adept-eval"), "leaderboard", str(bare), "-o", str(tmp / "lb-bare")], env, tmp)
    rows = {r["system"]: r for r in csv.DictReader(open(tmp / "lb-bare" / "leaderboard.csv"))}
    from adept_eval.results.suite_boards import UNPAIRED_ACCURACY

    # bounded by the sentences' clustering (the runs' results give the tasks' question counts)
    assert all(UNPAIRED_ACCURACY in r["adept_tie_method"] for r in rows.values())
    assert rows["copy"]["adept_rank_range"] == rows["copy-again"]["adept_rank_range"]
    assert rows["copy"]["adept_rank_range"].startswith("1")


def test_tie_brackets_by_hand():
    from adept_eval.results.board import Row
    from adept_eval.results.leaderboard import tie_brackets

    rows = [Row(s, "r") for s in "abcd"]  # in the chart's order
    ties = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}, "d": set()}
    for r in rows:
        r.standing("adept").tied = ties[r.system]
    assert tie_brackets(rows, "adept") == [(0, 1), (1, 2)]
    rows[0].standing("adept").tied = {"b", "c"}
    rows[2].standing("adept").tied = {"a", "b"}
    assert tie_brackets(rows, "adept") == [(0, 2)]  # (1, 2) lies inside (0, 2)


def test_publishing_a_run_changes_no_later_leaderboard(full_runs, tmp_path):
    """`publish` prepares its upload in <run folder>/hub_upload/ (a results.json without the
    logged samples beside it); a later `leaderboard` of the same folders must not count that
    copy as a run: the same rows, the same paired tests, the same files, byte for byte."""
    tmp, env = full_runs
    out = tmp_path / "out"
    shutil.copytree(tmp / "out", out)
    before = _run([_exe("adept-eval"), "leaderboard", str(out), "-o", str(tmp_path / "lb")],
                  env, tmp_path)
    written = {f: (tmp_path / "lb" / f).read_bytes() for f in ("leaderboard.md",
                                                                "leaderboard.csv")}
    assert "paired by question (cluster-robust t test over sentences)" in before.stdout
    with HubServer() as hub:
        hub_env = {**env, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
                   "HF_TOKEN": hub.token, "HF_HUB_DISABLE_TELEMETRY": "1",
                   "HF_HOME": str(tmp_path / "hf")}
        for system in ("copy", "flat"):
            _run([_exe("adept-eval"), "publish", str(out / system), "--repo",
                  "alice/adept-results"], hub_env, tmp_path)
    assert list((out / "copy" / "hub_upload").rglob("results.json"))  # staged where documented
    after = _run([_exe("adept-eval"), "leaderboard", str(out), "-o", str(tmp_path / "lb")],
                 env, tmp_path)
    assert after.stdout == before.stdout
    assert {f: (tmp_path / "lb" / f).read_bytes() for f in written} == written


# ----------------------------------------------------------- a score that is not a number
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


def _board_markdown(runs, tmp_path) -> str:
    """The leaderboard of ``runs`` through the real ``adept-eval leaderboard``, as markdown."""
    exe = Path(sys.executable).with_name("adept-eval")
    out = subprocess.run([str(exe), "leaderboard", str(runs), "-o", str(tmp_path / "board")],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert out.returncode == 0, out.stderr
    return next((tmp_path / "board").glob("*.md")).read_text()


def test_a_vstyle_run_whose_judgements_all_failed_is_shown_apart(tmp_path):
    runs = tmp_path / "runs"
    _vstyle_run(runs, "low", 3.2, 0)
    _vstyle_run(runs, "failed", math.nan, 10)
    _vstyle_run(runs, "high", 4.1, 0)
    board = _board_markdown(runs, tmp_path)
    ranked, _, apart = board.partition("## VStyle runs not ranked")
    rows = {line.split("|")[3].strip(): line for line in ranked.splitlines()
            if line.startswith("| ") and line.split("|")[3].strip() in ("low", "high", "failed")}
    assert set(rows) == {"low", "high"}, board
    assert rows["high"].split("|")[1].strip() == "1" and rows["low"].split("|")[1].strip() == "2"
    failed = [line for line in apart.splitlines() if line.startswith("| failed |")]
    assert failed and "no score" in failed[0], board


def test_a_vstyle_run_with_failed_judgements_is_listed_apart_not_ranked(tmp_path):
    """A run whose failed judgements were left out of its mean tied for rank 1-2 with a
    complete one (ADEPT scores a failed question wrong); it is listed apart with the reason."""
    runs = tmp_path / "runs"
    _vstyle_run(runs, "complete", 3.9, 0)
    _vstyle_run(runs, "gappy", 4.0, 1)  # 4 of 44 judgements failed
    _vstyle_run(runs, "other", 3.0, 0)
    board = _board_markdown(runs, tmp_path)
    ranked, _, apart = board.partition("## VStyle runs not ranked")
    rows = {line.split("|")[3].strip() for line in ranked.splitlines()
            if line.startswith("| ") and line.split("|")[3].strip() in
            ("complete", "gappy", "other")}
    assert rows == {"complete", "other"}, board
    gappy = [line for line in apart.splitlines() if line.startswith("| gappy |")]
    assert gappy and "4 of 44 (9.1%) failed" in gappy[0], board


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
    assert all(r.figure("vstyle", "sample") for r in rows)


# ---------------------------------------------------------------- the sources named
def test_leaderboard_names_a_source_that_holds_no_run(tmp_path):
    good = _results_run(tmp_path / "runs", "a", "2026-01-01T00-00-00",
                _results("a", {t: 0.5 for t in spec.TASKS}))
    (tmp_path / "empty").mkdir()
    for source, problem in ((tmp_path / "typo", "no such file or folder"),
                            (tmp_path / "empty", "no lm-eval results file")):
        with pytest.raises(PublishError, match=problem) as err:
            leaderboard([str(good.results_path.parent), str(source)], tmp_path / "lb")
        assert str(err.value).startswith(f"{source}: ")
    assert not (tmp_path / "lb").exists()


def test_the_command_says_it_in_one_message(tmp_path, capsys):
    good = _results_run(tmp_path / "runs", "a", "2026-01-01T00-00-00",
                _results("a", {t: 0.5 for t in spec.TASKS}))
    code = main(["leaderboard", str(good.results_path.parent), str(tmp_path / "typo"),
                 "-o", str(tmp_path / "lb")])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"error: {tmp_path / 'typo'}: no such file or folder"


def test_no_source_at_all_says_none_was_given_and_how_to_give_one(tmp_path):
    """`adept-eval leaderboard -o lb` with neither a folder nor --from-hub said "no lm-eval runs
    found in -", as if a folder named "-" had been searched. Through the real executable."""
    import os
    import subprocess

    from faults import console_script

    done = subprocess.run([console_script("adept-eval"), "leaderboard", "-o", "lb"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "COLUMNS": "400",
                               "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "error: no runs given: name the lm-eval --output_path folders or results_*.json files "
        "to rank (e.g. adept-eval leaderboard out/ -o lb), or a results dataset with "
        "--from-hub REPO"), done.stderr
    assert not (tmp_path / "lb").exists()


def test_a_run_reached_through_two_sources_is_counted_once(tmp_path, capsys):
    """`adept-eval leaderboard out/ out/my-tts`, a link to a run's folder, or the results file
    itself beside its folder: each source was searched on its own and the run found through
    every one of them was counted again each time. The results file decides, as for
    `compare`'s refusal of one run named twice: a copy of it is another run."""
    out = tmp_path / "out"
    a = _results_run(out, "a", "2026-01-01T00-00-00", _results("a", {t: 0.5 for t in spec.TASKS}))
    b = _results_run(out, "b", "2026-01-01T00-00-01", _results("b", {t: 0.6 for t in spec.TASKS}))
    (tmp_path / "link").symlink_to(out / "a", target_is_directory=True)
    sources = [out, out / "a", tmp_path / "link", a.results_path]
    found = find_runs(sources)
    assert [r.results_path for r in found] == [a.results_path, b.results_path], found
    # a copy of a's results is another run (of the same system), found with a
    shutil.copytree(out / "a", tmp_path / "copy" / "a")
    assert len(find_runs([out, tmp_path / "copy"])) == 3
    # the command: one row per run, whatever the sources that reached it
    assert main(["leaderboard", *map(str, sources), "-o", str(tmp_path / "lb")]) == 0
    capsys.readouterr()
    with open(tmp_path / "lb" / "leaderboard.csv", encoding="utf-8") as fh:
        assert sorted(row["system"] for row in csv.DictReader(fh)) == ["a", "b"]


def test_an_output_that_is_a_file_is_named_as_the_option(tmp_path, capsys):
    """`-o leaderboard.md` (a file where -o names a folder) ended in the bare OS error
    "lb/leaderboard.md: File exists", after every run was read; it is one message naming the
    option and what it takes, before anything is read."""
    good = _results_run(tmp_path / "runs", "a", "2026-01-01T00-00-00",
                _results("a", {t: 0.5 for t in spec.TASKS}))
    target = tmp_path / "leaderboard.md"
    target.write_text("old\n")
    code = main(["leaderboard", str(good.results_path.parent), "-o", str(target)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == (
        f"error: -o {target}: a file, not a folder; -o names the folder to write "
        "leaderboard.md, .csv, .parquet and .png into (e.g. -o leaderboard/)")
    assert target.read_text() == "old\n"


def test_a_short_system_name_does_not_fold_the_system_header(tmp_path, capsys):
    """The system column was as wide as the longest name, so with short names ("a") its
    header printed folded, "s" / "ystem" or "syste" / "m"; it is at least the header's width."""
    runs = tmp_path / "runs"
    for name, acc in (("a", 0.5), ("b", 0.4)):
        _results_run(runs, name, "2026-01-01T00-00-00", _results(name, {t: acc for t in spec.TASKS}))
    code = main(["leaderboard", str(runs), "-o", str(tmp_path / "lb")])
    out = capsys.readouterr().out
    assert code == 0
    header = next(line for line in out.splitlines() if " acc " in line)
    assert " system " in header, out


# ------------------------------------------------------------------- driven by the suite tables
def test_no_suite_is_named_in_the_leaderboard_code():
    """The leaderboard iterates ``SUITES`` and asks each suite's board: no suite's name, title
    or task prefix appears in its code (the package's own name, adept_eval, is not a suite)."""
    code = Path(leaderboard_module.__file__).read_text(encoding="utf-8")
    without_package = code.replace("adept_eval", "").replace("adept-eval", "")
    names = {word for suite in SUITES.values() for word in (suite.name, suite.title)}
    found = sorted({name for name in names if name.lower() in without_package.lower()})
    assert not found, f"leaderboard.py names the suites {found}"


def _toy_suite() -> Suite:
    """A third, made-up suite: two tasks scored 0-10 by a judge, higher better."""
    return Suite(
        name="toy", title="Toy", tasks=("toy_a", "toy_b"), groups={"toy": ("toy_a", "toy_b")},
        headline="score", filter_key="none", n_metric="n", failed_metric="failed",
        scorer="judge", complete_sets=(("toy_a", "toy_b"),), run_keys=frozenset(),
        metrics=(Metric("score", "mean", True),
                 Metric("n", "n", True, count=True, shown="count"),
                 Metric("failed", "failed", False, count=True, shown="count")),
        subcategories=lambda task: (), scale=(0.0, 10.0))


def _toy_run(folder: Path, system: str, score: float) -> None:
    tasks = ["toy_a", "toy_b"]
    data = {"results": {t: {"score,none": score, "n,none": 20, "failed,none": 1} for t in tasks},
            "configs": {t: {} for t in tasks}, "date": 1.7e9, "model_name": system,
            "adept_eval": {"system": system, "version": "test", "suites": {"toy": {
                "tasks": tasks, "complete": True, "scorer": {"backend": "x", "model": "toy-judge"},
                "corpus": {"sha256": "ef" * 32}}}}}
    (folder / system).mkdir(parents=True)
    (folder / system / "results_2026-01-01T00-00-00.json").write_text(json.dumps(data))


def test_a_new_suite_is_listed_with_no_edit_in_the_leaderboard(tmp_path, monkeypatch, capsys):
    """A suite added to ``SUITES`` alone is ranked, written (its own CSV columns, a scorer
    column of its own beside VStyle's judge) and printed by ``adept-eval leaderboard``."""
    monkeypatch.setitem(SUITES, "toy", _toy_suite())
    runs = tmp_path / "runs"
    _toy_run(runs, "low", 4.0)
    _toy_run(runs, "high", 7.5)
    assert main(["leaderboard", str(runs), "-o", str(tmp_path / "board")]) == 0
    printed = capsys.readouterr().out
    assert "Toy, scored by `" in printed and "high" in printed and "low" in printed
    rows = {r["system"]: r for r in csv.DictReader(open(tmp_path / "board" / "leaderboard.csv"))}
    assert (rows["high"]["toy_rank"], rows["low"]["toy_rank"]) == ("1", "2")
    assert rows["high"]["toy_score"] == "7.5" and rows["high"]["toy_n"] == "40"
    assert rows["high"]["toy_failed"] == "2" and rows["high"]["toy_judge"]
    assert "judge" in rows["high"] and rows["high"]["judge"] == ""
    board = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "## Toy, scored by" in board
