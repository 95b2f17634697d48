import json
import math

import pytest
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score

from adept_eval.cli import main
from adept_eval.judge.agreement import agreement

JUDGE = [5, 4, 3, 1, 2, 5, 3, None, 4, 2]
HUMAN = [5, 5, 3, 2, 2, 4, 1, 3, 4, 2]
TYPES = ["a", "a", "a", "a", "b", "b", "b", "b", "b", "b"]


def test_agreement_matches_reference_implementations():
    out = agreement(JUDGE, HUMAN, TYPES)
    pairs = [(j, h) for j, h in zip(JUDGE, HUMAN) if j is not None]
    j, h = zip(*pairs)
    o = out["overall"]
    assert o["n"] == 9 and out["dropped"] == 1
    assert o["spearman"] == pytest.approx(spearmanr(j, h).statistic)
    assert o["kendall"] == pytest.approx(kendalltau(j, h).statistic)
    assert o["qwk"] == pytest.approx(cohen_kappa_score(h, j, weights="quadratic", labels=[1, 2, 3, 4, 5]))
    assert o["exact"] == pytest.approx(5 / 9) and o["within_1"] == pytest.approx(8 / 9)
    assert out["by_type"]["a"]["n"] == 4 and out["by_type"]["b"]["n"] == 5


def test_degenerate_inputs_give_nan_not_numbers():
    out = agreement([3, 3, 3], [1, 2, 3])
    assert math.isnan(out["overall"]["spearman"]) and math.isnan(out["overall"]["qwk"])
    with pytest.raises(ValueError):
        agreement([1, 2], [1])


def test_judge_agreement_command(tmp_path, capsys):
    judged = {"items": [{"item_id": str(i), "score": s, "instruction_type": t}
                        for i, (s, t) in enumerate(zip(JUDGE, TYPES))]}
    (tmp_path / "judge.json").write_text(json.dumps(judged))
    rows = ["id,score"] + [f"{i},{h}" for i, h in enumerate(HUMAN)]
    (tmp_path / "human.csv").write_text("\n".join(rows))
    assert main(["judge-agreement", str(tmp_path / "judge.json"), str(tmp_path / "human.csv"),
                 "-o", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert "Spearman" in out and "1 left out" in out
    assert json.loads((tmp_path / "a.json").read_text())["overall"]["n"] == 9


def test_a_mean_of_raters_is_rounded_one_way_for_exact_agreement(tmp_path):
    """Through the real `adept-eval judge-agreement`: two raters' 4 and 5 (mean 4.5) and 3 and
    4 (mean 3.5) are rounded alike, half up, so a judge's 5 and 4 agree exactly with them, and
    kappa reads the same whole scores. Python's round() (half to even) made 4.5 a 4 and 3.5 a
    4: the first pair disagreed and the second agreed."""
    import os
    import subprocess

    from faults import console_script

    judge = {"items": [{"item_id": "a", "score": 5}, {"item_id": "b", "score": 4},
                       {"item_id": "c", "score": 2}]}
    (tmp_path / "judge.json").write_text(json.dumps(judge))
    (tmp_path / "human.csv").write_text("id,score\na,4\na,5\nb,3\nb,4\nc,2\nc,2\n")
    done = subprocess.run([console_script("adept-eval"), "judge-agreement",
                           str(tmp_path / "judge.json"), str(tmp_path / "human.csv"),
                           "-o", str(tmp_path / "a.json")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    overall = json.loads((tmp_path / "a.json").read_text())["overall"]
    assert overall["n"] == 3 and overall["exact"] == 1.0 and overall["within_1"] == 1.0
    assert overall["qwk"] == pytest.approx(1.0)
