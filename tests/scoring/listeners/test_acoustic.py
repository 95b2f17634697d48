"""The acoustic listener measures prosody transfer: it ranks simulated systems correctly."""

from collections import defaultdict

import numpy as np
import pytest
from scipy.stats import binomtest

from adept_eval.corpora import spec
from adept_eval.scoring.listeners import get_listener
from adept_eval.corpora.questions import all_questions


@pytest.fixture(scope="module")
def scores(corpus, systems, tmp_path_factory):
    listener = get_listener("acoustic", corpus=corpus,
                            cache_dir=str(tmp_path_factory.mktemp("features")))
    questions = all_questions(corpus)
    out = {}
    for name, folder in systems.items():
        per_class, per_target, per_task = defaultdict(list), defaultdict(list), defaultdict(list)
        for qs in questions.values():
            for q in qs:
                answer = listener.answer(q, {s: str(folder / f"{s}.wav") for s in q.stimuli})
                assert answer.status == "ok"
                per_class[q.cls].append(answer.correct(q))
                per_target[(q.cls, q.target)].append(answer.correct(q))
                per_task[f"adept_{q.cls}_{q.speaker}"].append(answer.correct(q))
        out[name] = (per_class, per_target, per_task)
    return out


def _acc(xs):
    return sum(xs) / len(xs)


def test_copy_beats_partial_beats_flat(scores):
    """Pooled, partial lies strictly between; per class it may tie with copy: in a two-way
    contrast (marked tonicity) one rendition copied and the other flat still carries the
    contrast's direction, which is all a sentence-relative listener needs."""
    pooled = {s: _acc([x for xs in scores[s][0].values() for x in xs])
              for s in ("copy", "partial", "flat")}
    assert pooled["copy"] > pooled["partial"] > pooled["flat"], pooled
    for cls in spec.CLASS_ORDER:
        copy, partial, flat = (_acc(scores[s][0][cls]) for s in ("copy", "partial", "flat"))
        assert copy >= partial > flat, (cls, copy, partial, flat)
        assert copy >= 0.9, (cls, copy)


def test_flat_prosody_is_near_chance(scores):
    """Each task against its own chance (the speakers' tasks differ: female propositional
    attitude has other choices than male)."""
    per_task = scores["flat"][2]
    assert set(per_task) == set(spec.TASKS)
    for task, answers in per_task.items():
        chance = spec.TASKS[task].chance
        p = binomtest(sum(answers), len(answers), chance).pvalue
        assert p > 0.01, (task, _acc(answers), chance, p)


def test_swapped_subcategories_score_below_chance(scores):
    per_target = scores["swap"][1]
    for target in ("fear", "joy"):
        assert _acc(per_target[("emotion", target)]) < 0.2  # chance is 1 in 5
    # the rest of emotion is unaffected
    for target in ("anger", "sadness"):
        assert _acc(per_target[("emotion", target)]) >= 0.9


