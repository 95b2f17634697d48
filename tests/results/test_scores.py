"""Score files for judge agreement (``adept_eval.results.scores``): one table from a speech_judge
result, JSON lines or CSV, raters averaged, every problem named by file and row."""

import json

import pytest

from adept_eval.results.scores import ItemScore, read_scores


def test_raters_are_averaged_and_a_missing_score_is_kept(tmp_path):
    scores = tmp_path / "human.csv"
    scores.write_text("id,score,instruction_type\na,4,emotion\na,5,\nb,,style\n",
                      encoding="utf-8")
    assert read_scores(scores) == {"a": ItemScore(4.5, "emotion"), "b": ItemScore(None, "style")}


def test_a_judge_result_and_json_lines_read_alike(tmp_path):
    result = tmp_path / "judge.json"
    result.write_text(json.dumps({"items": [{"item_id": "a", "score": 3}]}), encoding="utf-8")
    lines = tmp_path / "judge.jsonl"
    lines.write_text('{"id": "a", "score": 3}\n\n', encoding="utf-8")
    assert read_scores(result) == read_scores(lines) == {"a": ItemScore(3.0, "")}


def test_every_bad_row_is_named_in_one_message(tmp_path):
    scores = tmp_path / "bad.csv"
    scores.write_text("id,score\n,3\nb,x\nc,300\nd,nan\n", encoding="utf-8")
    with pytest.raises(ValueError) as raised:
        read_scores(scores)
    lines = str(raised.value).splitlines()
    assert len(lines) == 4 and all(line.startswith(f"{scores}: line") for line in lines)
    assert "no id/item_id" in lines[0] and "not a number" in lines[1]
    assert "1-5 scale" in lines[2] and "not a finite number" in lines[3]


@pytest.mark.parametrize("name, text, problem", [
    ("s.csv", "id,rating\na,3\n", "no score column"),
    ("s.json", "[1, 2]", "not a speech_judge result"),
    ("s.jsonl", "{oops\n", "s.jsonl:1: not JSON"),
])
def test_a_file_of_the_wrong_shape_is_one_message(tmp_path, name, text, problem):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=problem):
        read_scores(path)


def test_a_missing_file_or_a_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_scores(tmp_path / "none.csv")
    with pytest.raises(ValueError, match="a folder"):
        read_scores(tmp_path)
