"""A naive listener to beat: four global features per utterance, no time alignment.

F0 median and range (10th-90th percentile, semitones), log duration and median speech level
(dB), each taken relative to its side's mean over the sentence's renditions (the same
information the acoustic listener gets), matched to the nearest natural candidate in units of
the candidates' own spread. Not registered as a listener: it exists to show what the acoustic
listener adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adept_eval.corpora import spec
from adept_eval.corpora.corpus import Corpus
from adept_eval.scoring.listeners import Answer, Listener, Response
from adept_eval.scoring.listeners.acoustic import AcousticListener
from adept_eval.signal.prosody import Features, FeatureStore
from adept_eval.corpora.questions import Question


def global_features(f: Features) -> np.ndarray:
    f0 = f.f0[~np.isnan(f.f0)]
    med, rng = (float(np.median(f0)), float(np.subtract(*np.percentile(f0, [90, 10])))) \
        if f0.size else (0.0, 0.0)
    level = float(np.median(f.energy[f.speech])) if f.speech.any() else -100.0
    return np.array([med, rng, np.log(max(f.n, 1)), level])


@dataclass
class GlobalBaseline(Listener):
    corpus: Corpus | None = None
    cache_dir: str | None = None
    store: FeatureStore = field(init=False)

    def __post_init__(self):
        self.name = "global-baseline"
        self.store = FeatureStore(self.cache_dir)

    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        cls = spec.CLASSES[question.cls]
        key = f"{spec.SPEAKERS[question.speaker]}_{question.sentence_id}"
        if question.design == "multi":
            subs = cls.subcategories_for(question.speaker)
            paths = [samples[f"{question.cls}/{s}/{key}"] for s in subs]
        else:
            subs = tuple(question.choice_subcategories)
            paths = AcousticListener.siblings(samples[question.stimuli[0]], question.cls, subs) \
                or [samples[question.stimuli[0]]]
        nat = np.array([global_features(self.store.get(self.corpus.get(
            f"{question.cls}/{s}/{key}").audio_path)) for s in subs])
        sys = np.array([global_features(self.store.get(p)) for p in paths])
        nat, sys = nat - nat.mean(0), sys - sys.mean(0)
        spread = nat.std(0) + np.array([0.3, 0.3, 0.02, 1.0])
        d = np.sqrt((((sys[:, None, :] - nat[None, :, :]) / spread) ** 2).sum(-1))
        if question.design == "multi":
            target = subs.index(question.target)
            logits = -d
            post = np.exp(logits - logits.max(1, keepdims=True))
            post /= post.sum(1, keepdims=True)
            scores = np.array([post[subs.index(s), target]
                               for s in question.stimulus_subcategories])
        else:
            row = subs.index(question.target) if len(paths) > 1 else 0
            scores = -d[row]
        return Answer((Response(AcousticListener.choose(question, scores)),), "ok",
                      tuple(float(x) for x in scores))
