import pytest

from adept_eval.judge.verdict import parse_verdict
from adept_eval.corpora.vstyle import load_records
from conftest import shared_or_skip


def test_all_recorded_vstyle_verdicts_parse_to_their_scores():
    records = load_records(shared_or_skip("data", "vstyle_examples", "en"))
    responses = [r for rec in records for r in rec.responses]
    assert len(records) == 33 and len(responses) == 231
    for r in responses:
        parsed = parse_verdict(r.judge_raw)
        assert parsed.ok and parsed.score == r.judge_score, (r.audio_path, parsed)


@pytest.mark.parametrize("text,score", [
    ("Final score: [[4]]", 4),
    ("blah [[2]] more text\n## Final Score: [[ 5 ]]", 5),
    ('Final score: [["3"]]', 3),
    ("Final score: [['1']]", 1),
    ("## Final Score: **[[4]]**", 4),
    ("Final score: [[4.0]]", 4),
])
def test_tolerated_forms(text, score):
    assert parse_verdict(text).score == score


@pytest.mark.parametrize("text", [
    "", None, "Final score: 4", "Final score: [[7]]", "Final score: [[0]]", "[[3.5]]",
    "score [[four]]",
    # the last bracket decides: an earlier number is never read past a verdict that is not one
    "Content [[2]]. Final score: [[4/5]]", "I cannot rate. [[3]] Final score: [[N/A]]",
    "Style [[4]]. Final score: [[Four]]", "[[5]] Final score: [[3-4]]", "[[4]] Final score: [[]]",
    # cut off (max_tokens) inside the last bracket: it was scored from the earlier [[2]]
    "Content [[2]]. Final score: [[4", "Content [[2]]. Final score: [[", "Final score: [[4",
])
def test_unparseable_or_out_of_range(text):
    parsed = parse_verdict(text)
    assert not parsed.ok and parsed.score is None and parsed.problem
