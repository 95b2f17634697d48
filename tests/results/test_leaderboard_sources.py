"""Every source named to `adept-eval leaderboard` must hold runs: a mistyped folder beside good
ones was left out of the leaderboard without a word (`compare` already names a missing run).
And a run reached through two sources is one run."""

from __future__ import annotations

import csv
import shutil

import pytest

from adept_eval.corpora import spec
from adept_eval.cli import main
from adept_eval.errors import PublishError
from adept_eval.results.runs import find_runs
from adept_eval.results.leaderboard import leaderboard
from test_structure import _results, _run


def test_leaderboard_names_a_source_that_holds_no_run(tmp_path):
    good = _run(tmp_path / "runs", "a", "2026-01-01T00-00-00",
                _results("a", {t: 0.5 for t in spec.TASKS}))
    (tmp_path / "empty").mkdir()
    for source, problem in ((tmp_path / "typo", "no such file or folder"),
                            (tmp_path / "empty", "no lm-eval results file")):
        with pytest.raises(PublishError, match=problem) as err:
            leaderboard([str(good.results_path.parent), str(source)], tmp_path / "lb")
        assert str(err.value).startswith(f"{source}: ")
    assert not (tmp_path / "lb").exists()


def test_the_command_says_it_in_one_message(tmp_path, capsys):
    good = _run(tmp_path / "runs", "a", "2026-01-01T00-00-00",
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
    a = _run(out, "a", "2026-01-01T00-00-00", _results("a", {t: 0.5 for t in spec.TASKS}))
    b = _run(out, "b", "2026-01-01T00-00-01", _results("b", {t: 0.6 for t in spec.TASKS}))
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
    good = _run(tmp_path / "runs", "a", "2026-01-01T00-00-00",
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
        _run(runs, name, "2026-01-01T00-00-00", _results(name, {t: acc for t in spec.TASKS}))
    code = main(["leaderboard", str(runs), "-o", str(tmp_path / "lb")])
    out = capsys.readouterr().out
    assert code == 0
    header = next(line for line in out.splitlines() if " acc " in line)
    assert " system " in header, out
