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


GOOD_HUMAN = "id,score\na,4\nb,3\nc,2\n"


@pytest.mark.parametrize("name, content, expected", [
    ("judge.json", b"[1, 2]", "{path}: not a speech_judge result: expected a JSON object"),
    ("judge.json", b'{"items": [{"item_id": "a", "score": 5}, {"item_id": "b", "s',
     "{path}: not JSON ("),
    ("judge.jsonl", b'{"id": "a", "score": 5}\n{"id": "b", "score": Infinity}\n',
     "{path}:2: score inf is not a finite number"),
    ("judge.csv", b"id,score\na,5\nb,x\n", "{path}: line 3: score 'x' is not a number"),
    ("judge.csv", b"id,score\na,300\nb,-4\n",
     "{path}: line 2: score '300' is outside the judge's 1-5 scale"),
    ("judge.csv", b"id,rating\na,5\n", "{path}: no score column (its columns: id, rating)"),
    ("judge.jsonl", b'{"id": "a", "rating": 5}\n', "{path}: no row has a 'score'"),
])
def test_bad_score_files_are_one_message_naming_file_and_row(name, content, expected, tmp_path):
    """[1,2] was 'unexpected AttributeError ... a bug' (exit 3), inf an OverflowError (exit 3),
    'x' or truncated JSON a message without the file or row, no score column an all-NaN table
    with exit 0, and 300 or -4 accepted on a 1-5 scale."""
    import os
    import subprocess

    from faults import console_script

    path = tmp_path / name
    path.write_bytes(content)
    (tmp_path / "human.csv").write_text(GOOD_HUMAN)
    done = subprocess.run([console_script("adept-eval"), "judge-agreement", str(path),
                           str(tmp_path / "human.csv")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=600,
                          env={**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert expected.format(path=path) in done.stderr.replace("\n", " ") or \
        expected.format(path=path) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "bug" not in done.stderr


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_spreadsheet_exports_with_a_byte_order_mark_or_in_utf16_are_read(encoding, tmp_path):
    """Excel's 'CSV UTF-8' starts with a byte-order mark ('row 1 has no id/item_id'); its
    'Unicode text' is UTF-16 (a codec error without the file)."""
    (tmp_path / "judge.csv").write_text("id,score\na,4\nb,3\nc,2\n", encoding="utf-8")
    (tmp_path / "human.csv").write_bytes(GOOD_HUMAN.encode(encoding))
    assert main(["judge-agreement", str(tmp_path / "judge.csv"), str(tmp_path / "human.csv"),
                 "-o", str(tmp_path / "a.json")]) == 0
    assert json.loads((tmp_path / "a.json").read_text())["overall"]["exact"] == 1.0
