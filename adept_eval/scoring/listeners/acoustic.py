"""The reference-matching acoustic listener (default; CPU, deterministic, no network).

It hears every subcategory of a sentence on both sides: ADEPT's natural recordings and the
system's samples. Each side's renditions are turned into deviations from that side's own mean
rendition of the sentence (``prosody.sentence_profiles``), so what an engine or voice does to
every rendition alike - its sentence melody, declination, rate and level - cancels, and what is
left is what each subcategory changes. Pauses (>= 150 ms) are cut out before renditions are
aligned, so words align with words, and kept as a profile of their own: where the breaks fall.
A system rendition is then compared with each natural candidate (``prosody.compare_sentence``)
on seven terms: F0 (semitones; a frame the natural candidate voices and the system does not is a
large deviation), energy contour (dB, each rendition's own level removed), level (each
rendition's speech level; it abstains when the system's renditions share one level, as after
per-file loudness normalisation), tempo (local and total log duration; it abstains when the
system's renditions are timed alike, as when only their pitch or loudness differs), pause
(seconds of pause, placed between the words they fall between), salience (where the rendition
stands out from its sentence's other renditions, whatever the cue: a pitch excursion or movement,
loudness, lengthening, a pause) and boundary (where the rendition marks a phrase boundary more
than the others, whatever the cue: a silence there however short (from 40 ms), the lengthening
before it, a pitch reset after it; it votes only when the natural candidates break in different
places); F0, energy and tempo weighted towards the frames where the natural candidates differ
most, each term scaled by how far those candidates lie from one another. The weighted sum
becomes a posterior over candidates, softmax(-d / temperature).

An emotion question (what a rendition conveys as a whole; ``CATEGORY_CLASSES``) adds a
*category* term (``CATEGORY_WEIGHT``): each rendition's global cues (pitch height, range and
movement, level and its dynamics, duration, voicing; ``prosody.global_cues``), relative to the
system's own mean rendition of the sentence, against each subcategory's prototype - the natural
renditions' cues averaged over every sentence of the class - so a system that conveys anger its
own way, in its own voice, is not held to how the reference speaker said this one sentence.
People answer by the category they hear; on real human speech (another speaker's takes answering
for the reference speaker's) the term is what lifts the listener above a naive one
(docs/listener-validity.md).

- multi-stimulus questions: the sample most likely to be the target subcategory given that the
  samples are the candidates one each (``one_each``: each sample's posterior over the candidates,
  combined over the ways of giving every sample a different one);
- single-stimulus questions: the interpretation with the highest posterior. The system's other
  renditions of the sentence come from the samples it is given (the harness hands every
  question the map of all the system's samples of the task, whatever folder layout the model
  writes); only when they are not there are they looked for in the folder the sample sits in
  (``<cls>/<sub>/<key>.*``, the layout ``adept-eval manifest`` asks for); without them the
  listener falls back to comparing the sample alone (speaker-normalised, ``prosody.distance``),
  and so it does when one of them was refused (the harness marks it with no file) or cannot be
  heard (unreadable, no speech): a bad sample costs its own question, not its sentence's.

With ``graded`` on (the default; ``--metadata graded=false`` turns it off) the listener also
gives the graded prosody-transfer figures of every stimulus (``graded_scores``), on the features
it has already extracted and with its own per-sentence comparison as ``listener_distance``.

A sample that holds no speech (``speech_presence``) is not judged: the question fails. Ties (a
system that speaks every subcategory alike) are broken by a guess seeded with the question id.
Every answer's ``detail`` holds, per candidate, the distance per term and the posterior.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from adept_eval.corpora import spec
from adept_eval.signal.audio import find_audio
from adept_eval.corpora.corpus import Corpus, load_corpus
from adept_eval.options import number, yes_no
from adept_eval.errors import OptionError
from adept_eval.signal.prosody import (
    TERMS,
    category_distance,
    cue_votes,
    sentence_cues,
    FeatureStore,
    VoiceNorm,
    compare_sentence,
    distance_terms,
    one_blas_thread,
    onto,
    sentence_profiles,
)
from adept_eval.corpora.questions import Question
from adept_eval.signal.speech_presence import reason_from_features
from adept_eval.scoring.listeners import Answer, Listener, Response, register_listener

# Chosen on the validation benchmark's calibration and reserved rotations only
# (``benchmarks.validation.benchmark.NOT_HELD_OUT``); the others are held out and reported as
# measured.
# The tempo term abstains for a system whose renditions are timed alike
# (``prosody.TEMPO_VOTE``). The boundary term weighs three times the F0 term: it votes only
# where the references break in different places (syntactic phrasing, on every rotation
# measured), and there the references' F0 and tempo contours also differ by what
# their breaks do to timing and by each voice's own melody, which a system's renditions need
# not share: on the reserved rotations (festival-ked references) the F0 term outvoted the
# boundary at a third of every effect (festival-ked -> awb, male: wrong, F0 -0.90 against
# boundary +0.38). Over every realisation and dose variant of the six tuning and reserved
# rotations (1,320 phrasing questions) weight 1 / 2 / 3 / 4 gave 1 / 0 / 0 / 0 wrong and a
# least posterior for the right reading of 0.50 / 0.65 / 0.71 / 0.76; 3 is where the gain
# flattens.
TERM_WEIGHTS = {"f0": 1.0, "energy": 0.5, "level": 0.5, "tempo": 1.0, "pause": 1.0,
                "salience": 1.0, "boundary": 3.0}
TEMPERATURE = 0.5
# The category term of emotion questions (``CATEGORY_CLASSES``): each rendition's global
# cues against each subcategory's prototype over all the class's natural sentences
# (``prosody.category_distance``), added to the reference-likeness total at this weight. Chosen
# on real human speech of the tuning corpus only (TESS, both speakers, one speaker's takes
# answering for the other's: 0.44 without the term, 0.71 / 0.71 / 0.73 / 0.72 at 0.05 / 0.1 /
# 0.2 / 0.5, 800 questions); the other corpora are held out (docs/listener-validity.md).
CATEGORY_WEIGHT = 0.2
# The classes the category term answers: emotions, which people name by what they hear (the
# human-speech bench measures emotions only). Not the attitudes: on the six tuning and reserved
# TTS rotations the term raised every emotion family (dose 728 -> 786 right answers) but lowered
# both attitude classes (male propositional attitude 53 cells lower, 1 higher; male
# interpersonal attitude 49 lower, 10 higher), whose realisations differ from sentence to
# sentence more than one prototype per subcategory allows.
CATEGORY_CLASSES = ("emotion",)
# METHOD_VERSION names the answering method. It changes whenever an answer can change, so
# that results, caches and validation runs of different methods are never mixed. The method:
# monotone speech counts as speech (``speech_presence.MIN_TIMBRE_SPREAD``); the within-voice
# alignment keeps each rendition's last frame in place (``prosody._positions_many``), so no
# rendition seems to slow down at its end, which would tell the renditions' order; the level
# term abstains when the renditions' speech powers lie within ``prosody.LEVEL_VOTE_DB``
# (speech power, not the mean of frame decibels, which timing moves); a multi-stimulus
# question is answered knowing that its samples are the candidates one each (``one_each``);
# the cross-voice alignment (``prosody.onto``) compares cepstra normalised to unit variance
# per coefficient (``prosody._standardised_cepstra``); an emotion question also weighs the
# category term (``CATEGORY_WEIGHT``, ``CATEGORY_CLASSES``).
METHOD_VERSION = "18"


def listener_version() -> str:
    """Name this listener's version, as results, caches and validation runs record it.

    Returns:
        "features-v<feature version>-method-v<method version>": either changing changes
        answers.
    """
    from adept_eval.signal.prosody import FEATURE_VERSION

    return f"features-v{FEATURE_VERSION}-method-v{METHOD_VERSION}"


def posterior(total: np.ndarray, temperature: float = TEMPERATURE) -> np.ndarray:
    """Turn the listener's weighted distances to the candidates into a posterior.

    Args:
        total: Distances, candidates in the last axis.
        temperature: The softmax's temperature (floored at 1e-6).

    Returns:
        softmax(-total / temperature) over the last axis.
    """
    logits = -total / max(temperature, 1e-6)
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def log_posterior(total: np.ndarray, temperature: float = TEMPERATURE) -> np.ndarray:
    """The posterior's logarithm (``posterior``), computed without underflow: distances far
    apart give log-probabilities far below zero, not probabilities of exactly zero.

    Args:
        total: Distances, candidates in the last axis.
        temperature: The softmax's temperature (floored at 1e-6).

    Returns:
        log softmax(-total / temperature) over the last axis.
    """
    logits = -total / max(temperature, 1e-6)
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))


def one_each(post: np.ndarray, *, log: bool = False) -> np.ndarray:
    """Per sample (row) and candidate (column), the probability that the sample is that
    candidate given that the samples are the candidates one each, from each sample's own
    posterior (rows; square): the sum over the assignments that give the sample that candidate
    of the product of every sample's posterior of its assigned candidate, over all assignments.

    Why: a multi-stimulus question plays the same sentence in every subcategory (ADEPT's
    design: "the same sentence said in each of the subcategories + neutral"), so a listener
    asked which sample is the angry one hears the others too: a sample that sounds as angry as
    it sounds fearful is not the angry one when another sample is more likely angry than
    anything else. Identical renditions give identical rows and identical scores (chance).

    The products are summed in the log domain: with distances far apart every assignment's
    product of probabilities can underflow to zero, which would read as a tie.

    Args:
        post: Each sample's own posterior over the candidates (square: samples x
            candidates); its logarithm with ``log``.
        log: ``post`` holds log-probabilities (``log_posterior``).

    Returns:
        The probabilities, shaped as ``post``.
    """
    n = post.shape[0]
    with np.errstate(divide="ignore"):
        logs = np.asarray(post, dtype=float) if log else np.log(np.asarray(post, dtype=float))
    rows = np.arange(n)
    perms = np.array(list(itertools.permutations(range(n))))
    weights = logs[rows, perms].sum(axis=1)  # each assignment's log-probability
    if not np.isfinite(weights).any():
        return np.full(logs.shape, 1.0 / n)
    weights = np.exp(weights - weights.max())
    out = np.zeros(logs.shape, dtype=float)
    np.add.at(out, (np.broadcast_to(rows, perms.shape), perms), weights[:, None])
    total = out.sum(axis=1, keepdims=True)
    return np.divide(out, total, out=np.full_like(out, 1.0 / n), where=total > 0)


def _stimulus_scores(question: Question, subs: tuple[str, ...], post: np.ndarray,
                     sentence_relative: bool, log_post: np.ndarray | None = None
                     ) -> tuple[np.ndarray, list[int]]:
    """The score of each answer choice from the posterior ``post`` (rows: renditions,
    columns: candidates ``subs``), and the rows it read.

    A multi-stimulus question scores each stimulus as the target, one rendition per
    candidate (``one_each``); a single-stimulus question reads its own rendition's row (row 0
    when the sample was compared alone). ``log_post``, the posterior's logarithm, keeps a
    multi-stimulus answer free of underflow.
    """
    if question.design == "multi":
        target = subs.index(question.target)
        by_stimulus = [subs.index(s) for s in question.stimulus_subcategories]
        combined = one_each(log_post, log=True) if log_post is not None else one_each(post)
        return combined[by_stimulus, target], by_stimulus
    row = subs.index(question.target) if sentence_relative else 0
    return post[row], [row]


@register_listener("acoustic")
@dataclass
class AcousticListener(Listener):
    """A listener that answers by acoustics alone: each rendition's F0, energy and timing
    compared with the natural recordings of every candidate subcategory, the nearest taken
    (a posterior over the candidates at ``temperature``).

    It needs no model or server and gives the same answers on every machine, so it serves as
    the reference listener and the judge of runs without one. ``graded`` adds the graded
    figures of each sample (``scoring.graded``); ``workers`` sets the feature-extraction
    processes.
    """

    corpus: Corpus | None = None
    cache_dir: str | None = None
    temperature: float = TEMPERATURE
    graded: bool = True
    progress: bool = True
    workers: int | None = None  # feature-extraction processes; None: prosody.default_workers()
    store: FeatureStore = field(init=False)
    _memo: dict = field(init=False, default_factory=dict)
    _speech: dict = field(init=False, default_factory=dict)

    def __post_init__(self):
        """Load the corpus and check the options before any question is asked.

        Raises:
            OptionError: An option is out of range, or ``cache_dir`` cannot be written.
        """
        self.corpus = self.corpus or load_corpus()
        self.cache_dir = _usable_cache_dir(self.cache_dir)
        self.store = FeatureStore(self.cache_dir)
        self.temperature = _temperature(self.temperature)
        self.graded = yes_no(self.graded, "graded", "--metadata")
        self.progress = yes_no(self.progress, "progress", "--metadata")
        self.workers = _workers(self.workers)
        self._scorer = None

    def identity(self) -> dict:
        """What distinguishes this listener's scores (``identity``: runs are ranked and compared
        only among equal identities). ``temperature`` is recorded when it is not the default:
        it sets every posterior, and a multi-stimulus answer combines the posteriors of its
        samples (``one_each``), so another temperature gives other answers (adept_emotion_female
        of one synthetic system: 0.55 at 0.5, 0.65 at 5). At the default it is left out, so
        every default run has one identity, whichever adept-eval version recorded it. The
        other options change no answer or figure: ``graded`` only adds the graded figures or
        leaves them out (accuracy unchanged; a run without them is not ranked by prosody
        distance), and ``workers``, ``progress`` and ``cache_dir`` change only speed and where
        features are kept.

        Returns:
            The listener's name and version, and ``temperature`` when not the default.
        """
        ident = {"listener": self.name, "listener_version": listener_version()}
        if self.temperature != TEMPERATURE:
            ident["temperature"] = self.temperature
        return ident

    # ------------------------------------------------------------------ pieces
    def _natural_paths(self, cls: str, speaker: str, sentence_id: str,
                       subs: tuple[str, ...]) -> list[str]:
        key = f"{spec.SPEAKERS[speaker]}_{sentence_id}"
        return [self.corpus.get(f"{cls}/{s}/{key}").audio_path for s in subs]

    def _natural(self, cls: str, speaker: str, sentence_id: str, subs: tuple[str, ...]):
        return [self.store.get(p) for p in self._natural_paths(cls, speaker, sentence_id, subs)]

    @staticmethod
    def siblings(path: str, cls: str, subs: tuple[str, ...]) -> list[str] | None:
        """Find the system's renditions of the same sentence next to a sample.

        Args:
            path: A sample, at ``<cls>/<subcategory>/<name>`` in the system's folder.
            cls: Its class.
            subs: The subcategories whose renditions are wanted.

        Returns:
            Their files, in ``subs`` order; None when ``path`` is not in a ``cls`` folder or
            a rendition is missing.
        """
        sample = Path(path)
        if sample.parent.parent.name != cls:
            return None
        found = []
        for sub in subs:
            rendition = find_audio(sample.parent.parent / sub / sample.stem)
            if rendition is None:
                return None
            found.append(str(rendition))
        return found

    def _usable_siblings(self, samples: dict[str, str | None], question: Question, key: str,
                         subs: tuple[str, ...]) -> tuple[str, ...]:
        """A single-stimulus question's sentence renditions in ``subs`` order, or () to judge
        its sample alone (``lone-sample``), its own sample being usable.

        Only renditions the caller gave and did not refuse are heard: a stimulus the samples
        map holds with no path (the harness's mark of a sample that failed its check) is not
        looked up on disk, where the refused file may still lie (unreadable, empty, silent...),
        and a rendition whose features cannot be read or that holds no speech is left out
        too. Without them the question is answered as for a deleted file, so one bad sample
        costs its own question(s), not its sentence's (the rule: one bad sample never fails
        another's judgement). Only when the caller gave none of the other renditions at all
        (a caller that hands each question its own samples) are they looked for next to the
        sample (``siblings``). When every rendition is usable, this is the sentence-relative
        comparison the listener always made: answers of runs without failures are unchanged."""
        given = [f"{question.cls}/{s}/{key}" for s in subs]
        if all(samples.get(g) for g in given):
            found = [samples[g] for g in given]
        elif any(g in samples and not samples[g] for g in given):
            return ()  # the caller refused one of them
        else:
            found = self.siblings(samples[question.stimuli[0]], question.cls, subs) or []
        return tuple(found) if all(map(self._speech_heard, found)) else ()

    def _speech_heard(self, path: str) -> bool:
        """Whether the rendition at ``path`` can be read and holds speech (an unreadable one
        is heard by its own question only)."""
        try:
            return not self._no_speech((path,))
        except Exception:  # noqa: BLE001 - unreadable: heard by its own question only
            return False

    @staticmethod
    def _given_siblings(samples: dict[str, str], cls: str, key: str,
                        subs: tuple[str, ...]) -> list[str] | None:
        """The system's renditions of the sentence in ``subs``, from the samples given."""
        found = [samples.get(f"{cls}/{s}/{key}") for s in subs]
        return found if all(found) else None

    def _compare(self, cls: str, speaker: str, sentence_id: str, subs: tuple[str, ...],
                 paths: tuple[str, ...]):
        """(S, K) per-term distances of the system's renditions ``paths`` (in ``subs`` order)
        to the natural candidates ``subs``; memoised per sentence (``Comparison``). Worked out
        with BLAS on one thread whoever calls (``one_blas_thread``): the alignments' cost
        matrices differ in their last bits with the thread count, and reference profiles are
        cached on disk for every later run. The memo is keyed by the renditions' content
        keys, not their paths: a file rewritten in place (a user re-synthesising into the same
        folder and scoring again in one Python session) is compared afresh, not answered with
        the old file's comparison."""
        memo_key = (cls, speaker, sentence_id, subs, tuple(self.store.key(p) for p in paths))
        if memo_key not in self._memo:
            with one_blas_thread():
                natural, spread = self.store.reference(
                    self._natural_paths(cls, speaker, sentence_id, subs))
                system = onto(sentence_profiles([self.store.get(p) for p in paths]), natural)
                self._memo[memo_key] = compare_sentence(system, natural, spread)
        return self._memo[memo_key]

    def _prototypes(self, cls: str, speaker: str, subs: tuple[str, ...]) -> np.ndarray:
        """Each subcategory's prototype: the natural renditions' cue deviations
        (``prosody.sentence_cues``) averaged over every sentence of the class and speaker the
        corpus holds - the class model the category term compares with, built from the
        references alone.

        Returns:
            (subcategories, cues) prototypes, in ``subs`` order (memoised).
        """
        memo_key = ("prototypes", cls, speaker, subs)
        if memo_key not in self._memo:
            per_sentence = []
            for sid in spec.CLASSES[cls].sentence_ids():
                try:
                    paths = self._natural_paths(cls, speaker, sid, subs)
                except KeyError:  # a corpus that holds only some sentences: those it holds
                    continue
                per_sentence.append(sentence_cues([self.store.get(p) for p in paths]))
            self._memo[memo_key] = np.mean(per_sentence, axis=0)
        return self._memo[memo_key]

    def _category(self, cls: str, speaker: str, subs: tuple[str, ...],
                  paths: tuple[str, ...]) -> np.ndarray:
        """The category term: how far each system rendition's global cues lie from each
        subcategory's prototype (``prosody.category_distance``); the level and duration cues
        abstain where the system's renditions share one level or one duration
        (``prosody.cue_votes``).

        Returns:
            (renditions, candidates) distances.
        """
        system = sentence_cues([self.store.get(p) for p in paths])
        level_votes, tempo_votes = cue_votes(system)
        return category_distance(system, self._prototypes(cls, speaker, subs),
                                 level_votes=level_votes, tempo_votes=tempo_votes)

    def forget_comparisons(self) -> None:
        """Drop the memoised sentence comparisons, so they are computed again (a benchmark
        timing the listener from scratch needs that); the features stay cached."""
        self._memo.clear()

    def _posterior(self, total: np.ndarray) -> np.ndarray:
        return posterior(total, self.temperature)

    def _log_posterior(self, total: np.ndarray) -> np.ndarray:
        return log_posterior(total, self.temperature)

    @staticmethod
    def choose(question: Question, scores: np.ndarray) -> int:
        """Pick the choice with the highest score.

        Args:
            question: The question (its id seeds the guess among tied choices).
            scores: Each choice's score.

        Returns:
            The index of the best choice; a tie (to 1e-9) is a guess among the tied, the
            same guess on every run.
        """
        best = np.flatnonzero(scores >= scores.max() - 1e-9)
        if len(best) == 1:
            return int(best[0])
        seed = int.from_bytes(hashlib.sha256(question.question_id.encode()).digest()[:4], "big")
        return int(best[seed % len(best)])

    def _no_speech(self, paths) -> str | None:
        """Why the first of ``paths`` without speech has none, or None. Memoised by content
        key, as the comparisons are: a silent rendition re-synthesised in place is heard."""
        for p in paths:
            key = self.store.key(p)
            if key not in self._speech:
                self._speech[key] = reason_from_features(self.store.get(p))
            if self._speech[key]:
                return f"{p}: no speech ({self._speech[key]})"
        return None

    # ------------------------------------------------------------------ answering
    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        """Answer one question by comparing the system's renditions with the natural ones.

        Args:
            question: the question.
            samples: stimulus id -> the system's sample path (None: a sample the caller
                refused).

        Returns:
            The choice, with each stimulus's scores and, as JSON detail, the method, the
            candidates and each sample's distances and posterior; a failed answer when a
            sample heard holds no speech.

        Raises:
            KeyError: a stimulus the question needs has no entry in ``samples``.
            Exception: whatever reading or analysing a sample raises (``answer_many`` turns
                it into a failed answer).
        """
        subs, paths, problem = self._renditions(question, samples)
        if problem:
            return Answer((Response(None, detail="no speech"),), "failed", detail=problem)
        if paths:
            comparison = self._compare(question.cls, question.speaker, question.sentence_id,
                                       subs, paths)
            total = comparison.total(TERM_WEIGHTS)
            scaled = {t: comparison.terms[t] / comparison.scale[t] for t in TERMS}
            method = "sentence-relative"
            if question.cls in CATEGORY_CLASSES:
                category = self._category(question.cls, question.speaker, subs, paths)
                total = total + CATEGORY_WEIGHT * category
                scaled["category"] = category
        else:
            scaled, total = self._lone_sample(question, samples[question.stimuli[0]], subs)
            method = "lone-sample"
        post = self._posterior(total)
        scores, rows = _stimulus_scores(question, subs, post, bool(paths),
                                        self._log_posterior(total))
        choice = self.choose(question, scores)
        detail = {
            "method": method,
            "candidates": list(subs),
            "samples": [{"stimulus": (question.stimuli[i] if question.design == "multi"
                                      else question.stimuli[0]),
                         "distance": {t: [round(float(x), 3) for x in scaled[t][r]]
                                      for t in scaled},
                         "posterior": [round(float(x), 3) for x in post[r]]}
                        for i, r in enumerate(rows)],
        }
        return Answer((Response(choice),), "ok", tuple(float(x) for x in scores),
                      detail=json.dumps(detail, separators=(",", ":")))

    def _renditions(self, question: Question,
                    samples: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
        """The candidates of a question, the system's renditions to compare in their order,
        and why a sample heard holds no speech (None when all do).

        A multi-stimulus question hears every rendition of its sentence; a single-stimulus
        question its own sample, with its sentence's other renditions when all are usable
        (``_usable_siblings``; none: the sample is judged alone).
        """
        cls = spec.CLASSES[question.cls]
        key = f"{spec.SPEAKERS[question.speaker]}_{question.sentence_id}"
        if question.design == "multi":
            subs = cls.subcategories_for(question.speaker)
            paths = tuple(samples[f"{question.cls}/{s}/{key}"] for s in subs)
            return subs, paths, self._no_speech(paths)
        subs = tuple(question.choice_subcategories)
        problem = self._no_speech((samples[question.stimuli[0]],))
        paths = () if problem else self._usable_siblings(samples, question, key, subs)
        return subs, paths, problem

    def _lone_sample(self, question: Question, path: str, subs: tuple[str, ...]):
        """Compare a lone sample with each candidate's natural recording directly, each
        normalised by its own voice.

        Returns:
            Term -> a (1, K) array of distances, and their (1, K) sum.
        """
        sample = self.store.get(path)
        nat = self._natural(question.cls, question.speaker, question.sentence_id, subs)
        rows = [distance_terms(sample, VoiceNorm.of([sample]), n, VoiceNorm.of([n]))
                for n in nat]
        scaled = {t: np.array([[r[t] for r in rows]]) for t in rows[0]}
        return scaled, sum(scaled.values())

    def answer_many(self, asked: list[tuple[Question, dict[str, str]]]) -> list[Answer]:
        """Answer the questions one at a time (CPU-bound, memoised per sentence), with a
        progress bar, their features extracted first on worker processes.

        Args:
            asked: (question, stimulus id -> sample path) per question.

        Returns:
            One answer per question, in order; a question the listener cannot answer gets a
            failed answer, never an exception, so one bad question does not end the run.
        """
        from tqdm.auto import tqdm

        out = []
        # disable only when asked to (or for one question): otherwise tqdm's own defaults
        # apply, TQDM_DISABLE included
        quiet = {"disable": True} if not self.progress or len(asked) < 2 else {}
        with one_blas_thread():
            self._prefetch(asked)
            for q, samples in tqdm(asked, desc=f"{self.name}: listening", unit="question",
                                   **quiet):
                try:
                    out.append(self.answer(q, samples))
                except Exception as exc:  # one bad question must not end the run
                    detail = f"listener error: {type(exc).__name__}: {exc}"
                    out.append(Answer((Response(None, detail=detail),), "failed",
                                      detail=detail))
        return out

    def expect(self, paths) -> int:
        """The run's files (its samples and their natural references, in the order they will
        be scored) exist: extract their features in the background beside this process
        (``FeatureStore.extract_ahead``), so that scoring waits only for the files of the task
        it is on. ``workers=1`` keeps every extraction in this process.

        Args:
            paths: the files, in scoring order.

        Returns:
            How many files were queued.
        """
        return 0 if self.workers == 1 else self.store.extract_ahead(paths, self.workers)

    def _prefetch(self, asked: list[tuple[Question, dict[str, str]]]) -> None:
        """Extract every feature the questions will need first, in worker processes where the
        machine has the cores (``prosody.default_workers``); the answers then read them from
        the store, so they are the single-process answers. Best effort: a file that cannot be
        read is left for its own question to fail on."""
        import logging

        paths = dict.fromkeys(p for _, samples in asked for p in samples.values() if p)
        for q, _ in asked:
            key = f"{spec.SPEAKERS[q.speaker]}_{q.sentence_id}"
            for sub in spec.CLASSES[q.cls].subcategories_for(q.speaker):
                try:
                    paths[self.corpus.get(f"{q.cls}/{sub}/{key}").audio_path] = None
                except KeyError:  # the answer says so itself
                    continue
        try:
            self.store.prefetch(list(paths), self.workers, progress=self.progress)
        except Exception as exc:  # the answers then extract what they need themselves
            logging.getLogger(__name__).warning("parallel feature extraction failed (%s); "
                                                "extracting in this process", exc)

    # ------------------------------------------------------------------ graded figures
    def sentence_distances(self, cls: str, speaker: str, sentence_id: str,
                           samples: dict[str, str]) -> np.ndarray:
        """The listener's (S, K) total distances of the system's renditions of one sentence
        (rows) to the natural ones (columns), both in ``subcategories_for(speaker)`` order -
        the matrix its answers came from (memoised: no second comparison).

        Args:
            cls: The class.
            speaker: "female" or "male".
            sentence_id: The sentence.
            samples: Stimulus id -> the system's sample path.

        Returns:
            The (S, K) matrix; all NaN when a rendition is missing or holds no speech (the
            comparison needs them all).
        """
        subs = spec.CLASSES[cls].subcategories_for(speaker)
        key = f"{spec.SPEAKERS[speaker]}_{sentence_id}"
        paths = self._given_siblings(samples, cls, key, subs)
        if paths is None or self._no_speech(paths):
            return np.full((len(subs), len(subs)), np.nan)
        return self._compare(cls, speaker, sentence_id, subs, tuple(paths)).total(TERM_WEIGHTS)

    def gives_graded_figures(self) -> bool:
        """Whether the graded figures are asked for (``--metadata graded``, on by default).

        Returns:
            The ``graded`` option.
        """
        return bool(self.graded)

    def graded_scores(self, samples: dict[str, str], stimuli) -> dict:
        """The graded figures of the stimuli, on the features and comparisons the answers
        already made (a sentence's other renditions set the voice's level).

        Args:
            samples: stimulus id -> the system's file (None: refused).
            stimuli: the stimulus ids to score.

        Returns:
            stimulus id -> ``graded.StimulusScores``.
        """
        with one_blas_thread():
            return self._graded_scores(samples, stimuli)

    def _graded_scores(self, samples: dict[str, str], stimuli) -> dict:
        from adept_eval.scoring import graded

        if self._scorer is None:
            self._scorer = graded.AdeptScorer(self.corpus, self.store, self._speech)
        out = {}
        for stimulus in stimuli:
            if stimulus in out:
                continue
            cls, sub, key = stimulus.split("/")
            spk_id, sentence_id = key.split("_")
            speaker = spec.SPEAKER_BY_ID[spk_id]
            subs = spec.CLASSES[cls].subcategories_for(speaker)
            by_sub = {s: samples[f"{cls}/{s}/{key}"] for s in subs
                      if samples.get(f"{cls}/{s}/{key}")}
            try:
                scores = self._scorer.sentence(
                    cls, speaker, sentence_id, by_sub,
                    distances=self.sentence_distances(cls, speaker, sentence_id, samples))
            except Exception as exc:  # a figure that cannot be computed is a counted failure
                scores = {s: graded.failed(f"{cls}/{s}/{key}", f"{type(exc).__name__}: {exc}")
                          for s in subs}
            for s, record in scores.items():
                out[f"{cls}/{s}/{key}"] = record
        return {s: out[s] for s in dict.fromkeys(stimuli)}


def _workers(value) -> int | None:
    """``workers=``: a positive number of processes, or empty/``auto`` for one per two cores
    (``prosody.default_workers``)."""
    if value is None or str(value).strip().lower() in ("", "auto"):
        return None
    return number(value, "workers", "--metadata", whole=True, least=1,
                  fail=lambda problem: OptionError(
                      f"--metadata workers={value}: expected a positive number of processes or "
                      f"'auto' ({problem})"))


def _temperature(value) -> float:
    """``temperature=``: the posterior's softmax temperature, a positive number."""
    return number(value, "temperature", "--metadata", positive=True,
                  fail=lambda problem: OptionError(
                      f"--metadata temperature={value}: expected a positive number (default "
                      f"{TEMPERATURE}; {problem})"))


def _usable_cache_dir(value) -> str | None:
    """``cache_dir=``: a folder the features can be written to (made if missing). Checked
    before any question: a cache that cannot be written would otherwise fail every question
    one by one and be charged to the system."""
    if value is None:
        return None
    folder = Path(str(value)).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".adept-eval-write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OptionError(f"--metadata cache_dir={value}: not a folder features can be written "
                          f"to ({reason})") from None
    return str(folder)
