"""Real human emotional speech laid out as ADEPT emotion tasks: the listener's held-out test.

A public corpus of acted emotional speech, in which speakers say the same sentences in several
emotions, is read into ``Take`` records (``read_corpus``); groups of five sentences are then laid
out as ADEPT's emotion class (anger, fear, joy, sadness and neutral, ADEPT's five-sample design:
"in which of the following samples does the speaker sound most angry?"), one speaker's takes as
the references (ADEPT's natural recordings) and a *system* made of other takes:

- ``second-take``: the same speaker's other take of each sentence and emotion (corpora that
  recorded each twice);
- ``other-voice``: that take with its formants and pitch median moved by Praat's "Change
  gender" (prosody kept: what a prosody-transfer system in its own voice outputs);
- ``own-take-other-voice``: the reference take itself in that other voice (corpora without
  second takes: what a voice change alone costs);
- ``other-speaker``: another speaker of the corpus, of the same sex, saying the same sentence
  in the same emotions.

The corpora are not shipped: the user fetches them (each corpus's licence governs its use) and
passes their folders. Nothing here is tuned on: the listener's choices are made on the speakers
``TUNING`` names and reported on the others (docs/listener-validity.md).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from adept_eval.corpora import spec
from adept_eval.corpora.corpus import Corpus, Recording
from adept_eval.corpora.questions import Question, build_questions
from adept_eval.scoring.listeners import Listener

#: the ADEPT class each corpus is laid out as: its emotions fill that class's subcategories
#: (a multi-stimulus design: one sample per subcategory, the same sentence)
LAYOUT = {"tess": "emotion", "emodb": "emotion", "jl": "interpersonal_attitude"}
#: what each corpus calls the subcategories it is laid out in
LABELS = {
    "tess": {"angry": "anger", "fear": "fear", "happy": "joy", "sad": "sadness",
             "neutral": "neutral"},
    "emodb": {"W": "anger", "A": "fear", "F": "joy", "T": "sadness", "N": "neutral"},
    # JL-Corpus has no neutral or fear among its primary emotions: its four fill ADEPT's
    # four-sample design (chance 0.25), "excited" in the slot no question asks about
    "jl": {"angry": "authoritative", "happy": "polite", "sad": "contemptuous",
           "excited": "neutral"},
}


@dataclass(frozen=True)
class Take:
    """One recording of a corpus: who said which sentence in which emotion, which take."""

    corpus: str
    speaker: str
    sentence: str
    emotion: str  # the ADEPT subcategory it is laid out as (``LABELS``)
    take: int
    path: str


def read_tess(root: Path) -> list[Take]:
    """The Toronto Emotional Speech Set (Dupuis & Pichora-Fuller, 2010; CC BY-NC-ND 4.0): two
    actresses (OAF, aged 64, and YAF, aged 26) say "Say the word ..." for 200 words in seven
    emotions; files are named ``<speaker>_<word>_<emotion>.wav`` (a prefix or suffix added by
    a redistribution is ignored). One take each."""
    pattern = re.compile(r"(OAF|YAF)_([a-z]+)_([a-z]+?)\d*\.wav$", re.IGNORECASE)
    out = {}
    for path in sorted(root.rglob("*.wav")):
        m = pattern.search(path.name)
        if not m:
            continue
        speaker, word, label = m.group(1).upper(), m.group(2).lower(), m.group(3).lower()
        emotion = LABELS["tess"].get(label)
        if emotion:
            out[(speaker, word, emotion)] = Take("tess", speaker, word, emotion, 1, str(path))
    return list(out.values())


def read_emodb(root: Path) -> list[Take]:
    """The Berlin Database of Emotional Speech (Burkhardt et al., Interspeech 2005; free for
    research): ten actors (five women: 08, 09, 13, 14, 16; five men: 03, 10, 11, 12, 15) say ten
    German sentences in seven emotions; files ``<speaker><text><emotion><version>.wav``, e.g.
    ``03a01Wa.wav`` (W anger, A fear, F joy, T sadness, N neutral; versions a, b, c are takes,
    the corpus keeping those its listeners recognised). German: the listener hears prosody, not
    words."""
    codes = LABELS["emodb"]
    pattern = re.compile(r"^(\d\d)([ab]\d\d)([WLEAFTN])([a-f])\.wav$")
    found = defaultdict(list)
    for path in sorted(root.rglob("*.wav")):
        m = pattern.match(path.name)
        if m and m.group(3) in codes:
            found[(m.group(1), m.group(2), codes[m.group(3)])].append((m.group(4), str(path)))
    return [Take("emodb", spk, text, emotion, i + 1, path)
            for (spk, text, emotion), versions in found.items()
            for i, (_, path) in enumerate(sorted(versions))]


#: each corpus's speakers by sex (ADEPT's female and male speaker slots)
SPEAKERS = {
    "tess": {"female": ("OAF", "YAF")},
    "emodb": {"female": ("08", "09", "13", "14", "16"), "male": ("03", "10", "11", "12", "15")},
    "jl": {"female": ("female1", "female2"), "male": ("male1", "male2")},
}
def read_jl(root: Path) -> list[Take]:
    """JL-Corpus (James, Tian & Watson, Interspeech 2018): New Zealand English, two women and
    two men, each sentence of the primary emotions recorded in two sessions; files
    ``<speaker>_<emotion>_<sentence>_<session>.wav``, e.g. ``female1_angry_1a_2.wav``. Its
    angry, happy, sad and excited takes (``LABELS``); the session is the take."""
    pattern = re.compile(r"^((?:fe)?male\d)_([a-z]+)_(\d+[a-z])_([12])\.wav$")
    out = []
    for path in sorted(root.rglob("*.wav")):
        m = pattern.match(path.name)
        if m and m.group(2) in LABELS["jl"]:
            out.append(Take("jl", m.group(1), m.group(3), LABELS["jl"][m.group(2)],
                            int(m.group(4)), str(path)))
    return out


READERS = {"tess": read_tess, "emodb": read_emodb, "jl": read_jl}


def read_corpus(name: str, root: str | Path) -> list[Take]:
    """Read one corpus's takes.

    Args:
        name: The corpus (``READERS``).
        root: Its folder, searched recursively.

    Returns:
        Its takes of ADEPT's emotions.

    Raises:
        ValueError: An unknown corpus, or a folder holding none of its files.
    """
    if name not in READERS:
        raise ValueError(f"unknown corpus {name!r}; known: {', '.join(READERS)}")
    takes = READERS[name](Path(root))
    if not takes:
        raise ValueError(f"{root}: no {name} recordings found")
    return takes


def adept_class(takes: list[Take]) -> spec.ClassSpec:
    """The ADEPT class the takes' corpus is laid out as (``LAYOUT``)."""
    return spec.CLASSES[LAYOUT[takes[0].corpus]]


