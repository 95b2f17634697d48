"""The reference-matching acoustic listener (default; CPU, deterministic, no network).

It hears every subcategory of a sentence on both sides: ADEPT's natural recordings and the
system's samples. Each side's renditions are turned into deviations from that side's own mean
rendition of the sentence (``prosody.sentence_profiles``), so what an engine or voice does to
every rendition alike - its sentence melody, declination, rate and level - cancels, and what is
left is what each subcategory changes. A system rendition is then compared with each natural
candidate (``prosody.compare_sentence``) on three terms: F0 (semitones; a frame the natural
candidate voices and the system does not is a large deviation), energy (dB) and tempo (local
and total log duration), each weighted towards the frames where the natural candidates differ
most and scaled by how far those candidates lie from one another. The weighted sum becomes a
posterior over candidates, softmax(-d / temperature).

- multi-stimulus questions: the sample with the highest posterior for the target subcategory;
- single-stimulus questions: the interpretation with the highest posterior. The system's other
  renditions of the sentence are read from the folder it sits in (``<cls>/<sub>/<key>.*``, the
  layout ``adept-eval manifest`` asks for); without them the listener falls back to comparing
  the sample alone (speaker-normalised, ``prosody.distance``).

A sample that holds no speech (``speech_presence``) is not judged: the question fails. Ties (a
system that speaks every subcategory alike) are broken by a guess seeded with the question id.
Every answer's ``detail`` holds, per candidate, the distance per term and the posterior.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import spec
from ..audio import find_audio
from ..corpus import Corpus, load_corpus
from ..prosody import (TERMS, FeatureStore, VoiceNorm, compare_sentence, distance_terms, onto,
                       sentence_profiles)
from ..questions import Question
from ..speech_presence import reason_from_features
from . import Answer, Listener, Response, register_listener

# Tuned on one rotation only (references festival, systems espeak-ng); reported on the other.
TERM_WEIGHTS = {"f0": 1.0, "energy": 0.5, "tempo": 1.0}
TEMPERATURE = 0.5
METHOD_VERSION = "2"


@register_listener("acoustic")
@dataclass
class AcousticListener(Listener):
    corpus: Corpus | None = None
    cache_dir: str | None = None
    temperature: float = TEMPERATURE
    store: FeatureStore = field(init=False)
    _memo: dict = field(init=False, default_factory=dict)
    _speech: dict = field(init=False, default_factory=dict)

    def __post_init__(self):
        self.corpus = self.corpus or load_corpus()
        self.store = FeatureStore(self.cache_dir)
        self.temperature = float(self.temperature)

    def identity(self) -> dict:
        from ..prosody import FEATURE_VERSION

        return {"listener": self.name,
                "listener_version": f"features-v{FEATURE_VERSION}-method-v{METHOD_VERSION}"}

    # ------------------------------------------------------------------ pieces
    def _natural(self, question: Question, subs: tuple[str, ...]):
        key = f"{spec.SPEAKERS[question.speaker]}_{question.sentence_id}"
        return [self.store.get(self.corpus.get(f"{question.cls}/{s}/{key}").audio_path)
                for s in subs]

    @staticmethod
    def _siblings(path: str, cls: str, subs: tuple[str, ...]) -> list[str] | None:
        """The system's renditions of the same sentence in ``subs``, found next to ``path``."""
        p = Path(path)
        if p.parent.parent.name != cls:
            return None
        found = []
        for s in subs:
            f = find_audio(p.parent.parent / s / p.stem)
            if f is None:
                return None
            found.append(str(f))
        return found

    def _compare(self, question: Question, subs: tuple[str, ...], paths: tuple[str, ...]):
        """(S, K) per-term distances of the system's renditions ``paths`` (in ``subs`` order)
        to the natural candidates ``subs``; memoised per sentence."""
        memo_key = (question.cls, question.speaker, question.sentence_id, subs, paths)
        if memo_key not in self._memo:
            natural = sentence_profiles(self._natural(question, subs))
            system = onto(sentence_profiles([self.store.get(p) for p in paths]), natural)
            self._memo[memo_key] = compare_sentence(system, natural)
        return self._memo[memo_key]

    def _posterior(self, total: np.ndarray) -> np.ndarray:
        logits = -total / max(self.temperature, 1e-6)
        logits = logits - logits.max(axis=-1, keepdims=True)
        w = np.exp(logits)
        return w / w.sum(axis=-1, keepdims=True)

    @staticmethod
    def _choose(question: Question, scores: np.ndarray) -> int:
        """argmax; a tie (to 1e-9) is a guess among the tied, seeded by the question id."""
        best = np.flatnonzero(scores >= scores.max() - 1e-9)
        if len(best) == 1:
            return int(best[0])
        seed = int.from_bytes(hashlib.sha256(question.question_id.encode()).digest()[:4], "big")
        return int(best[seed % len(best)])

    def _no_speech(self, paths) -> str | None:
        for p in paths:
            if p not in self._speech:
                self._speech[p] = reason_from_features(self.store.get(p))
            if self._speech[p]:
                return f"{p}: no speech ({self._speech[p]})"
        return None

    # ------------------------------------------------------------------ answering
    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        cls = spec.CLASSES[question.cls]
        key = f"{spec.SPEAKERS[question.speaker]}_{question.sentence_id}"
        if question.design == "multi":
            subs = cls.subcategories_for(question.speaker)
            paths = tuple(samples[f"{question.cls}/{s}/{key}"] for s in subs)
            candidates = subs
        else:
            subs = tuple(question.choice_subcategories)
            own = samples[question.stimuli[0]]
            paths = tuple(self._siblings(own, question.cls, subs) or ())
            candidates = subs
        heard = paths or (samples[question.stimuli[0]],)
        problem = self._no_speech(heard)
        if problem:
            return Answer((Response(None, detail="no speech"),), "failed", detail=problem)

        if paths:
            comparison = self._compare(question, subs, paths)
            terms = comparison.terms
            total = comparison.total(TERM_WEIGHTS)
            scaled = {t: terms[t] / comparison.scale[t] for t in TERMS}
            method = "sentence-relative"
        else:  # a lone sample: compare it with each candidate directly, speaker-normalised
            sys = self.store.get(heard[0])
            nat = self._natural(question, subs)
            rows = [distance_terms(sys, VoiceNorm.of([sys]), n, VoiceNorm.of([n])) for n in nat]
            scaled = {t: np.array([[r[t] for r in rows]]) for t in rows[0]}
            total = sum(scaled.values())
            method = "lone-sample"
        post = self._posterior(total)

        if question.design == "multi":
            target = subs.index(question.target)
            by_stimulus = [subs.index(s) for s in question.stimulus_subcategories]
            scores = np.array([post[i, target] for i in by_stimulus])
            rows = by_stimulus
        else:
            row = subs.index(question.target) if paths else 0
            scores = post[row]
            rows = [row]
        choice = self._choose(question, scores)
        detail = {
            "method": method,
            "candidates": list(candidates),
            "samples": [{"stimulus": (question.stimuli[i] if question.design == "multi"
                                      else question.stimuli[0]),
                         "distance": {t: [round(float(x), 3) for x in scaled[t][r]]
                                      for t in scaled},
                         "posterior": [round(float(x), 3) for x in post[r]]}
                        for i, r in enumerate(rows)],
        }
        return Answer((Response(choice),), "ok", tuple(float(x) for x in scores),
                      detail=json.dumps(detail, separators=(",", ":")))
