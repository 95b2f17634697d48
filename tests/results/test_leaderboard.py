"""The leaderboard's rank ranges (which systems are statistically tied), through the shell on
complete runs made through `lm_eval`, in every output and on the Hub."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

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
    assert "paired by question (sentence sign-flip test)" in rows["flat"]["adept_tie_method"]
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
    from adept_eval.results.leaderboard import UNPAIRED_ACCURACY

    # bounded by the sentences' clustering (the runs' results give the tasks' question counts)
    assert all(UNPAIRED_ACCURACY in r["adept_tie_method"] for r in rows.values())
    assert rows["copy"]["adept_rank_range"] == rows["copy-again"]["adept_rank_range"]
    assert rows["copy"]["adept_rank_range"].startswith("1")


def test_tie_brackets_by_hand():
    from adept_eval.results.leaderboard import Row, tie_brackets

    rows = [Row(s, "r") for s in "abcd"]  # in the chart's order
    ties = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}, "d": set()}
    for r in rows:
        r._tied = ties[r.system]
    assert tie_brackets(rows) == [(0, 1), (1, 2)]
    rows[0]._tied = {"b", "c"}
    rows[2]._tied = {"a", "b"}
    assert tie_brackets(rows) == [(0, 2)]  # (1, 2) lies inside (0, 2)


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
    assert "paired by question (sentence sign-flip test)" in before.stdout
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