def complete_sentences(takes: list[Take], speaker: str, take: int = 1) -> set[str]:
    """The sentences ``speaker`` said in every subcategory of the layout (in take ``take``)."""
    have = defaultdict(set)
    for t in takes:
        if t.speaker == speaker and t.take == take:
            have[t.sentence].add(t.emotion)
    wanted = set(adept_class(takes).subcategories)
    return {s for s, emotions in have.items() if emotions >= wanted}


class LaidOutCorpus(Corpus):
    """One ADEPT class only, from given files (no other class: the benchmark asks only that
    class's female task)."""

    def __init__(self, cls: str, files: dict[tuple[str, str, str], str], name: str):
        """Args:
            cls: The ADEPT class laid out.
            files: (ADEPT speaker, subcategory, sentence id) -> audio path, for both speakers,
                every subcategory and five sentence ids.
            name: What to call the corpus in messages.
        """
        self.cls = cls
        self.root = Path("/nonexistent") / name
        self.source = name
        self.prompts = {}
        self.recordings = [
            Recording(speaker, spec.SPEAKERS[speaker], cls, sub, sid, f"sentence {sid}",
                      path) for (speaker, sub, sid), path in sorted(files.items())]
        self._by_id = {r.stimulus_id: r for r in self.recordings}


#: the families of systems (module docstring); ``own-take-other-voice`` is the reference take
#: itself in another voice, for corpora without second takes (an upper bound of what a voice
#: change alone costs)
FAMILIES = ("second-take", "other-voice", "own-take-other-voice", "other-speaker")


@dataclass(frozen=True)
class Unit:
    """Five sentences of one reference speaker laid out as an ADEPT emotion task, and what
    plays the system on each: ``systems[i]`` is (speaker, take) or None for a sentence the
    slot holds only so that the task has its five (not asked)."""

    family: str
    reference: str
    sentences: tuple[str, ...]
    systems: tuple[tuple[str, int] | None, ...]

    @property
    def name(self) -> str:
        asked = sum(s is not None for s in self.systems)
        others = sorted({s[0] for s in self.systems if s})
        return (f"{self.family}:{self.reference}>{'+'.join(others)}:"
                f"{','.join(self.sentences[:asked])}")


