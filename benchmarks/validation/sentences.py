"""Sentences written for validation, in ADEPT's style, and what each subcategory asks of them.

Each ADEPT class gets five sentences (ids in the class's id block). A subcategory is a
``Plan``: global pitch level/range, rate and loudness (emotions and attitudes), an accented
word (topical emphasis, marked tonicity), a phrase break after a word (syntactic phrasing),
and a final rise or fall. Engines realise a plan their own way (``engines``).
"""

from __future__ import annotations

from dataclasses import dataclass

from adept_eval.corpora import spec


@dataclass(frozen=True)
class Plan:
    pitch_st: float = 0.0  # level shift, semitones
    range_: float = 1.0  # scales the excursions of the voice's own melody
    rate: float = 1.0  # speaking rate relative to the engine's default
    gain_db: float = 0.0
    final_st: float = 0.0  # rise (+) or fall (-) over the last word, semitones
    focus: int | None = None  # index of the accented word
    break_after: int | None = None  # index of the word a phrase break follows
    question: bool = False  # spoken as a question (final "?")


NEUTRAL_PLAN = Plan()

GLOBAL_PLANS: dict[tuple[str, str], Plan] = {
    ("emotion", "anger"): Plan(1.5, 1.6, 1.15, 6.0, -3.0),
    ("emotion", "fear"): Plan(5.0, 0.6, 1.3, -2.0, 1.0),
    ("emotion", "joy"): Plan(4.0, 1.9, 1.05, 3.0, 2.0),
    ("emotion", "sadness"): Plan(-2.5, 0.4, 0.72, -7.0, -1.0),
    ("interpersonal_attitude", "authoritative"): Plan(-1.5, 1.0, 0.88, 4.0, -4.0),
    ("interpersonal_attitude", "contemptuous"): Plan(-1.0, 1.5, 0.78, 0.0, 4.0, question=True),
    ("interpersonal_attitude", "polite"): Plan(3.0, 1.3, 0.97, -3.0, 2.0),
    ("propositional_attitude", "incredulity"): Plan(2.0, 1.5, 0.88, 1.0, 6.0, question=True),
    ("propositional_attitude", "surprise"): Plan(5.0, 2.0, 1.08, 4.0, 1.0),
    ("propositional_attitude", "sarcasm"): Plan(-1.0, 1.6, 0.7, 0.0, -3.0),
}


@dataclass(frozen=True)
class Sentence:
    words: tuple[str, ...]
    # single-stimulus classes: subcategory -> (focus word or break word index, option wording)
    readings: dict[str, tuple[int, str]] | None = None

    @property
    def text(self) -> str:
        return " ".join(self.words) + "."


def _s(text: str, readings: dict[str, tuple[int, str]] | None = None) -> Sentence:
    return Sentence(tuple(text.rstrip(".").split()), readings)


