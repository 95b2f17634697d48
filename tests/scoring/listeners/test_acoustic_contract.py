"""Contract tests of the acoustic listener's less-travelled paths and of the prosody helpers it
weighs its terms with (adept_eval.scoring.listeners.acoustic, adept_eval.signal.prosody).

Each test checks what a docstring promises, with the expected value worked out here by hand
(never by calling the function under test): the lone-sample fallback picks the candidate the
sample is closest to; a sentence holding a rendition without speech has no distance matrix
(NaN); the discriminative weights are larger where the natural candidates differ; a flat
profile is 0.5 from anything. The audio is the synthetic generator's (``synthetic.render``) at
16 kHz, one sentence at a time, behind a stub corpus: no full corpus is built.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from adept_eval.signal import prosody
from adept_eval.signal.prosody import _comparison
from adept_eval.corpora import spec, synthetic
from adept_eval.scoring.listeners.acoustic import AcousticListener
from adept_eval.corpora.questions import Question

RATE = 16000


# ----------------------------------------------------------------------------- set-up
class _Recording:
    def __init__(self, audio_path: str):
        self.audio_path = audio_path


class _StubCorpus:
    """What the acoustic listener asks of a corpus: ``get(stimulus_id).audio_path``."""

    def __init__(self, paths: dict[str, str]):
        self._paths = paths

    def get(self, stimulus_id: str) -> _Recording:
        return _Recording(self._paths[stimulus_id])

    def __bool__(self) -> bool:
        return True


def _write(path: Path, x: np.ndarray, rate: int = RATE) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), x, rate, subtype="PCM_16")
    return str(path)


def _natural(folder: Path, cls: str, speaker: str, sentence_id: str) -> dict[str, str]:
    """The sentence's natural renditions (every subcategory), as ``build_corpus`` renders them,
    at 16 kHz: stimulus id -> path."""
    key = f"{spec.SPEAKERS[speaker]}_{sentence_id}"
    text = synthetic.sentence(cls, sentence_id)
    out = {}
    for sub in spec.CLASSES[cls].subcategories_for(speaker):
        x = synthetic.render(text, speaker, synthetic.PROFILES[(cls, sub)],
                             seed=synthetic._seed("natural", cls, sub, key), rate=RATE)
        out[f"{cls}/{sub}/{key}"] = _write(folder / cls / sub / f"{key}.wav", x)
    return out


def _listener(paths: dict[str, str], tmp_path: Path) -> AcousticListener:
    return AcousticListener(corpus=_StubCorpus(paths), cache_dir=str(tmp_path / "features"),
                            graded=False, progress=False, workers=1)


def _single_question(cls: str, speaker: str, sentence_id: str, target: str) -> Question:
    """A single-stimulus question as ``questions.build_questions`` makes it."""
    key = f"{spec.SPEAKERS[speaker]}_{sentence_id}"
    subs = tuple(spec.CLASSES[cls].answer_subcategories(speaker))
    return Question(f"adept_{cls}_{speaker}/{key}/{target}", f"adept_{cls}_{speaker}", cls,
                    speaker, "single", sentence_id, synthetic.sentence(cls, sentence_id), "?",
                    (f"{cls}/{target}/{key}",), (target,), tuple(f"reading {s}" for s in subs),
                    subs, subs.index(target), target)


@pytest.fixture(scope="module")
def emphasis(tmp_path_factory):
    """Topical emphasis, female, sentence 0100: three readings whose pitch accents fall on the
    beginning, the middle and the end (6 semitones each)."""
    folder = tmp_path_factory.mktemp("emphasis")
    return folder, _natural(folder / "natural", "topical_emphasis", "female", "0100")


# ----------------------------------------------------------------------------- A3: lone sample
@pytest.mark.parametrize("target", ["beginning", "middle", "end"])
def test_a_lone_sample_that_is_its_reference_is_answered_with_that_reference(emphasis,
                                                                            tmp_path, target):
    """A system sample whose sibling renditions are neither given nor next to it is compared
    alone (speaker-normalised, ``prosody.distance``) with each candidate reference. A sample
    that IS the target's reference (a byte copy) lies at distance 0 from it and at a positive
    distance from the other readings (their accents fall elsewhere), so the listener must pick
    the target - the NEAREST candidate - with the highest posterior."""
    folder, natural = emphasis
    stimulus = f"topical_emphasis/{target}/ad00_0100"
    # a folder that is not <cls>/<sub>/: no siblings to be found next to it either
    lone = tmp_path / "system" / "lone" / "ad00_0100.wav"
    lone.parent.mkdir(parents=True)
    shutil.copyfile(natural[stimulus], lone)
    listener = _listener(natural, tmp_path)
    q = _single_question("topical_emphasis", "female", "0100", target)

    answer = listener.answer(q, {stimulus: str(lone)})

    detail = json.loads(answer.detail)
    assert answer.status == "ok" and detail["method"] == "lone-sample", detail
    assert detail["candidates"] == ["beginning", "middle", "end"]
    assert answer.responses[0].choice == q.answer, (target, detail)
    assert answer.correct(q) == 1
    # the copy's distance to its own reference is 0 in every term; the others' are not
    row = detail["samples"][0]
    own = q.answer
    assert all(row["distance"][t][own] == 0 for t in row["distance"]), row
    others = [j for j in range(3) if j != own]
    assert all(sum(row["distance"][t][j] for t in row["distance"]) > 0 for j in others), row
    post = row["posterior"]
    assert post[own] == max(post) and all(post[own] > post[j] for j in others), post


def test_a_lone_sample_in_another_voice_is_answered_by_its_prosody(emphasis, tmp_path):
    """The fallback is speaker-normalised: a system voice three semitones higher, with its own
    timing jitter, speaking the end-accented reading, is still nearest the 'end' reference."""
    folder, natural = emphasis
    cls, key = "topical_emphasis", "ad00_0100"
    x = synthetic.render(synthetic.sentence(cls, "0100"), "female",
                         synthetic.PROFILES[(cls, "end")], rate=RATE,
                         base_f0=synthetic.SPEAKER_F0["female"] * 2 ** (3 / 12), seed=12345)
    lone = _write(tmp_path / "somewhere" / f"{key}.wav", x)
    q = _single_question(cls, "female", "0100", "end")
    answer = _listener(natural, tmp_path).answer(q, {f"{cls}/end/{key}": lone})
    detail = json.loads(answer.detail)
    assert detail["method"] == "lone-sample"
    assert answer.responses[0].choice == q.answer, detail


# ----------------------------------------------------------------------------- A6: no speech
@pytest.fixture(scope="module")
def phrasing(tmp_path_factory):
    """Syntactic phrasing, male, sentence 0401: two readings (a break early or late)."""
    folder = tmp_path_factory.mktemp("phrasing")
    return folder, _natural(folder / "natural", "syntactic_phrasing", "male", "0401")


def _no_speech(kind: str) -> np.ndarray:
    t = np.arange(int(1.5 * RATE)) / RATE
    if kind == "silence":
        return np.zeros(len(t), dtype=np.float32)
    # a steady 180 Hz tone: loud and voiced, but neither its pitch nor its timbre moves
    return (0.3 * np.sin(2 * np.pi * 180 * t)).astype(np.float32)


@pytest.mark.parametrize("kind", ["silence", "tone"])
@pytest.mark.parametrize("which", ["interpretation_1", "interpretation_2"])
def test_sentence_distances_are_nan_when_a_rendition_holds_no_speech(phrasing, tmp_path, kind,
                                                                     which):
    """``sentence_distances``: NaN (the whole (S, K) matrix) when a rendition holds no speech;
    the comparison needs them all. With every rendition speech, the same call gives finite
    distances (so the NaN is the no-speech rule's, not the set-up's)."""
    folder, natural = phrasing
    cls, key = "syntactic_phrasing", "ad01_0401"
    subs = spec.CLASSES[cls].subcategories_for("male")
    listener = _listener(natural, tmp_path)
    # the system: a copy of each reading, in a manifest-style folder
    samples = {}
    for sub in subs:
        dest = tmp_path / "system" / cls / sub / f"{key}.wav"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(natural[f"{cls}/{sub}/{key}"], dest)
        samples[f"{cls}/{sub}/{key}"] = str(dest)

    finite = listener.sentence_distances(cls, "male", "0401", samples)
    assert finite.shape == (len(subs), len(subs)) and np.isfinite(finite).all(), finite

    bad = dict(samples)
    bad[f"{cls}/{which}/{key}"] = _write(tmp_path / "bad" / cls / which / f"{key}.wav",
                                         _no_speech(kind))
    assert listener._no_speech([bad[f"{cls}/{which}/{key}"]]), "the set-up must hold no speech"
    out = listener.sentence_distances(cls, "male", "0401", bad)
    assert out.shape == (len(subs), len(subs))
    assert np.isnan(out).all(), out


def test_sentence_distances_are_nan_when_a_rendition_is_missing(phrasing, tmp_path):
    folder, natural = phrasing
    cls, key = "syntactic_phrasing", "ad01_0401"
    only = {f"{cls}/interpretation_1/{key}": natural[f"{cls}/interpretation_1/{key}"]}
    out = _listener(natural, tmp_path).sentence_distances(cls, "male", "0401", only)
    assert out.shape == (2, 2) and np.isnan(out).all()


# ----------------------------------------------------------------------------- profiles by hand
def _anchor(n: int) -> prosody.Features:
    energy = np.full(n, -20.0)
    return prosody.Features(np.zeros(n), energy, np.zeros((n, 12)), np.ones(n, dtype=bool))


def _profiles(f0, energy=None, tempo=None, salience=None, boundary=None,
              pause=None) -> prosody.SentenceProfiles:
    f0 = np.asarray(f0, dtype=float)
    r, n = f0.shape
    z = np.zeros((r, n))

    def arr(x):
        return z.copy() if x is None else np.asarray(x, dtype=float)

    return prosody.SentenceProfiles(_anchor(n), f0, arr(energy), arr(tempo), np.zeros(r),
                                    arr(pause), np.zeros(r), np.zeros(r), arr(salience),
                                    arr(boundary))


# ----------------------------------------------------------------------------- P3: weights
def test_discriminative_weights_are_larger_where_the_natural_candidates_differ():
    """Per frame, how much the natural candidates differ there (their standard deviation,
    NaN-aware for F0), plus a floor: F0 0.3 st, energy 1 dB, tempo 0.05. Frames where every
    candidate agrees get the floor alone."""
    f0 = [[0.0, 0.0, 0.0, 1.0, np.nan, np.nan],
          [0.0, 3.0, 0.0, 1.0, 2.0, np.nan],
          [0.0, -3.0, 0.0, 1.0, -2.0, np.nan]]
    energy = [[0.0, 0.0, 4.0, 0.0, 0.0, 0.0],
              [0.0, 0.0, -2.0, 0.0, 0.0, 0.0],
              [0.0, 0.0, -2.0, 0.0, 0.0, 0.0]]
    tempo = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.3],
             [0.0, 0.0, 0.0, 0.0, 0.0, -0.3],
             [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    w = _comparison._discriminative_weights(_profiles(f0, energy, tempo))
    # population standard deviations, by hand
    sd_f0 = [0.0, math.sqrt(18 / 3), 0.0, 0.0, 2.0, 0.0]  # frame 4: 2 and -2 voiced only
    sd_energy = [0.0, 0.0, math.sqrt((16 + 4 + 4) / 3), 0.0, 0.0, 0.0]
    sd_tempo = [0.0] * 5 + [math.sqrt(0.18 / 3)]
    np.testing.assert_allclose(w["f0"], [s + 0.3 for s in sd_f0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(w["energy"], [s + 1.0 for s in sd_energy], rtol=0, atol=1e-12)
    np.testing.assert_allclose(w["tempo"], [s + 0.05 for s in sd_tempo], rtol=0, atol=1e-12)
    assert w["f0"][1] > w["f0"][0] and w["energy"][2] > w["energy"][0] \
        and w["tempo"][5] > w["tempo"][0]


def test_an_f0_deviation_where_the_candidates_differ_costs_more_than_where_they_agree():
    """The F0 term is a weighted mean of the deviation over the frames the candidate voices,
    weighted by the discriminative weights: the same 2-semitone deviation over two frames costs
    more where the candidates differ (weight sd + 0.3) than where they agree (0.3)."""
    natural = _profiles([[0, 0, 0, 0, 0, 0],
                         [0, 0, 3, 3, 0, 0],
                         [0, 0, -3, -3, 0, 0]])
    system = _profiles([[2, 2, 0, 0, 0, 0],   # off by 2 st where the candidates agree
                        [0, 0, 2, 2, 0, 0]])  # off by 2 st where they differ
    comparison = prosody.compare_sentence(system, natural)
    w_agree, w_differ = 0.3, math.sqrt(6.0) + 0.3  # sd of (0, 3, -3) is sqrt(6)
    total_w = 4 * w_agree + 2 * w_differ
    expected_agree = 2 * 2 * w_agree / total_w
    expected_differ = 2 * 2 * w_differ / total_w
    assert comparison.terms["f0"][0, 0] == pytest.approx(expected_agree, abs=1e-12)
    assert comparison.terms["f0"][1, 0] == pytest.approx(expected_differ, abs=1e-12)
    assert comparison.terms["f0"][1, 0] > 3 * comparison.terms["f0"][0, 0]


# ----------------------------------------------------------------------------- P5: flat = 0.5
@pytest.mark.parametrize("a, b", [
    (np.zeros(8), np.sin(np.arange(8.0))),
    (np.sin(np.arange(8.0)), np.full(8, 3.0)),
    (np.full(8, -1.0), np.full(8, 2.0)),
])
def test_correlation_distance_of_a_flat_profile_is_one_half(a, b):
    """(1 - r) / 2, and 0.5 when either profile is flat (no correlation to speak of)."""
    assert _comparison._correlation_distance(a, b) == 0.5


def test_correlation_distance_elsewhere_is_one_minus_r_over_two():
    x = np.array([1.0, 2.0, 0.0, -1.0, 3.0, 0.5])
    y = np.array([0.0, 1.0, 1.0, -2.0, 2.0, 1.5])
    dx, dy = x - x.mean(), y - y.mean()
    r = float((dx * dy).sum() / math.sqrt((dx * dx).sum() * (dy * dy).sum()))
    assert _comparison._correlation_distance(x, y) == pytest.approx((1 - r) / 2, abs=1e-12)
    assert _comparison._correlation_distance(x, 5 * x + 1) == pytest.approx(0.0, abs=1e-12)
    assert _comparison._correlation_distance(x, -x) == pytest.approx(1.0, abs=1e-12)


def test_a_flat_salience_profile_is_half_way_from_every_candidate():
    """Through the comparison: a system rendition that stands out nowhere (flat salience) is
    neither like nor unlike any candidate: its salience distance is 0.5 to each."""
    salience = [[1.0, 0, 0, 0, 0, 0], [0, 0, 1.0, 0, 0, 0], [0, 0, 0, 0, 1.0, 0]]
    natural = _profiles(np.zeros((3, 6)), salience=salience)
    system = _profiles(np.zeros((1, 6)))
    comparison = prosody.compare_sentence(system, natural)
    assert comparison.terms["salience"].tolist() == [[0.5, 0.5, 0.5]]


# ----------------------------------------------------------------------------- multi: one each
def test_one_each_is_the_posterior_under_the_samples_being_the_candidates_one_each():
    """Worked by hand over the six assignments of three samples (rows) to three candidates
    (columns): rows anger-sample [.31 .09 .60], fear-sample [.45 .18 .37], joy-sample
    [.07 .04 .89]; P(anger-sample is anger) = (.31*.18*.89 + .31*.37*.04) / Z and
    P(fear-sample is anger) = (.09*.45*.89 + .09*.37*.07) / Z ... with Z the sum of all six."""
    from adept_eval.scoring.listeners.acoustic import one_each
    post = np.array([[.31, .09, .60], [.45, .18, .37], [.07, .04, .89]])
    weights = {(0, 1, 2): .31 * .18 * .89, (0, 2, 1): .31 * .37 * .04,
               (1, 0, 2): .09 * .45 * .89, (1, 2, 0): .09 * .37 * .07,
               (2, 0, 1): .60 * .45 * .04, (2, 1, 0): .60 * .18 * .07}
    z = sum(weights.values())
    expected = np.zeros((3, 3))
    for perm, w in weights.items():
        for sample, candidate in enumerate(perm):
            expected[sample, candidate] += w / z
    got = one_each(post)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # the fear sample's own row gives "anger" the most (.45 > .31), but the anger sample is the
    # anger one once each sample must be a different candidate
    assert post[:, 0].argmax() == 1 and got[:, 0].argmax() == 0


def test_one_each_of_identical_samples_is_a_tie():
    """Renditions that do not differ get identical rows: no sample may be preferred (the
    listener then guesses, seeded by the question id: chance for a flat system)."""
    from adept_eval.scoring.listeners.acoustic import one_each
    row = np.array([.5, .3, .2])
    got = one_each(np.tile(row, (3, 1)))
    np.testing.assert_allclose(got, np.full((3, 3), 1 / 3), rtol=1e-12)


def test_a_multi_stimulus_question_is_answered_by_one_each(tmp_path):
    """Through ``answer``: with the per-sample posteriors fixed (incredulity, surprise,
    neutral; the surprise sample's own row gives incredulity the most), the question "which
    sample is incredulous" is answered with the incredulity sample, as ``one_each`` says, and
    its scores are ``one_each``'s incredulity column in the order the samples are presented."""
    from adept_eval.scoring.listeners.acoustic import one_each
    natural = _natural(tmp_path / "natural", "propositional_attitude", "female", "0200")
    listener = _listener(natural, tmp_path)
    subs = tuple(spec.CLASSES["propositional_attitude"].subcategories_for("female"))
    assert subs == ("incredulity", "surprise", "neutral")
    post = np.array([[.45, .10, .45], [.50, .40, .10], [.05, .05, .90]])
    listener._posterior = lambda total: post
    listener._log_posterior = lambda total: np.log(post)
    shown = ("surprise", "neutral", "incredulity")  # the order the samples are presented in
    key = "ad00_0200"
    q = Question(f"adept_propositional_attitude_female/{key}/incredulity",
                 "adept_propositional_attitude_female", "propositional_attitude", "female",
                 "multi", "0200", synthetic.sentence("propositional_attitude", "0200"), "?",
                 tuple(f"propositional_attitude/{s}/{key}" for s in shown), shown,
                 ("Sample A", "Sample B", "Sample C"), subs, shown.index("incredulity"),
                 "incredulity")

    answer = listener.answer(q, dict(natural))

    expected = one_each(post)[[subs.index(s) for s in shown], 0]
    np.testing.assert_allclose(answer.scores, expected, rtol=1e-12)
    assert post[:, 0].argmax() == subs.index("surprise")  # the rows alone would pick surprise
    assert answer.responses[0].choice == shown.index("incredulity") and answer.correct(q) == 1
