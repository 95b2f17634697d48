"""The reference-matching acoustic listener (default; CPU, deterministic, no network).

It compares the prosody of a system's samples with ADEPT's natural recordings of every
subcategory of the same sentence (``prosody.distance``: speaker-normalised F0 contour, energy
contour, tempo and timing, aligned by DTW on MFCCs), then answers as a listener would:

- multi-stimulus questions: each sample's similarity to the natural subcategories becomes a
  posterior over subcategories (softmax of negative distances, scaled by their median); the
  listener picks the sample with the highest posterior for the target subcategory, i.e. the
  one that sounds most like the target *relative to the other subcategories*;
- single-stimulus questions: the interpretation whose natural recording the sample is closest to.

Deviations below a just-noticeable difference count as none, so a system that barely moves
its prosody gets answers close to guessing, as with human listeners.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import spec
from ..corpus import Corpus, load_corpus
from ..prosody import FeatureStore, VoiceNorm, distance
from ..questions import Question
from . import Answer, Listener, Response, register_listener


@register_listener("acoustic")
@dataclass
class AcousticListener(Listener):
    corpus: Corpus | None = None
    cache_dir: str | None = None
    store: FeatureStore = field(init=False)
    _memo: dict = field(init=False, default_factory=dict)

    def __post_init__(self):
        self.corpus = self.corpus or load_corpus()
        self.store = FeatureStore(self.cache_dir)

    def identity(self) -> dict:
        from ..prosody import FEATURE_VERSION

        return {"listener": self.name, "listener_version": f"features-v{FEATURE_VERSION}"}

    def _natural(self, question: Question, subs: tuple[str, ...]):
        key = f"{spec.SPEAKERS[question.speaker]}_{question.sentence_id}"
        return [self.store.get(self.corpus.get(f"{question.cls}/{s}/{key}").audio_path)
                for s in subs]

    def _distances(self, question: Question, subs: tuple[str, ...], paths: tuple[str, ...],
                   per_utterance_norm: bool) -> np.ndarray:
        """Distances from the system's samples (rows) to the natural subcategories (columns);
        memoised, since the questions on one sentence share them."""
        memo_key = (question.cls, question.speaker, question.sentence_id, subs, paths)
        if memo_key not in self._memo:
            nat = self._natural(question, subs)
            sys = [self.store.get(p) for p in paths]
            if per_utterance_norm:
                d = [[distance(s, VoiceNorm.of([s]), n, VoiceNorm.of([n])) for n in nat]
                     for s in sys]
            else:
                sys_norm, nat_norm = VoiceNorm.of(sys), VoiceNorm.of(nat)
                d = [[distance(s, sys_norm, n, nat_norm) for n in nat] for s in sys]
            self._memo[memo_key] = np.array(d)
        return self._memo[memo_key]

    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        cls = spec.CLASSES[question.cls]
        key = f"{spec.SPEAKERS[question.speaker]}_{question.sentence_id}"
        if question.design == "multi":
            # rows and columns in canonical subcategory order; the voice is normalised over
            # all renditions of the sentence, so relative levels between them are kept
            subs = cls.subcategories_for(question.speaker)
            paths = tuple(samples[f"{question.cls}/{s}/{key}"] for s in subs)
            d = self._distances(question, subs, paths, per_utterance_norm=False)
            finite = np.isfinite(d)
            tau = float(np.median(d[finite])) if finite.any() else 1.0
            logits = np.where(finite, -d / max(tau, 1e-6), -np.inf)
            logits = logits - np.max(np.where(finite, logits, -1e300), axis=1, keepdims=True)
            weights = np.exp(logits)
            post = weights / np.maximum(weights.sum(axis=1, keepdims=True), 1e-300)
            by_sub = post[:, subs.index(question.target)]
            scores = np.array([by_sub[subs.index(s)] if np.isfinite(d[subs.index(s)]).any()
                               else -np.inf for s in question.stimulus_subcategories])
        else:
            subs = tuple(question.choice_subcategories)
            d = self._distances(question, subs, (samples[question.stimuli[0]],),
                                per_utterance_norm=True)[0]
            scores = -d
        if not np.isfinite(scores).any():
            return Answer((Response(None, detail="no usable speech"),), "failed",
                          detail="no usable speech in the samples")
        choice = int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))
        return Answer((Response(choice),), "ok", tuple(float(x) for x in scores))
