"""What ADEPT is: classes, speakers, subcategories, sentence ids and the 12 task designs.

Everything here is a published fact about the corpus (Torresquintero et al., Interspeech 2021;
Zenodo record 5117102) or about its listening tests (the ADEPT evaluation tutorial). Other
modules derive file layouts, question sets and chance levels from these tables, never from
literals of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

ZENODO_RECORD_ID = "5117102"
ZENODO_FILE_KEY = "ADEPT.zip"
ZENODO_DOI = "10.5281/zenodo.5117102"

SPEAKERS: dict[str, str] = {"female": "ad00", "male": "ad01"}
SPEAKER_BY_ID: dict[str, str] = {v: k for k, v in SPEAKERS.items()}

NEUTRAL = "neutral"

CITATION = """@inproceedings{torresquintero21_interspeech,
  title     = {{ADEPT}: A Dataset for Evaluating Prosody Transfer},
  author    = {Torresquintero, Alexandra and Teh, Tian Huey and Wallis, Christopher G. R. and
               Staib, Marlene and Mohan, Devang S. Ram and Hu, Vivian and Foglianti, Lorenzo and
               Gao, Jiameng and King, Simon},
  booktitle = {Proc. Interspeech 2021},
  year      = {2021}
}"""


@dataclass(frozen=True)
class ClassSpec:
    """One ADEPT class: its folders, its sentence-id block and how listeners are asked about it."""

    name: str
    id_block: int  # sentence ids are id_block .. id_block + 4
    subcategories: tuple[str, ...]  # every folder, neutral included
    design: str  # "multi" (listeners hear every variant) or "single" (one sample, text choices)
    question: str  # the question wording; {target} is filled for multi-stimulus classes
    targets: dict[str, str]  # subcategory -> wording that fills {target} (multi) or "" (single)
    male_only: tuple[str, ...] = ()
    has_subcategory_scores: bool = True  # the tutorial scores some classes only as a whole

    def subcategories_for(self, speaker: str) -> tuple[str, ...]:
        """Folders that exist for one speaker (sarcasm is recorded by the male speaker only).

        Args:
            speaker: "female" or "male".

        Returns:
            The subcategories, in order.
        """
        return tuple(sub for sub in self.subcategories
                     if speaker == "male" or sub not in self.male_only)

    def answer_subcategories(self, speaker: str) -> tuple[str, ...]:
        """Subcategories that are the correct answer of some question (never neutral).

        Args:
            speaker: "female" or "male".

        Returns:
            The subcategories, in order.
        """
        return tuple(sub for sub in self.subcategories_for(speaker) if sub != NEUTRAL)

    def sentence_ids(self) -> tuple[str, ...]:
        """The class's five sentence ids ("0100" ... "0104").

        Returns:
            The ids, in order.
        """
        return tuple(f"{self.id_block + i:04d}" for i in range(5))


CLASSES: dict[str, ClassSpec] = {
    c.name: c
    for c in (
        ClassSpec(
            name="emotion",
            id_block=0,
            subcategories=("anger", "fear", "joy", "sadness", NEUTRAL),
            design="multi",
            question="In which of the following samples does the speaker sound most {target}?",
            targets={"anger": "angry", "fear": "fearful", "joy": "joyful", "sadness": "sad"},
        ),
        ClassSpec(
            name="interpersonal_attitude",
            id_block=300,
            subcategories=("authoritative", "contemptuous", "polite", NEUTRAL),
            design="multi",
            question="Which of the following samples sounds most like {target}?",
            targets={
                "authoritative": "an authoritative statement",
                "contemptuous": "a contemptuous question",
                "polite": "a polite statement",
            },
        ),
        ClassSpec(
            name="propositional_attitude",
            id_block=200,
            subcategories=("incredulity", "surprise", "sarcasm", NEUTRAL),
            design="multi",
            question="Which sample fits best into the context: {target}",
            targets={
                "incredulity": "\u201c(Incredulous) Really? ___?\u201d",
                "surprise": "\u201c(Surprised) Wow! ___!\u201d",
                "sarcasm": "\u201c(Sarcastically) Well ___.\u201d",
            },
            male_only=("sarcasm",),
        ),
        ClassSpec(
            name="topical_emphasis",
            id_block=100,
            subcategories=("beginning", "middle", "end"),
            design="single",
            question="Which question is best answered by the sample?",
            targets={"beginning": "", "middle": "", "end": ""},
        ),
        ClassSpec(
            name="syntactic_phrasing",
            id_block=400,
            subcategories=("interpretation_1", "interpretation_2"),
            design="single",
            question="Which is a better paraphrase of the sample?",
            targets={"interpretation_1": "", "interpretation_2": ""},
            has_subcategory_scores=False,
        ),
        ClassSpec(
            name="marked_tonicity",
            id_block=500,
            # The tutorial gives no wording for this class; ours asks for the meaning the
            # stressed word signals, with adept_prompts.json's two interpretations as choices.
            subcategories=("interpretation_1", "interpretation_2"),
            design="single",
            question="Which meaning does the way the sample is spoken convey best?",
            targets={"interpretation_1": "", "interpretation_2": ""},
            has_subcategory_scores=False,
        ),
    )
}

# Order used in tables and task lists: the order of the ADEPT paper and tutorial.
CLASS_ORDER: tuple[str, ...] = (
    "emotion",
    "interpersonal_attitude",
    "propositional_attitude",
    "topical_emphasis",
    "syntactic_phrasing",
    "marked_tonicity",
)


@dataclass(frozen=True)
class TaskSpec:
    """One of the 12 ADEPT listening tests: a class heard in one speaker's voice."""

    cls: ClassSpec
    speaker: str

    @property
    def name(self) -> str:
        """The lm-eval task name, e.g. "adept_emotion_female"."""
        return f"adept_{self.cls.name}_{self.speaker}"

    @property
    def n_choices(self) -> int:
        """How many choices each question offers."""
        if self.cls.design == "multi":
            return len(self.cls.subcategories_for(self.speaker))
        return len(self.cls.answer_subcategories(self.speaker))

    @property
    def n_questions(self) -> int:
        """How many questions the task asks."""
        return len(self.cls.answer_subcategories(self.speaker)) * 5

    @property
    def chance(self) -> float:
        """The accuracy of guessing."""
        return 1.0 / self.n_choices


TASKS: dict[str, TaskSpec] = {
    t.name: t for t in (TaskSpec(CLASSES[c], s) for s in SPEAKERS for c in CLASS_ORDER)
}


def task(name: str) -> TaskSpec:
    """Look a task up by name.

    Args:
        name: The task's name.

    Returns:
        The task.

    Raises:
        KeyError: No task has that name; the message lists the valid ones.
    """
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown ADEPT task {name!r}; known tasks: {', '.join(TASKS)}") from None
