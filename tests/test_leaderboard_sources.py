"""Every source named to `adept-eval leaderboard` must hold runs: a mistyped folder beside good
ones was left out of the leaderboard without a word (`compare` already names a missing run)."""

from __future__ import annotations

import pytest

from adept_eval import spec
from adept_eval.cli import main
from adept_eval.hub import PublishError
from adept_eval.leaderboard import leaderboard
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