def test_features_of_natural_recordings_are_cached(corpus, systems, tmp_path):
    from adept_eval.signal.prosody import FeatureStore

    store = FeatureStore(tmp_path)
    rec = corpus.recordings[0].audio_path
    first = store.get(rec)
    assert store.computed == 1
    again = FeatureStore(tmp_path).get(rec)  # a new process would read the .npy
    assert (again.energy == first.energy).all()
    # read back bit for bit: every array, its dtype and the noise floor
    for name in ("f0", "energy", "mfcc", "speech"):
        a, b = getattr(again, name), getattr(first, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert again.noise_floor == first.noise_floor
    # a damaged cache file is recomputed, not trusted
    path = store.path_of(rec)
    path.write_bytes(b"not a feature file")
    fresh = FeatureStore(tmp_path)
    assert np.array_equal(fresh.get(rec).f0, first.f0, equal_nan=True) and fresh.computed == 1


def test_a_silence_counts_at_its_place_on_either_side_of_the_pause_rule():
    """The boundary's silence cue must sit where the silence is, whether the silence is cut out
    of the alignment (a pause, from ``MIN_PAUSE_S``) or kept in it (a shorter one): a cut pause
    at the last frame before it - which, with the pause cut, is where the pause was - and a kept
    silence at its middle. (Method v10 put a kept silence at the frame where speech resumes,
    its own length later than a cut one; on the held-out rotations flite's 80 ms commas then
    landed a word late against references that pause 300 ms.)"""
    from adept_eval.signal.prosody import HOP_S, Features
    from adept_eval.signal.prosody._profiles import _speech_and_silences

    energy = np.full(60, -20.0)
    energy[10:14] = -80.0  # 80 ms: kept in the alignment
    energy[30:40] = -80.0  # 200 ms: a pause, cut out
    f = Features(np.zeros(60), energy, np.zeros((60, 12)), energy > -60.0)
    speech, _, silences = _speech_and_silences(f)
    assert speech.n == 50
    assert np.flatnonzero(silences).tolist() == [12, 29]
    assert silences[12] == pytest.approx(4 * HOP_S) and silences[29] == pytest.approx(10 * HOP_S)


@pytest.mark.parametrize("drop_frames", [0, 1])
def test_renditions_that_are_one_and_the_same_deviate_nowhere(drop_frames):
    """A sentence's renditions are put on the first one's time axis: the first by identity,
    the others through an alignment. Two identical renditions must then deviate nowhere -
    with an odd or an even number of frames (the alignment steps 40 ms, two frames, and once
    left an even-length rendition's last frame unreached: a 'lengthening' at the end of every
    rendition but the first, which told a system with no prosody at all which rendition came
    first, as the references' ordering does)."""
    from adept_eval.signal import prosody
    from adept_eval.corpora import synthetic
    from adept_eval.signal.audio import Audio

    rate = 16000
    x = synthetic.render(synthetic.sentence("syntactic_phrasing", "0401"), "male",
                         synthetic.PROFILES[("emotion", "neutral")], rate=rate)
    whole = prosody.extract(Audio(x.astype(np.float32), rate))
    n = whole.n - drop_frames  # one of the two parities each
    feats = prosody.Features(whole.f0[:n], whole.energy[:n], whole.mfcc[:n], whole.speech[:n],
                             whole.noise_floor)
    profiles = prosody.sentence_profiles([feats, feats, feats])
    for name in ("energy", "tempo", "pause", "salience", "boundary"):
        assert np.abs(getattr(profiles, name)).max() < 1e-9, (name, feats.n)
    assert np.nanmax(np.abs(profiles.f0)) < 1e-9 and np.abs(profiles.length).max() < 1e-9


def test_the_level_term_abstains_when_the_renditions_share_one_power():
    """Per-file loudness normalisation gives every rendition one speech power; the level term
    must then abstain, however the renditions spread their power over time. Two renditions of
    one power, one steady and one with half its frames 20 dB quieter (a slow rendition's longer
    quiet stretches), read 7 dB apart as a mean of frame decibels (what the term compares, and
    what method v13 also abstained on: it voted here); one 6 dB stronger still votes."""
    from adept_eval.signal.prosody import (
        LEVEL_VOTE_DB,
        Features,
        compare_sentence,
        onto,
        power_db,
        sentence_profiles,
    )

    n = 60
    steady = np.full(n, -26.0)
    uneven = np.where(np.arange(n) % 2 == 0, -23.0, -43.0)  # power -25.97 dB, mean dB -33

    def rendition(energy):
        return Features(np.zeros(n), energy, np.zeros((n, 12)), np.ones(n, bool))

    assert power_db(uneven) == pytest.approx(-26.0, abs=0.05)
    assert power_db(np.array([])) != power_db(np.array([]))  # no speech: no level (NaN)
    natural = sentence_profiles([rendition(steady), rendition(steady - 8.0)])
    # as the listener reads them: on the references' time axis (``onto``)
    same = onto(sentence_profiles([rendition(steady), rendition(uneven)]), natural)
    assert same.level_spread < 0.1 < LEVEL_VOTE_DB
    assert float(np.ptp(same.level)) == pytest.approx(7.0, abs=0.05)  # the vote's own measure
    assert not compare_sentence(same, natural).terms["level"].any()
    louder = onto(sentence_profiles([rendition(steady), rendition(steady + 6.0)]), natural)
    assert louder.level_spread == pytest.approx(6.0, abs=0.01)
    assert compare_sentence(louder, natural).terms["level"].any()


def test_the_cross_voice_alignment_does_not_depend_on_how_a_voice_spreads_its_cepstra():
    """Two voices spread their cepstral coefficients differently (one moves c1 widely, another
    c5): the alignment that puts a system's profiles on the references' time axis compares
    cepstra normalised per coefficient (method v17), so rescaling one voice's coefficients
    leaves where each of its frames lands unchanged. Without it, the coefficient a voice moves
    most decides the frame cost, and the same words land elsewhere."""
    from adept_eval.signal.prosody import Features, onto, sentence_profiles

    rng = np.random.default_rng(7)
    n = 90
    words = np.cumsum(rng.normal(size=(n, 12)), axis=0)  # a smooth path through cepstral space
    warp = np.clip(np.round(np.linspace(0, 1, n) ** 1.6 * (n - 1)).astype(int), 0, n - 1)
    t = np.arange(n)

    def rendition(cepstra, accent=0.0):  # the second of a sentence's renditions is accented
        pitch = accent * np.exp(-0.5 * ((t - n / 2) / 6.0) ** 2)
        return Features(pitch, np.full(n, -26.0), cepstra, np.ones(n, bool))

    natural = sentence_profiles([rendition(words), rendition(words, 6.0)])
    spoken = words[warp] + rng.normal(scale=0.3, size=(n, 12))
    spoken[:, 0] = rng.normal(size=n)  # a coefficient this voice moves its own way
    other_voice = spoken * np.r_[30.0, np.ones(11)]  # ... and moves widely in another voice
    as_is = onto(sentence_profiles([rendition(spoken), rendition(spoken, 6.0)]), natural)
    spread = onto(sentence_profiles([rendition(other_voice), rendition(other_voice, 6.0)]),
                  natural)
    assert np.ptp(as_is.f0) > 1.0  # the accent is there to be placed
    np.testing.assert_array_equal(as_is.f0, spread.f0)
    np.testing.assert_array_equal(as_is.tempo, spread.tempo)


def test_a_temperature_that_changes_answers_changes_the_scorer_identity(corpus, systems,
                                                                         tmp_path):
    """Through the real `lm_eval` and `adept-eval compare`: `--metadata temperature=5` moves
    the answers of multi-stimulus questions (``one_each`` combines the posteriors it sets), so
    its run records another scorer and compare refuses to pair it with a default run, as it
    refuses any two scorers. It recorded the default's identity, and the two runs were compared
    as one scorer's. A default run's identity is unchanged (``temperature=0.5`` spelled out
    too), so the results files written before stay comparable."""
    import json
    import os
    import subprocess

    from faults import console_script

    from adept_eval.scoring.listeners.acoustic import listener_version

    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "TQDM_DISABLE": "1",
           "ADEPT_EVAL_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    scorers, accuracy = {}, {}
    for name, metadata in (("default", []), ("spelled", ["--metadata", "temperature=0.50"]),
                           ("hot", ["--metadata", "temperature=5"])):
        done = subprocess.run(
            [console_script("lm_eval"), "--model", "audio-dir", "--model_args",
             f"path={systems['partial']},name={name}", "--tasks", "adept_emotion_female",
             "--output_path", str(tmp_path / "out"), "--log_samples", *metadata],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads(next((tmp_path / "out" / name).glob("results_*.json")).read_text())
        scorers[name] = results["adept_eval"]["suites"]["adept"]["scorer"]
        accuracy[name] = results["results"]["adept_emotion_female"]["acc,none"]
    default = {"listener": "acoustic", "listener_version": listener_version()}
    assert scorers["default"] == scorers["spelled"] == default
    assert scorers["hot"] == {**default, "temperature": 5.0}
    assert accuracy["hot"] != accuracy["default"]  # why it must be told apart
    compare = [console_script("adept-eval"), "compare"]
    done = subprocess.run([*compare, str(tmp_path / "out" / "default"),
                           str(tmp_path / "out" / "hot")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "differ in their ADEPT scorer (listener identity)" in done.stderr, done.stderr
    assert "temperature=5.0" in done.stderr, done.stderr
    done = subprocess.run([*compare, str(tmp_path / "out" / "default"),
                           str(tmp_path / "out" / "spelled")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr


def test_a_rendition_rewritten_in_place_is_compared_afresh(corpus, systems, tmp_path):
    """The listener memoised each sentence's comparison by the renditions' paths, so a file
    rewritten in place (re-synthesised into the same folder, scored again in one Python
    session) was answered with the old file's comparison."""
    import shutil

    questions = [q for qs in all_questions(corpus).values() for q in qs]
    q = next(q for q in questions if q.cls == "emotion")
    folder = tmp_path / "system"

    def answers_with(source, listener):
        for s in q.stimuli:
            (folder / f"{s}.wav").parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(systems[source] / f"{s}.wav", folder / f"{s}.wav")
        return listener.answer(q, {s: str(folder / f"{s}.wav") for s in q.stimuli})

    listener = get_listener("acoustic", corpus=corpus, cache_dir=str(tmp_path / "features"))
    first = answers_with("copy", listener)
    again = answers_with("swap", listener)  # same paths, other renditions
    fresh = answers_with("swap", get_listener("acoustic", corpus=corpus,
                                              cache_dir=str(tmp_path / "features2")))
    assert first.status == again.status == fresh.status == "ok"
    assert again.scores == fresh.scores and again.responses == fresh.responses
    assert again.scores != first.scores
    # the graded figures too (the scorer memoised by path as well), from one shared,
    # content-keyed "no speech" memo
    paths = {s: str(folder / f"{s}.wav") for s in q.stimuli}
    fresh_listener = get_listener("acoustic", corpus=corpus, cache_dir=str(tmp_path / "f3"))
    answers_with("copy", listener)
    listener.graded_scores(paths, q.stimuli)
    answers_with("swap", listener)
    assert listener.graded_scores(paths, q.stimuli) == \
        fresh_listener.graded_scores(paths, q.stimuli)
    # a silent rendition (a failed synthesis) re-synthesised in place is heard, not "no speech"
    import soundfile as sf

    silent = folder / f"{q.stimuli[0]}.wav"
    sf.write(silent, np.zeros(24000, dtype=np.float32), 24000)
    assert "no speech" in listener.answer(q, {s: str(folder / f"{s}.wav")
                                              for s in q.stimuli}).detail
    assert answers_with("swap", listener).responses == fresh.responses


def test_renditions_recorded_30_to_40_db_quieter_are_answered_as_at_full_level(use_corpus,
                                                                               systems,
                                                                               tmp_path):
    """A system whose renditions come out 30-40 dB quieter (under -55 dBFS RMS, in 16-bit)
    was refused before scoring ("silent"): judged against their own floor, they are heard, and
    the listener answers every question as it does at full level."""
    import soundfile as sf

    from conftest import run_lm_eval

    from adept_eval.signal.audio import AUDIBLE_DBFS, read_audio, rms_dbfs

    copy = systems["copy"]
    folder = tmp_path / "quiet"
    for i, wav in enumerate(sorted(copy.rglob("*.wav"))):
        x, rate = sf.read(wav, dtype="float64")
        out = folder / wav.relative_to(copy)
        out.parent.mkdir(parents=True, exist_ok=True)
        sf.write(out, x * 10 ** (-(30.0 if i % 2 else 40.0) / 20), rate, subtype="PCM_16")
    levels = [rms_dbfs(read_audio(f).samples) for f in folder.rglob("*.wav")]
    assert sum(level < AUDIBLE_DBFS for level in levels) > len(levels) / 3
    tasks = ["adept_emotion_female", "adept_topical_emphasis_male"]
    full, quiet = (run_lm_eval("audio-dir", tasks, model_args={"path": str(path)})
                   for path in (copy, folder))
    for task in tasks:
        assert quiet["results"][task]["failed,none"] == 0, task
        assert quiet["results"][task]["acc,none"] == full["results"][task]["acc,none"], task

        def answers(res):
            recs = [s["acc"] for s in res["samples"][task]]
            return [(r[0] if isinstance(r, list) else r)["answer"] for r in recs]

        assert answers(quiet) == answers(full), task
