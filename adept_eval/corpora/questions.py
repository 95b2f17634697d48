"""The 12 ADEPT listening tests as Question records, built exactly as the ADEPT tutorial says.

Multi-stimulus classes (emotion, interpersonal and propositional attitude): one question per
sentence and non-neutral subcategory; the choices are that sentence spoken in every subcategory,
neutral included, and the answer is the target subcategory's sample. Single-stimulus classes
(topical emphasis, syntactic phrasing, marked tonicity): one question per recording; the choices
are the sentence's options from adept_prompts.json, and the answer is the recording's own.

The order in which a multi-stimulus question presents its samples is a deterministic shuffle
seeded by the question id, as a listening-test platform would randomise it, so that no listener
can profit from a fixed position. Single-stimulus choices keep adept_prompts.json's order
(beginning, middle, end; interpretation 1, 2), as the tutorial's example shows them.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from dataclasses import dataclass

from adept_eval.corpora import spec
from adept_eval.corpora.corpus import Corpus

LETTERS = "ABCDE"


@dataclass(frozen=True)
class Question:
    """One forced-choice question of one ADEPT task."""

    question_id: str  # "adept_emotion_female/ad00_0001/fear"
    task: str
    cls: str
    speaker: str
    design: str  # "multi" | "single"
    sentence_id: str
    text: str  # the sentence spoken in the stimuli
    question: str  # the wording shown to listeners
    stimuli: tuple[str, ...]  # stimulus ids (class/subcategory/adNN_XXXX) heard, in order
    stimulus_subcategories: tuple[str, ...]  # parallel to stimuli
    choices: tuple[str, ...]  # what a listener picks from
    choice_subcategories: tuple[str, ...]  # parallel to choices: which subcategory each stands for
    answer: int  # index into choices
    target: str  # subcategory of the correct answer

    @property
    def n_choices(self) -> int:
        return len(self.choices)

    @property
    def answer_letter(self) -> str:
        return LETTERS[self.answer]


def _order(question_id: str, items: list[str]) -> list[str]:
    seed = int.from_bytes(hashlib.sha256(question_id.encode()).digest()[:8], "big")
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def build_questions(corpus: Corpus, task_name: str) -> list[Question]:
    """Every question of one task, in a stable order (sentence, then target subcategory)."""
    t = spec.task(task_name)
    c, speaker = t.cls, t.speaker
    sid_prefix = spec.SPEAKERS[speaker]
    questions: list[Question] = []
    for sid in c.sentence_ids():
        key = f"{sid_prefix}_{sid}"
        text = corpus.find(speaker, c.name, c.answer_subcategories(speaker)[0], sid).text
        for target in c.answer_subcategories(speaker):
            qid = f"{t.name}/{key}/{target}"
            if c.design == "multi":
                subs = _order(qid, list(c.subcategories_for(speaker)))
                stimuli = tuple(f"{c.name}/{s}/{key}" for s in subs)
                choices = tuple(f"Sample {LETTERS[i]}" for i in range(len(subs)))
                wording = c.question.format(target=c.targets[target])
                questions.append(Question(qid, t.name, c.name, speaker, "multi", sid, text,
                                          wording, stimuli, tuple(subs), choices, tuple(subs),
                                          subs.index(target), target))
            else:
                options = corpus.answer_options(c.name, key)
                subs = list(c.answer_subcategories(speaker))
                choices = tuple(options[s] for s in subs)
                questions.append(Question(qid, t.name, c.name, speaker, "single", sid, text,
                                          c.question, (f"{c.name}/{target}/{key}",), (target,),
                                          choices, tuple(subs), subs.index(target), target))
    return questions


def all_questions(corpus: Corpus) -> dict[str, list[Question]]:
    return {name: build_questions(corpus, name) for name in spec.TASKS}


#: the default salt of blinded ids; a study whose participants could recompute ids from ADEPT's
#: public stimulus names should pass its own, kept private (``adept-eval questions --salt``)
DEFAULT_BLIND_SALT = "adept-eval blinded ids v1"


def blinded_id(real_id: str, salt: str = DEFAULT_BLIND_SALT, prefix: str = "s") -> str:
    """A stable id that reveals nothing of ``real_id`` (class, subcategory, sentence): 12 hex
    digits of HMAC-SHA256(salt, real_id). The same id and salt always give the same result, so
    an exported listening test and its audio files can be rebuilt; 48 bits make collisions among
    ADEPT's 195 stimuli and 165 questions vanishingly unlikely (checked by ``unblinding``)."""
    digest = hmac.new(salt.encode(), real_id.encode(), hashlib.sha256).hexdigest()
    return f"{prefix}{digest[:12]}"


def blinded_question_id(question_id: str, salt: str = DEFAULT_BLIND_SALT) -> str:
    return blinded_id(question_id, salt, prefix="q")


def unblinding(questions, salt: str = DEFAULT_BLIND_SALT) -> dict[str, str]:
    """Blinded id -> real id, for every question and stimulus of ``questions``; raises if two
    real ids ever collided (so a blinded id always names exactly one thing)."""
    out: dict[str, str] = {}
    for q in questions:
        pairs = [(blinded_question_id(q.question_id, salt), q.question_id)]
        pairs += [(blinded_id(s, salt), s) for s in q.stimuli]
        for blind, real in pairs:
            if out.setdefault(blind, real) != real:
                raise ValueError(f"blinded id {blind} names both {out[blind]} and {real}")
    return out