def units(takes: list[Take], family: str, speakers: tuple[str, ...]) -> list[Unit]:
    """Every unit of a family among ``speakers`` (one sex): ``other-speaker`` pairs each
    reference speaker with each other speaker on the sentences both said in all five emotions;
    ``second-take`` and ``other-voice`` pair a speaker with their own second take, on the
    sentences they said twice in all five. Sentences are asked in groups of five; a short last
    group is filled from the reference speaker's other complete sentences, not asked.

    Returns:
        The units, in a stable order.
    """
    out = []
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    pairs = [(a, b) for a in speakers for b in speakers if a != b] \
        if family == "other-speaker" else [(a, a) for a in speakers]
    for ref, other in pairs:
        own = sorted(complete_sentences(takes, ref))
        if family in ("other-speaker", "own-take-other-voice"):
            shared = sorted(set(own) & complete_sentences(takes, other))
            take = 1
        else:
            shared = sorted(set(own) & complete_sentences(takes, ref, take=2))
            take = 2
        for i in range(0, len(shared), 5):
            group = shared[i:i + 5]
            # the reference speaker's other sentences fill the task (reused if too few)
            pool = [s for s in own if s not in group] or group
            fill = list(itertools.islice(itertools.cycle(pool), 5 - len(group)))
            sentences = tuple(group + fill)
            systems = tuple([(other, take)] * len(group) + [None] * (5 - len(group)))
            out.append(Unit(family, ref, sentences, systems))
    return out


def other_voice(path: str, out: Path, *, formant_ratio: float, pitch_ratio: float) -> str:
    """The take in another voice: Praat's "Change gender" (formants shifted by
    ``formant_ratio``, the pitch median multiplied by ``pitch_ratio``, pitch range and timing
    kept), written to ``out`` (cached)."""
    if out.exists():
        return str(out)
    import parselmouth
    from parselmouth.praat import call

    sound = parselmouth.Sound(path)
    pitch = sound.to_pitch()
    median = call(pitch, "Get quantile", 0, 0, 0.5, "Hertz")
    if not np.isfinite(median):
        median = 200.0
    changed = call(sound, "Change gender", 75, 600, formant_ratio, median * pitch_ratio, 1.0,
                   1.0)
    out.parent.mkdir(parents=True, exist_ok=True)
    x = changed.values.T.squeeze()
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak > 0.99:  # keep the take's level wherever it can be kept; never clip
        x = x * (0.99 / peak)
    sf.write(str(out), x, int(changed.sampling_frequency), subtype="PCM_16")
    return str(out)


def lay_out(takes: list[Take], unit: Unit, cache: Path
            ) -> tuple[LaidOutCorpus, dict[str, str], set[str]]:
    """One ADEPT corpus of the layout's class from a unit (the same five sentences in both speaker
    slots; only the female task is asked), its system's samples and the sentence ids asked.

    Returns:
        The corpus, the system's samples (stimulus id -> file) and the sentence ids asked.
    """
    index = {(t.speaker, t.sentence, t.emotion, t.take): t.path for t in takes}
    cls = adept_class(takes)
    files, samples, asked = {}, {}, set()
    for i, (sentence, system) in enumerate(zip(unit.sentences, unit.systems)):
        sid = f"{cls.id_block + i:04d}"
        if system is not None:
            asked.add(sid)
        for slot in ("female", "male"):
            for sub in cls.subcategories_for(slot):
                files[(slot, sub, sid)] = index[(unit.reference, sentence, sub, 1)]
                stimulus = f"{cls.name}/{sub}/{spec.SPEAKERS[slot]}_{sid}"
                if system is None:
                    samples[stimulus] = files[(slot, sub, sid)]
                    continue
                path = index[(system[0], sentence, sub, system[1])]
                if unit.family in ("other-voice", "own-take-other-voice"):  # lower, darker
                    digest = hashlib.sha256(path.encode()).hexdigest()[:16]
                    path = other_voice(path, cache / "other-voice" / f"{digest}.wav",
                                       formant_ratio=0.88, pitch_ratio=0.8)
                samples[stimulus] = path
    return LaidOutCorpus(cls.name, files, unit.name), samples, asked


@dataclass(frozen=True)
class Result:
    """One question's outcome."""

    unit: str  # the laid-out corpus
    task: str
    sentence: str  # unit/task/sentence id: the cluster
    target: str
    correct: bool
    failed: bool
    # for the test clustered by sentence (``stats.within_cluster_permutation_p``): the target
    # asked for and the subcategory of the sample chosen (None: failed)
    chosen: str | None = None


def ask(listener: Listener, corpus: LaidOutCorpus, samples: dict[str, str],
        asked: set[str], unit: str) -> list[Result]:
    """The asked questions of a laid-out corpus, answered by ``listener``."""
    out = []
    for task in (f"adept_{corpus.cls}_female",):
        questions: list[Question] = build_questions(corpus, task)
        for q in questions:
            if q.sentence_id not in asked:
                continue
            a = listener.answer(q, {s: samples[s] for s in q.stimuli})
            choice = a.responses[0].choice if a.status == "ok" and a.responses else None
            chosen = None if choice is None else q.stimulus_subcategories[choice]
            out.append(Result(unit, task, f"{unit}/{task}/{q.sentence_id}", q.target,
                              a.status == "ok" and bool(a.correct(q)), a.status != "ok",
                              chosen))
    return out
