"""``prosody``'s global cues and the category distance (made-up features), and the acoustic
listener's category term on the synthetic corpus's emotion references."""

from __future__ import annotations

import numpy as np
import pytest

from adept_eval.corpora import spec
from adept_eval.signal.prosody import (
    CUE_UNITS,
    CUES,
    Features,
    category_distance,
    global_cues,
    sentence_cues,
)


def _features(f0, energy, speech=None):
    n = len(energy)
    return Features(np.asarray(f0, float), np.asarray(energy, float), np.zeros((n, 12)),
                    np.ones(n, bool) if speech is None else np.asarray(speech, bool))


def test_global_cues_read_pitch_level_timing_and_voicing():
    f0 = np.where(np.arange(40) % 2 == 0, 12.0, np.nan)  # every other frame voiced, flat
    cues = dict(zip(CUES, global_cues(_features(f0, np.full(40, -20.0)))))
    assert cues["f0_median"] == 12.0 and cues["f0_range"] == 0.0
    assert cues["level"] == pytest.approx(-20.0) and cues["level_dynamics"] == 0.0
    assert cues["voicing"] == pytest.approx(0.5)
    assert cues["duration"] == pytest.approx(np.log(40 * 0.02))
    rising = dict(zip(CUES, global_cues(_features(np.linspace(0, 8, 40), np.full(40, -20.0)))))
    assert rising["f0_range"] == pytest.approx(6.4, abs=0.05)
    assert rising["f0_movement"] == pytest.approx(8 / 39, abs=1e-6)


def test_sentence_cues_are_deviations_from_the_mean_rendition_in_cue_units():
    low = _features(np.full(30, 10.0), np.full(30, -30.0))
    high = _features(np.full(30, 14.0), np.full(30, -24.0))
    dev = sentence_cues([low, high])
    assert np.allclose(dev.sum(axis=0), 0.0)
    f0 = CUES.index("f0_median")
    assert dev[1, f0] == pytest.approx(2.0 / CUE_UNITS[f0])  # 2 semitones above the mean


def test_a_cue_that_abstains_cannot_tell_subcategories_apart():
    prototypes = np.zeros((2, len(CUES)))
    prototypes[0, CUES.index("level")] = 6.0  # the first is louder, nothing else differs
    system = np.zeros((2, len(CUES)))
    system[0, CUES.index("level")] = 6.0
    voting = category_distance(system, prototypes, level_votes=True, tempo_votes=True)
    assert voting[0, 0] < voting[0, 1] and voting[1, 1] < voting[1, 0]
    silent = category_distance(system, prototypes, level_votes=False, tempo_votes=True)
    assert np.all(silent == 0.0)


def test_the_category_term_recognises_each_emotion_on_another_sentence(corpus, tmp_path):
    """Each subcategory's prototype is the references' mean over the class's sentences, so the
    renditions of one sentence, heard as a system's, lie nearest their own subcategory's
    prototype (the synthetic corpus conveys each emotion by its global cues)."""
    from adept_eval.scoring.listeners import get_listener

    listener = get_listener("acoustic", corpus=corpus, cache_dir=str(tmp_path), workers=1,
                            progress=False)
    emotion = spec.CLASSES["emotion"]
    for speaker in spec.SPEAKERS:
        subs = emotion.subcategories_for(speaker)
        prototypes = listener._prototypes("emotion", speaker, subs)
        assert prototypes.shape == (len(subs), len(CUES))
        right = 0
        for sid in emotion.sentence_ids():
            paths = tuple(listener._natural_paths("emotion", speaker, sid, subs))
            distances = listener._category("emotion", speaker, subs, paths)
            right += int(np.sum(np.argmin(distances, axis=1) == np.arange(len(subs))))
        assert right >= 0.8 * len(subs) * len(emotion.sentence_ids())


def test_the_level_and_duration_cues_abstain_where_the_renditions_share_them():
    from adept_eval.signal.prosody import cue_votes

    same = sentence_cues([_features(np.full(30, 10.0), np.full(30, -30.0)),
                          _features(np.full(30, 14.0), np.full(30, -29.5))])
    assert cue_votes(same) == (False, False)  # 0.5 dB apart, one duration
    apart = sentence_cues([_features(np.full(30, 10.0), np.full(30, -30.0)),
                           _features(np.full(40, 14.0), np.full(40, -24.0))])
    assert cue_votes(apart) == (True, True)  # 6 dB apart, a third longer