SENTENCES: dict[str, tuple[Sentence, ...]] = {
    "emotion": (
        _s("The train leaves the station at seven tonight."),
        _s("She moved the old piano into the kitchen."),
        _s("They painted the garden fence blue last weekend."),
        _s("My brother bought a new car yesterday morning."),
        _s("The results will be posted on the board tomorrow."),
    ),
    "propositional_attitude": (
        _s("He sold the whole house for a single dollar."),
        _s("The meeting has been moved to Sunday morning."),
        _s("She ran the marathon in under three hours."),
        _s("They found a sleeping cat inside the engine."),
        _s("The shop is giving away bicycles for free."),
    ),
    "interpersonal_attitude": (
        _s("You will finish the report before lunch."),
        _s("The visitors should wait in the hall."),
        _s("Your parcel arrived at the office today."),
        _s("We are closing the library at five."),
        _s("The manager wants to see you now."),
    ),
    "topical_emphasis": (
        _s("Maria bakes bread on Fridays.", {
            "beginning": (0, "WHO bakes bread on Fridays?"),
            "middle": (2, "WHAT does Maria bake on Fridays?"),
            "end": (4, "WHEN does Maria bake bread?")}),
        _s("Peter plays chess in Glasgow.", {
            "beginning": (0, "WHO plays chess in Glasgow?"),
            "middle": (2, "WHAT does Peter play in Glasgow?"),
            "end": (4, "WHERE does Peter play chess?")}),
        _s("Lucy reads novels at breakfast.", {
            "beginning": (0, "WHO reads novels at breakfast?"),
            "middle": (2, "WHAT does Lucy read at breakfast?"),
            "end": (4, "WHEN does Lucy read novels?")}),
        _s("Daniel grows tomatoes in London.", {
            "beginning": (0, "WHO grows tomatoes in London?"),
            "middle": (2, "WHAT does Daniel grow in London?"),
            "end": (4, "WHERE does Daniel grow tomatoes?")}),
        _s("Nina sells lemons on Mondays.", {
            "beginning": (0, "WHO sells lemons on Mondays?"),
            "middle": (2, "WHAT does Nina sell on Mondays?"),
            "end": (4, "WHEN does Nina sell lemons?")}),
    ),
    "syntactic_phrasing": (
        _s("The old men and women left the room early.", {
            "interpretation_1": (2, "Only the men were old; the women left early too."),
            "interpretation_2": (1, "Both the men and the women were old.")}),
        _s("She saw the man with the telescope.", {
            "interpretation_1": (3, "She used the telescope to see the man."),
            "interpretation_2": (1, "The man she saw had a telescope.")}),
        _s("Jane hit the boy with the umbrella.", {
            "interpretation_1": (3, "Jane used the umbrella to hit the boy."),
            "interpretation_2": (1, "The boy Jane hit was holding the umbrella.")}),
        _s("Peter and Sue or Mark will come tonight.", {
            "interpretation_1": (2, "Either Peter and Sue come, or Mark comes."),
            "interpretation_2": (0, "Peter comes, and so does Sue or Mark.")}),
        _s("We painted the walls with the children.", {
            "interpretation_1": (3, "The children helped us paint the walls."),
            "interpretation_2": (1, "We painted the walls that had children drawn on them.")}),
    ),
    "marked_tonicity": (
        _s("I never said she stole the money.", {
            "interpretation_1": (0, "Someone else said it, not me."),
            "interpretation_2": (6, "She stole something, but not money.")}),
        _s("John gave Mary a red umbrella.", {
            "interpretation_1": (0, "It was John, not someone else, who gave it."),
            "interpretation_2": (4, "The umbrella was red, not another colour.")}),
        _s("We always eat fish on Sundays.", {
            "interpretation_1": (1, "It happens every Sunday, without exception."),
            "interpretation_2": (5, "Fish is for Sundays, not for other days.")}),
        _s("My sister drives to work every morning.", {
            "interpretation_1": (1, "My sister, not my brother, drives to work."),
            "interpretation_2": (4, "She drives to work, not to the gym.")}),
        _s("Tom bought the blue jacket yesterday.", {
            "interpretation_1": (0, "Tom, not someone else, bought it."),
            "interpretation_2": (3, "He bought the blue one, not the green one.")}),
    ),
}

BREAK_CLASSES = ("syntactic_phrasing",)
FOCUS_CLASSES = ("topical_emphasis", "marked_tonicity")


def sentence(cls: str, sentence_id: str) -> Sentence:
    return SENTENCES[cls][int(sentence_id) - spec.CLASSES[cls].id_block]


def plan(cls: str, subcategory: str, sentence_id: str) -> Plan:
    """What the subcategory asks of this sentence."""
    if subcategory == spec.NEUTRAL:
        return NEUTRAL_PLAN
    if cls in FOCUS_CLASSES:
        return Plan(focus=sentence(cls, sentence_id).readings[subcategory][0])
    if cls in BREAK_CLASSES:
        return Plan(break_after=sentence(cls, sentence_id).readings[subcategory][0])
    return GLOBAL_PLANS[(cls, subcategory)]


def answer_options(cls: str, sentence_id: str) -> dict[str, str]:
    return {sub: wording for sub, (_, wording) in sentence(cls, sentence_id).readings.items()}
