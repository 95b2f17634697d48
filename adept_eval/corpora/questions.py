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
        """How many choices the question offers."""
        return len(self.choices)

    @property
    def answer_letter(self) -> str:
        """The right answer's letter, as a listener sees it ("A" for the first choice)."""
        return LETTERS[self.answer]


def _order(question_id: str, items: list[str]) -> list[str]:
    """``items`` shuffled by a generator seeded with the question id (the same every run)."""
    seed = int.from_bytes(hashlib.sha256(question_id.encode()).digest()[:8], "big")
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def build_questions(corpus: Corpus, task_name: str) -> list[Question]:
    """Every question of one task, in a stable order (sentence, then target subcategory).

    Args:
        corpus: The corpus.
        task_name: The task's name, e.g. "adept_emotion_female".

    Returns:
        The questions.

    Raises:
        KeyError: No task has that name.
    """
    task = spec.task(task_name)
    cls, speaker = task.cls, task.speaker
    sid_prefix = spec.SPEAKERS[speaker]
    questions: list[Question] = []
    for sid in cls.sentence_ids():
        key = f"{sid_prefix}_{sid}"
        text = corpus.find(speaker, cls.name, cls.answer_subcategories(speaker)[0], sid).text
        for target in cls.answer_subcategories(speaker):
            qid = f"{task.name}/{key}/{target}"
            if cls.design == "multi":
                subs = _order(qid, list(cls.subcategories_for(speaker)))
                stimuli = tuple(f"{cls.name}/{sub}/{key}" for sub in subs)
                choices = tuple(f"Sample {LETTERS[i]}" for i in range(len(subs)))
                wording = cls.question.format(target=cls.targets[target])
                questions.append(Question(qid, task.name, cls.name, speaker, "multi", sid, text,
                                          wording, stimuli, tuple(subs), choices, tuple(subs),
                                          subs.index(target), target))
            else:
                options = corpus.answer_options(cls.name, key)
                subs = list(cls.answer_subcategories(speaker))
                choices = tuple(options[sub] for sub in subs)
                questions.append(Question(qid, task.name, cls.name, speaker, "single", sid, text,
                                          cls.question, (f"{cls.name}/{target}/{key}",),
                                          (target,), choices, tuple(subs), subs.index(target),
                                          target))
    return questions


def all_questions(corpus: Corpus) -> dict[str, list[Question]]:
    """Every task's questions.

    Args:
        corpus: The corpus.

    Returns:
        Task name -> its questions, in ``spec.TASKS``' order.
    """
    return {name: build_questions(corpus, name) for name in spec.TASKS}


#: the default salt of blinded ids; a study whose participants could recompute ids from ADEPT's
#: public stimulus names should pass its own, kept private (``adept-eval questions --salt``)
DEFAULT_BLIND_SALT = "adept-eval blinded ids v1"


def blinded_id(real_id: str, salt: str = DEFAULT_BLIND_SALT, prefix: str = "s") -> str:
    """A stable id that reveals nothing of ``real_id`` (class, subcategory, sentence): 12 hex
    digits of HMAC-SHA256(salt, real_id). The same id and salt always give the same result, so
    an exported listening test and its audio files can be rebuilt; 48 bits make collisions among
    ADEPT's 195 stimuli and 165 questions vanishingly unlikely (checked by ``unblinding``).

    Args:
        real_id: The stimulus or question id.
        salt: The HMAC key.
        prefix: The blinded id's first character ("s" for a stimulus).

    Returns:
        The blinded id.
    """
    digest = hmac.new(salt.encode(), real_id.encode(), hashlib.sha256).hexdigest()
    return f"{prefix}{digest[:12]}"


def blinded_question_id(question_id: str, salt: str = DEFAULT_BLIND_SALT) -> str:
    """A question's ``blinded_id``, prefixed "q".

    Args:
        question_id: The question's id.
        salt: The HMAC key.

    Returns:
        The blinded id.
    """
    return blinded_id(question_id, salt, prefix="q")


def unblinding(questions, salt: str = DEFAULT_BLIND_SALT) -> dict[str, str]:
    """The key that turns blinded ids back into real ones.

    Args:
        questions: The questions (their stimuli included).
        salt: The HMAC key they were blinded with.

    Returns:
        Blinded id -> real id, for every question and stimulus.

    Raises:
        ValueError: Two real ids share a blinded one (so a blinded id always names exactly
            one thing).
    """
    out: dict[str, str] = {}
    for q in questions:
        pairs = [(blinded_question_id(q.question_id, salt), q.question_id)]
        pairs += [(blinded_id(s, salt), s) for s in q.stimuli]
        for blind, real in pairs:
            if out.setdefault(blind, real) != real:
                raise ValueError(f"blinded id {blind} names both {out[blind]} and {real}")
    return out
