from collections import Counter

import pytest

from adept_eval.corpora import spec
from adept_eval.corpora.questions import all_questions, build_questions

# The tutorial's designs: (questions, choices) per task.
TUTORIAL = {
    "adept_emotion_female": (20, 5), "adept_emotion_male": (20, 5),
    "adept_interpersonal_attitude_female": (15, 4), "adept_interpersonal_attitude_male": (15, 4),
    "adept_propositional_attitude_female": (10, 3), "adept_propositional_attitude_male": (15, 4),
    "adept_topical_emphasis_female": (15, 3), "adept_topical_emphasis_male": (15, 3),
    "adept_syntactic_phrasing_female": (10, 2), "adept_syntactic_phrasing_male": (10, 2),
    "adept_marked_tonicity_female": (10, 2), "adept_marked_tonicity_male": (10, 2),
}


def test_question_counts_and_choices_follow_the_tutorial(corpus):
    qs = all_questions(corpus)
    assert set(qs) == set(TUTORIAL)
    for name, (n_q, n_c) in TUTORIAL.items():
        assert len(qs[name]) == n_q, name
        assert {q.n_choices for q in qs[name]} == {n_c}, name
        assert spec.TASKS[name].n_questions == n_q and spec.TASKS[name].n_choices == n_c
        assert len({q.question_id for q in qs[name]}) == n_q


def test_neutral_is_a_choice_but_never_the_answer(corpus):
    for name in ("adept_emotion_female", "adept_interpersonal_attitude_male",
                 "adept_propositional_attitude_female"):
        for q in build_questions(corpus, name):
            assert "neutral" in q.choice_subcategories
            assert q.target != "neutral"
            assert q.choice_subcategories[q.answer] == q.target


def test_multi_stimulus_design(corpus):
    qs = build_questions(corpus, "adept_emotion_male")
    # each sentence is presented once per subcategory, each time with a different answer
    by_sentence = Counter(q.sentence_id for q in qs)
    assert set(by_sentence.values()) == {4}
    targets = {q.target for q in qs}
    assert targets == {"anger", "fear", "joy", "sadness"}
    fear = next(q for q in qs if q.target == "fear")
    assert fear.question == "In which of the following samples does the speaker sound most fearful?"
    assert len(fear.stimuli) == 5 and all(s.endswith(f"/ad01_{fear.sentence_id}") for s in fear.stimuli)
    assert fear.stimuli[fear.answer] == f"emotion/fear/ad01_{fear.sentence_id}"
    # presentation order is shuffled per question (not always the same position) yet reproducible
    assert len({q.answer for q in qs}) > 1
    assert [q.stimuli for q in build_questions(corpus, "adept_emotion_male")] == [q.stimuli for q in qs]


def test_question_wordings(corpus):
    ia = build_questions(corpus, "adept_interpersonal_attitude_female")
    assert {q.question for q in ia} == {
        "Which of the following samples sounds most like an authoritative statement?",
        "Which of the following samples sounds most like a contemptuous question?",
        "Which of the following samples sounds most like a polite statement?"}
    pa = build_questions(corpus, "adept_propositional_attitude_male")
    assert any("(Sarcastically) Well ___." in q.question for q in pa)
    pa_f = build_questions(corpus, "adept_propositional_attitude_female")
    assert not any("Sarcastically" in q.question for q in pa_f)
    te = build_questions(corpus, "adept_topical_emphasis_female")
    assert {q.question for q in te} == {"Which question is best answered by the sample?"}
    sp = build_questions(corpus, "adept_syntactic_phrasing_male")
    assert {q.question for q in sp} == {"Which is a better paraphrase of the sample?"}


def test_single_stimulus_design_uses_prompts_file(corpus):
    qs = build_questions(corpus, "adept_topical_emphasis_female")
    q = next(q for q in qs if q.sentence_id == "0100" and q.target == "middle")
    options = corpus.answer_options("topical_emphasis", "ad00_0100")
    assert q.choices == (options["beginning"], options["middle"], options["end"])
    assert q.answer == 1 and q.stimuli == ("topical_emphasis/middle/ad00_0100",)
    # the three questions on one sentence share their choices
    same = [x for x in qs if x.sentence_id == "0100"]
    assert len(same) == 3 and len({x.choices for x in same}) == 1


def test_unknown_task_lists_valid_names(corpus):
    with pytest.raises(KeyError, match="adept_emotion_female"):
        build_questions(corpus, "adept_emotion_robot")
