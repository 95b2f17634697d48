"""Listeners answer ADEPT's forced-choice questions about a system's samples.

A registry of interchangeable listeners, chosen per run with ``--metadata listener=NAME`` (extra
``--metadata`` keys are passed to the listener's constructor). Every listener returns an
``Answer``: the responses it gave (one for a machine listener, one per participant for humans).

``Listener`` states what a listener provides, and the harness reads only that: whether it hears
the system's samples (``needs_audio``), whether its answers hold one response per participant
(``per_participant``), whether it gives graded figures (``gives_graded_figures`` and
``graded_scores``), and whether it can start on a run's files early (``expect``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from adept_eval.corpora.questions import Question
from adept_eval.registry import Registry


@dataclass(frozen=True)
class Response:
    """One response to a question: the choice made, and by whom when people answered."""

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
        """The responses naming the question's right answer.

        Args:
            question: the question answered.

        Returns:
            How many of ``responses`` chose ``question.answer``.
        """
        return sum(1 for r in self.responses if r.choice == question.answer)


@dataclass
class Listener:
    """Base class: ``answer`` a question given the system's audio for each of its stimuli.

    A subclass states what it provides by overriding the class attributes and methods below;
    the defaults describe a machine listener that hears the samples, answers once per
    question and gives no graded figures.
    """

    name: str = field(init=False, default="")

    #: whether it hears the system's samples: a question whose samples are unusable then fails
    #: without being asked (people who answered elsewhere need none)
    needs_audio: ClassVar[bool] = True
    #: whether an answer holds one response per participant (a listening test's people)
    #: rather than the listener's one
    per_participant: ClassVar[bool] = False

    def identity(self) -> dict:
        """What distinguishes this listener's scores from another's (recorded in results).

        Returns:
            A JSON-able dict naming the listener and whatever changes its answers.
        """
        return {"listener": self.name}

    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        """Answer one question.

        Args:
            question: the question.
            samples: stimulus id -> the system's file, for at least the question's stimuli
                (the harness gives every sample of the task; a sample the system reported
                failed is there with None, so it is neither heard nor looked for elsewhere).

        Returns:
            The listener's ``Answer``.
        """
        raise NotImplementedError

    def answer_many(self, asked: list[tuple[Question, dict[str, str]]]) -> list[Answer]:
        """Answer many questions. Listeners that wait on a server override this to ask
        concurrently; the default asks one at a time.

        Args:
            asked: (question, samples) pairs, as ``answer`` takes them.

        Returns:
            One ``Answer`` per pair, in order.
        """
        return [self.answer(q, samples) for q, samples in asked]

    def gives_graded_figures(self) -> bool:
        """Whether ``graded_scores`` gives the graded prosody-transfer figures (it may depend
        on the listener's options).

        Returns:
            False for the base class.
        """
        return False

    def graded_scores(self, samples: dict[str, str], stimuli) -> dict:
        """The graded figures of each stimulus, for a listener whose
        ``gives_graded_figures()`` is true.

        Args:
            samples: stimulus id -> the system's file (None: refused), as ``answer`` takes it.
            stimuli: the stimulus ids to score.

        Returns:
            stimulus id -> ``graded.StimulusScores``.
        """
        raise NotImplementedError(f"listener {self.name!r} gives no graded figures")

    def expect(self, paths: list[str]) -> int:
        """Learn the files a run will ask about, before it asks, so the work on them can start
        in the background. The default does nothing.

        Args:
            paths: the files, in the order the run will score them.

        Returns:
            How many files work was started on.
        """
        return 0


#: every listener, lazily: a module is imported only when its listener is used (or its options
#: are read). A listener defined elsewhere registers itself with ``@register_listener(name)``.
LISTENERS = Registry("listener", {
    "acoustic": "adept_eval.scoring.listeners.acoustic:AcousticListener",
    "audio-llm": "adept_eval.scoring.listeners.audio_llm:AudioLLMListener",
    "human": "adept_eval.scoring.listeners.human:HumanListener",
})


def register_listener(name: str):
    """Make a class decorator that registers a ``Listener`` under ``name``.

    Args:
        name: The listener's name (``--metadata listener=NAME``); also set as the class's
            ``name`` attribute.

    Returns:
        The decorator, which returns the class it registers.
    """
    def wrap(cls):
        cls.name = name
        return LISTENERS.register(name)(cls)
    return wrap


def available() -> list[str]:
    """List the registered listeners (imports none of them).

    Returns:
        Their names, sorted.
    """
    return LISTENERS.names()


def get_listener(name: str, **options) -> Listener:
    """A listener made with ``options``.

    Args:
        name: a registered listener's name.
        **options: its constructor's keyword options (``corpus`` and its ``--metadata`` keys).

    Returns:
        The ``Listener``.

    Raises:
        ValueError: no listener has that name.
    """
    return LISTENERS.create(name, **options)
