"""Listeners answer ADEPT's forced-choice questions about a system's samples.

A registry of interchangeable listeners, chosen per run with ``--metadata listener=NAME`` (extra
``--metadata`` keys are passed to the listener's constructor). Every listener returns an
``Answer``: the responses it gave (one for a machine listener, one per participant for humans).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adept_eval.corpora.questions import Question
from adept_eval.registry import Registry


@dataclass(frozen=True)
class Response:
    choice: int | None  # index into question.choices; None when no valid answer was given
    participant: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Answer:
    """What a listener made of one question; a response with no valid choice counts as wrong."""

    responses: tuple[Response, ...]
    status: str = "ok"  # "ok" | "failed" (the listener could not answer: counted as wrong)
    scores: tuple[float, ...] = ()  # listener's per-choice evidence, when it has any
    detail: str = ""
    agreement: float = 1.0  # share of presentation orders that gave this answer

    def correct(self, question: Question) -> int:
        return sum(1 for r in self.responses if r.choice == question.answer)


@dataclass
class Listener:
    """Base class: ``answer`` a question given the system's audio for each of its stimuli."""

    name: str = field(init=False, default="")

    def identity(self) -> dict:
        """What distinguishes this listener's scores from another's (recorded in results)."""
        return {"listener": self.name}

    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        """``samples``: stimulus id -> the system's file, for at least the question's stimuli
        (the harness gives every sample of the task; a sample the system reported failed is
        there with None, so it is neither heard nor looked for elsewhere)."""
        raise NotImplementedError

    def answer_many(self, asked: list[tuple[Question, dict[str, str]]]) -> list[Answer]:
        """Answer many questions (one Answer each, in order). Listeners that wait on a server
        override this to ask concurrently; the default asks one at a time."""
        return [self.answer(q, samples) for q, samples in asked]


#: every listener, lazily: a module is imported only when its listener is used (or its options
#: are read). A listener defined elsewhere registers itself with ``@register_listener(name)``.
LISTENERS = Registry("listener", {
    "acoustic": "adept_eval.scoring.listeners.acoustic:AcousticListener",
    "audio-llm": "adept_eval.scoring.listeners.audio_llm:AudioLLMListener",
    "human": "adept_eval.scoring.listeners.human:HumanListener",
})


def register_listener(name: str):
    """Class decorator: register a ``Listener`` under ``name`` (its ``name`` attribute too)."""
    def wrap(cls):
        cls.name = name
        return LISTENERS.register(name)(cls)
    return wrap


def available() -> list[str]:
    return LISTENERS.names()


def get_listener(name: str, **options) -> Listener:
    return LISTENERS.create(name, **options)
