"""Known-answer tests of the graded prosody-transfer figures (adept_eval.scoring.graded).

Real speech comes from espeak-ng (a formant synthesiser: not the listener's generator), pitch
shifts and time stretches from Praat's PSOLA (parselmouth); synthetic harmonic signals with a
known F0 are used where the answer must be exact.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from adept_eval.scoring import graded, stats
from adept_eval.signal import prosody
from adept_eval.signal.audio import Audio, from_array, read_audio
from adept_eval.scoring.graded import Alignment, Pause
from adept_eval.signal.prosody import Features, VoiceNorm
from sounds import pitch_shifted, time_stretched

SENTENCE = "The quick brown fox jumped over the lazy dog, and then it ran away."


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Audio:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (Debian package espeak-ng)")
    path = tmp_path_factory.mktemp("espeak") / "speech.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(path), SENTENCE], check=True,
                   capture_output=True)
    return read_audio(path)


@pytest.fixture(scope="module")
def speech_feats(speech) -> Features:
    return prosody.extract(speech)


def harmonic(f0_hz: np.ndarray, rate: int = 16000) -> np.ndarray:
    """A voiced signal with a known F0 track (one value per sample) and a fixed spectrum,
    at a steady level (5 ms fades), so ``prosody.extract`` trims nothing."""
    phase = 2 * np.pi * np.cumsum(f0_hz) / rate
    x = sum(k ** -1.0 * np.sin(k * phase) for k in range(1, 25))
    env = np.minimum(1.0, np.minimum(np.arange(len(x)), np.arange(len(x))[::-1]) / (0.005 * rate))
    return (0.3 * env * x / np.max(np.abs(x))).astype(np.float32)


# ----------------------------------------------------------------------------- identity
def test_identical_audio_has_no_error_and_perfect_correlation(speech_feats):
    s = graded.score(speech_feats, speech_feats, id="same")
    assert s.ok and s.id == "same"
    assert s.f0_rmse_st == 0 and s.f0_rmse_norm_st == 0
    assert s.gpe == 0 and s.vde == 0 and s.ffe == 0
    assert s.f0_corr == pytest.approx(1.0) and s.energy_corr == pytest.approx(1.0)
    assert s.log_duration_ratio == 0 and s.pause_agreement == 1 and s.pause_mismatches == 0
    assert s.listener_distance == 0
    assert s.n_voiced_both > 50 and s.n_frames == speech_feats.n


# ----------------------------------------------------------------------------- pitch shift
@pytest.mark.parametrize("k", [2.0, -3.0, 5.0])
def test_pitch_shifted_speech_raw_rmse_is_the_shift_normalised_is_near_zero(speech, speech_feats,
                                                                             k):
    shifted = prosody.extract(pitch_shifted(speech, k))
    s = graded.score(shifted, speech_feats)
    assert s.ok
    assert s.f0_rmse_st == pytest.approx(abs(k), abs=0.3)
    assert s.f0_rmse_norm_st < 0.4
    assert s.f0_corr > 0.98
    # a shift above 20% (3.16 semitones) is a gross error in (nearly) every voiced frame
    if abs(k) > 3.5:
        assert s.gpe > 0.95
    else:
        assert s.gpe < 0.05
    assert s.vde < 0.06


def test_synthetic_voice_with_known_f0_shift():
    rate, n = 16000, 16000 * 2
    t = np.arange(n) / rate
    f0 = 140 * 2 ** ((2.5 * np.sin(2 * np.pi * 0.7 * t)) / 12)
    k = 4.0
    ref = prosody.extract(from_array(harmonic(f0, rate), rate))
    sys = prosody.extract(from_array(harmonic(f0 * 2 ** (k / 12), rate), rate))
    s = graded.score(sys, ref)
    assert s.f0_rmse_st == pytest.approx(k, abs=0.1)
    assert s.f0_rmse_norm_st < 0.1
    assert s.f0_corr > 0.995
    assert s.gpe > 0.95  # 4 semitones = +26%: every frame voiced in both is a gross error
    assert s.ffe == pytest.approx(s.gpe * s.n_voiced_both / s.n_frames + s.vde, abs=1e-12)


# ----------------------------------------------------------------------------- time stretch
def test_time_stretched_copy_has_near_zero_f0_error_after_alignment(speech, speech_feats):
    factor = 1.3
    slow = prosody.extract(time_stretched(speech, factor))
    s = graded.score(slow, speech_feats)
    assert s.ok
    assert s.f0_rmse_st < 0.4 and s.f0_rmse_norm_st < 0.4
    assert s.f0_corr > 0.97
    assert s.gpe < 0.02 and s.vde < 0.08
    assert s.log_duration_ratio == pytest.approx(math.log(factor), abs=0.05)


def test_without_alignment_the_stretched_copy_would_look_wrong(speech, speech_feats):
    """The alignment is what makes the stretch harmless: pairing frames by index instead
    (a diagonal path) gives large F0 errors, so the test above can fail."""
    slow = prosody.extract(time_stretched(speech, 1.3))
    n = min(slow.n, speech_feats.n)
    diagonal = graded.Alignment(np.arange(n), np.arange(n))
    s = graded.score(slow, speech_feats, alignment=diagonal)
    assert s.f0_rmse_st > 1.0 and s.vde > 0.1


# ----------------------------------------------------------------------------- voicing
@pytest.mark.parametrize("share", [0.1, 0.25, 0.5])
def test_voicing_removed_in_a_known_share_of_frames_gives_that_vde(speech_feats, share):
    rng = np.random.default_rng(7)
    voiced = np.flatnonzero(~np.isnan(speech_feats.f0))
    k = int(round(share * speech_feats.n))
    assert k <= voiced.size
    f0 = speech_feats.f0.copy()
    f0[rng.choice(voiced, k, replace=False)] = np.nan
    devoiced = replace(speech_feats, f0=f0)
    s = graded.score(devoiced, speech_feats)
    assert s.vde == pytest.approx(k / speech_feats.n, abs=1e-12)
    assert s.ffe == pytest.approx(k / speech_feats.n, abs=1e-12)
    assert s.gpe == 0 and s.f0_rmse_st == 0


def test_voicing_replaced_by_noise_in_the_audio_gives_about_that_vde():
    """Audio-level: a known stretch of a voiced signal is replaced by noise of the same level;
    the frames centred in it are the expected voicing errors."""
    rate, n = 16000, 16000 * 3
    t = np.arange(n) / rate
    x = harmonic(150 * 2 ** ((2 * np.sin(2 * np.pi * 0.5 * t)) / 12), rate)
    x = (0.3 * x / np.max(np.abs(x))).astype(np.float32)
    ref = prosody.extract(from_array(x, rate))
    # prosody's frames: 25 ms windows every HOP_S, nothing trimmed from this steady signal
    times = np.arange(ref.n) * prosody.HOP_S + 0.0125
    assert times[-1] + 0.0125 <= n / rate < times[-1] + 0.0125 + prosody.HOP_S
    for lo_s, hi_s in ((1.0, 1.3), (0.6, 1.5)):
        noisy = x.copy()
        lo, hi = int(lo_s * rate), int(hi_s * rate)
        rms = float(np.sqrt(np.mean(x[lo:hi] ** 2)))
        noisy[lo:hi] = np.random.default_rng(3).normal(0, rms, hi - lo).astype(np.float32)
        s = graded.score(prosody.extract(from_array(noisy, rate)), ref)
        expected = float(((times >= lo_s) & (times < hi_s)).sum()) / ref.n
        assert s.vde == pytest.approx(expected, abs=0.02)
        assert s.gpe < 0.02


# ----------------------------------------------------------------------------- definitions
def _reference_frame_errors(a, b, threshold=0.2):
    """GPE/VDE/FFE written out frame by frame in Hz, as Chu & Alwan define them."""
    n = len(a)
    voiced_both = gross = voicing = 0
    for x, y in zip(a, b):
        vx, vy = not math.isnan(x), not math.isnan(y)
        if vx != vy:
            voicing += 1
        elif vx and vy:
            voiced_both += 1
            hx, hy = 100 * 2 ** (x / 12), 100 * 2 ** (y / 12)
            if abs(hx - hy) > threshold * hy:
                gross += 1
    return (gross / voiced_both if voiced_both else math.nan, voicing / n,
            (gross + voicing) / n)


@pytest.mark.parametrize("seed", range(5))
def test_frame_errors_agree_with_a_frame_by_frame_computation(seed):
    rng = np.random.default_rng(seed)
    n = 300
    a = rng.normal(10, 4, n)
    b = a + rng.normal(0, 3, n)  # some differences beyond 20% (3.16 st), most within
    a[rng.random(n) < 0.3] = np.nan
    b[rng.random(n) < 0.3] = np.nan
    fe = graded.frame_errors(a, b)
    gpe, vde, ffe = _reference_frame_errors(a, b)
    assert (fe.gpe, fe.vde, fe.ffe) == pytest.approx((gpe, vde, ffe), abs=1e-12)
    assert 0 < fe.gpe < 1 and 0 < fe.vde < 1


def test_frame_errors_hand_worked_example():
    st = lambda hz: 12 * np.log2(hz / 100)  # noqa: E731
    nan = np.nan
    sys = np.array([st(100), st(125), st(110), nan, st(200), nan])
    ref = np.array([st(100), st(100), st(100), st(150), nan, nan])
    fe = graded.frame_errors(sys, ref)
    # voiced in both: frames 0-2; gross: frame 1 (+25%); voicing errors: frames 3, 4
    assert (fe.n_voiced_both, fe.n_gross, fe.n_voicing) == (3, 1, 2)
    assert fe.gpe == pytest.approx(1 / 3) and fe.vde == pytest.approx(2 / 6)
    assert fe.ffe == pytest.approx(3 / 6)
    with pytest.raises(ValueError, match="align"):
        graded.frame_errors(sys, ref[:-1])


def test_every_figure_has_metadata():
    record_fields = set(graded.StimulusScores.__dataclass_fields__)
    for m in graded.METRICS:
        assert m.name in record_fields
        assert set(m.citations) <= set(graded.CITATIONS)
        lo, hi = m.range
        assert lo <= m.best <= hi
    assert len(graded.metric_table()) == len(graded.METRICS)


def test_listener_distance_names_every_term_the_listener_sums():
    """``listener_distance`` in the ADEPT tasks is the acoustic listener's sentence-relative
    total (``prosody.TERMS`` weighted by ``TERM_WEIGHTS``): docs/graded.md's row and the
    figure's metadata name every one of its terms (they named four of the seven)."""
    import re
    from pathlib import Path

    from adept_eval.scoring.listeners.acoustic import TERM_WEIGHTS

    assert set(TERM_WEIGHTS) == set(prosody.TERMS)
    page = Path(__file__).resolve().parents[2] / "docs" / "graded.md"
    row = next(line for line in page.read_text(encoding="utf-8").splitlines()
               if line.startswith("| `listener_distance` |"))
    for text in (row, graded.METRIC_BY_NAME["listener_distance"].description):
        adept = text.split("for pairs scored on their own")[0]  # not prosody.distance's terms
        for term in prosody.TERMS:
            assert re.search(rf"\b{term}\b", adept, re.I), (term, adept)


# ----------------------------------------------------------------------------- pauses
def _with_gap(speech: Audio, at_s: float, gap_s: float) -> Audio:
    i = int(at_s * speech.rate)
    gap = np.zeros(int(gap_s * speech.rate), np.float32)
    return Audio(np.concatenate([speech.samples[:i], gap, speech.samples[i:]]), speech.rate)


def test_pause_detection_finds_an_inserted_pause_where_it_is(speech, speech_feats):
    before = graded.pauses(speech_feats)
    at = 1.0
    with_gap = prosody.extract(_with_gap(speech, at, 0.4))
    found = graded.pauses(with_gap)
    assert len(found) == len(before) + 1
    new = [p for p in found if (p.stop - p.start) * prosody.HOP_S >= 0.38]
    assert len(new) == 1
    # short gaps (< 150 ms) are not pauses
    assert len(graded.pauses(prosody.extract(_with_gap(speech, at, 0.08)))) == len(before)


def test_pause_in_one_and_not_the_other_is_a_mismatch(speech, speech_feats):
    with_gap = prosody.extract(_with_gap(speech, 1.0, 0.4))
    s = graded.score(with_gap, speech_feats)
    n_ref = len(graded.pauses(speech_feats))
    assert s.pause_mismatches == 1
    assert s.pause_agreement == pytest.approx(2 * n_ref / (2 * n_ref + 1))
    both = graded.score(with_gap, with_gap)
    assert both.pause_mismatches == 0 and both.pause_agreement == 1
    # the same pause, but elsewhere in the sentence, still disagrees twice
    moved = prosody.extract(_with_gap(speech, 2.2, 0.4))
    assert graded.score(moved, with_gap).pause_mismatches == 2


# ----------------------------------------------------------------------------- distance
def test_relative_distance_definition():
    assert graded.relative_distance(0.0, [2.0, 4.0]) == 0
    assert graded.relative_distance(3.0, [2.0, 4.0]) == 1
    assert graded.relative_distance(1.5, [2.0, 4.0, float("inf")]) == 0.5
    assert math.isnan(graded.relative_distance(1.0, []))
    assert math.isnan(graded.relative_distance(1.0, [0.0]))


def test_prosody_distance_follows_the_listeners_distance(speech_feats, monkeypatch):
    # another subcategory: a different contour shape (a level shift would be normalised away)
    other = replace(speech_feats, f0=speech_feats.f0 + np.linspace(-4, 4, speech_feats.n))
    s = graded.score(speech_feats, speech_feats, others=[other])
    assert s.prosody_distance == 0
    # when the wrong reference sounds like the correct one, any sample is "as far" as it: 1
    far = graded.score(other, speech_feats, others=[speech_feats])
    assert far.listener_distance > 0 and far.prosody_distance == 1
    calls = []

    def fake(a, an, b, bn):
        calls.append(1)
        return 2.0 if b is speech_feats else 4.0

    monkeypatch.setattr(prosody, "distance", fake)
    s = graded.score(speech_feats, speech_feats, others=[other, other])
    assert len(calls) == 3
    assert s.listener_distance == 2.0 and s.prosody_distance == 0.5


def test_given_distances_are_reused_not_recomputed(speech_feats, monkeypatch):
    monkeypatch.setattr(prosody, "distance", lambda *a: pytest.fail("recomputed"))
    s = graded.score(speech_feats, speech_feats, distances=[1.0, 2.0, 6.0])
    assert s.listener_distance == 1.0 and s.prosody_distance == 0.25


# ----------------------------------------------------------------------------- failures
def test_silent_or_unreadable_samples_are_counted_failures(speech, tmp_path):
    import soundfile as sf

    ref = tmp_path / "ref.wav"
    sf.write(ref, speech.samples, speech.rate)
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(speech.rate, np.float32), speech.rate)
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF not really a wav")
    out = graded.score_pairs([str(ref), str(silent), str(broken)], [str(ref)] * 3,
                             ids=["good", "silent", "broken"])
    assert [s.status for s in out] == ["ok", "failed", "failed"]
    assert "silent" in out[1].detail
    assert "broken.wav" in out[2].detail
    assert math.isnan(out[1].f0_rmse_st) and out[1].to_dict()["f0_rmse_st"] is None
    summary = graded.aggregate(out)
    assert summary["ffe"].n == 1 and summary["ffe"].n_failed == 2
    assert summary["ffe"].mean == 0


def test_a_quiet_take_is_scored_as_at_full_level_and_quiet_noise_fails(speech, tmp_path):
    """A copy recorded 40-55 dB quieter (under -55 dBFS RMS, in 16-bit) was "silent (loudest
    frame ... dBFS)": it is judged against its own floor and scored as the full-level copy is;
    steady noise at its level is still a counted failure."""
    import soundfile as sf

    from sounds import quiet_take, steady_noise

    ref = tmp_path / "ref.wav"
    sf.write(ref, speech.samples, speech.rate)
    paths, ids = [str(ref)], ["full"]
    for level in (-60.0, -75.0):
        path = tmp_path / f"take{level:.0f}.wav"
        sf.write(path, quiet_take(speech.samples, speech.rate, level), speech.rate,
                 subtype="PCM_16")
        paths.append(str(path))
        ids.append(f"take{level:.0f}")
    noise = tmp_path / "noise.wav"
    sf.write(noise, steady_noise(3.0, -75.0), 16000, subtype="PCM_16")
    out = graded.score_pairs([*paths, str(noise)], [str(ref)] * (len(paths) + 1),
                             ids=[*ids, "noise"])
    assert [s.status for s in out] == ["ok", "ok", "ok", "failed"], [s.detail for s in out]
    assert out[-1].detail.startswith("sample: silent: "), out[-1].detail
    for quiet in out[1:3]:
        assert quiet.f0_rmse_st < 0.5 and quiet.vde < 0.05, quiet


# ----------------------------------------------------------------------------- aggregation
def _rec(id, **values):
    return graded.StimulusScores(id=id, status="ok", **values)


def test_aggregate_means_intervals_and_counts():
    recs = [_rec(str(i), gpe=v) for i, v in enumerate([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])]
    recs.append(_rec("6"))  # gpe undefined
    recs.append(graded.failed("7", "silent"))
    recs.append(_rec("0", gpe=0.9))  # a second question on stimulus 0 counts once
    s = graded.aggregate(recs)["gpe"]
    assert s.mean == pytest.approx(0.35)
    assert (s.n, s.n_failed, s.n_undefined) == (6, 1, 1)
    assert 0.1 <= s.ci_low < s.mean < s.ci_high <= 0.6
    again = graded.aggregate(recs)["gpe"]
    assert (again.ci_low, again.ci_high) == (s.ci_low, s.ci_high)  # seeded


def test_an_interval_stays_within_the_figures_range():
    """Two sentences give the cluster-robust t interval one degree of freedom (t = 12.7): a
    prosody distance (never below 0) read 0.15 [-0.48, 0.78] and a correlation's interval
    passed 1. Cut to the figure's range (``MetricInfo.range``); a signed figure is left as is."""
    recs, clusters = [], {}
    for i, (d, r, ratio) in enumerate([(0.05, 0.99, 0.3), (0.05, 0.98, 0.3),
                                       (0.25, 0.60, -0.3), (0.25, 0.62, -0.3)]):
        recs.append(_rec(str(i), prosody_distance=d, f0_corr=r, log_duration_ratio=ratio))
        clusters[str(i)] = "s1" if i < 2 else "s2"
    out = graded.aggregate(recs, clusters=clusters)
    assert out["prosody_distance"].ci_low == 0.0 < out["prosody_distance"].ci_high
    assert out["f0_corr"].ci_high == 1.0 > out["f0_corr"].ci_low
    ratio = out["log_duration_ratio"]
    assert ratio.ci_low < -1 and ratio.ci_high > 1  # unbounded: the t interval as it is


def test_clustered_interval_is_wider_when_clusters_share_values():
    # 10 sentences x 4 renditions; renditions of a sentence are nearly identical
    rng = np.random.default_rng(0)
    recs, clusters = [], {}
    for sent in range(10):
        level = rng.normal(0.3, 0.1)
        for r in range(4):
            id = f"{sent}/{r}"
            recs.append(_rec(id, ffe=level + rng.normal(0, 0.005)))
            clusters[id] = str(sent)
    iid = graded.aggregate(recs)["ffe"]
    clustered = graded.aggregate(recs, clusters=clusters)["ffe"]
    assert clustered.mean == iid.mean
    assert (clustered.ci_high - clustered.ci_low) > 1.5 * (iid.ci_high - iid.ci_low)


def test_bootstrap_interval_covers_a_known_mean():
    rng = np.random.default_rng(1)
    covered = 0
    for seed in range(100):
        x = rng.normal(5.0, 1.0, 40)
        lo, hi = stats.bootstrap_interval(x, seed=seed, n_resamples=500)
        covered += lo <= 5.0 <= hi
    assert 88 <= covered <= 99


# ----------------------------------------------------------------------------- ADEPT
def test_adept_scorer_orders_copy_partial_flat(corpus, systems, tmp_path):
    """Plumbing on the synthetic corpus (the generator the listener was built with; the
    realistic check runs on the listener issue's cross-engine benchmark)."""
    from adept_eval.corpora import spec

    scorer_by = {}
    for name in ("copy", "partial", "flat"):
        scorer = graded.AdeptScorer(corpus, prosody.FeatureStore(tmp_path / "f"))
        recs = []
        for cls in ("emotion", "topical_emphasis", "syntactic_phrasing"):
            for sid in spec.CLASSES[cls].sentence_ids()[:3]:
                subs = spec.CLASSES[cls].subcategories_for("female")
                key = f"{spec.SPEAKERS['female']}_{sid}"
                samples = {s: str(systems[name] / cls / s / f"{key}.wav") for s in subs}
                recs += list(scorer.sentence(cls, "female", sid, samples).values())
        scorer_by[name] = graded.aggregate(recs)
    pd = {k: v["prosody_distance"].mean for k, v in scorer_by.items()}
    clusters = graded.adept_sentence_clusters(recs)
    assert len(set(clusters.values())) == 9 and len(clusters) == len(recs)
    assert pd["copy"] < pd["partial"] < pd["flat"]
    assert all(v["prosody_distance"].n_failed == 0 for v in scorer_by.values())


def test_adept_scorer_counts_missing_samples_and_matches_by_stimulus(corpus, systems, tmp_path):
    from adept_eval.corpora import spec

    scorer = graded.AdeptScorer(corpus, prosody.FeatureStore(tmp_path / "f"))
    key = f"{spec.SPEAKERS['male']}_{spec.CLASSES['emotion'].sentence_ids()[0]}"
    subs = spec.CLASSES["emotion"].subcategories_for("male")
    samples = {f"emotion/{s}/{key}": str(systems["copy"] / "emotion" / s / f"{key}.wav")
               for s in subs[1:]}
    missing = scorer.stimulus(f"emotion/{subs[0]}/{key}", samples)
    assert not missing.ok and "not produced" in missing.detail
    present = scorer.stimulus(f"emotion/{subs[1]}/{key}", samples)
    assert present.ok and present.id == f"emotion/{subs[1]}/{key}"
    assert np.isfinite(present.prosody_distance)


def test_voice_norm_removes_a_voice_offset(speech_feats):
    higher = replace(speech_feats, f0=speech_feats.f0 + 4)
    s = graded.score(higher, speech_feats, sample_norm=VoiceNorm.of([higher]),
                     reference_norm=VoiceNorm.of([speech_feats]))
    assert s.f0_rmse_st == pytest.approx(4) and s.f0_rmse_norm_st == pytest.approx(0, abs=1e-9)


def test_evaluate_pairs_checks_ids_and_clusters(speech_feats):
    shifted = replace(speech_feats, f0=speech_feats.f0 + np.linspace(0, 3, speech_feats.n))
    samples, refs = [speech_feats, shifted, shifted], [speech_feats] * 3
    with pytest.raises(ValueError, match="unique"):
        graded.evaluate_pairs(samples, refs, ids=["a", "a", "b"], cache_dir="")
    with pytest.raises(ValueError, match="clusters"):
        graded.evaluate_pairs(samples, refs, clusters=["s1"], cache_dir="")
    out = graded.evaluate_pairs(samples, refs, ids=["a", "b", "c"],
                                clusters=["s1", "s2", "s2"], cache_dir="")
    assert [it["id"] for it in out["items"]] == ["a", "b", "c"]
    assert out["n"] == 3 and out["summary"]["f0_rmse_st"]["n"] == 3
    # two clusters: the cluster-robust t interval over them (1 df), which spans both clusters'
    # means (0 and the shifted one), cut at 0 where an RMSE cannot lie
    values = [it["f0_rmse_st"] for it in out["items"]]
    raw = stats.cluster_t_interval(values, ["s1", "s2", "s2"])
    assert raw[0] < 0
    assert out["f0_rmse_st_ci95"] == pytest.approx([0.0, raw[1]])
    assert out["f0_rmse_st_ci95"][0] == 0.0 < values[1] < out["f0_rmse_st_ci95"][1]


def test_a_tone_in_an_adept_run_is_a_counted_graded_failure(corpus, systems, tmp_path):
    """The listener refuses a steady tone as "no speech" (its question fails); the graded
    figures of that sample are a counted failure too, not F0/energy/pause scores."""
    import soundfile as sf

    from adept_eval.corpora import spec

    key = f"{spec.SPEAKERS['female']}_{spec.CLASSES['emotion'].sentence_ids()[0]}"
    subs = spec.CLASSES["emotion"].subcategories_for("female")
    samples = {f"emotion/{s}/{key}": str(systems["copy"] / "emotion" / s / f"{key}.wav")
               for s in subs}
    tone = tmp_path / "tone.wav"
    rate = 16000
    sf.write(tone, 0.3 * np.sin(2 * np.pi * 200 * np.arange(2 * rate) / rate), rate)
    samples[f"emotion/{subs[0]}/{key}"] = str(tone)
    scorer = graded.AdeptScorer(corpus, prosody.FeatureStore(tmp_path / "f"))
    refused = scorer.stimulus(f"emotion/{subs[0]}/{key}", samples)
    assert not refused.ok and "neither the pitch nor the timbre moves" in refused.detail
    assert scorer.stimulus(f"emotion/{subs[1]}/{key}", samples).ok


# -------------------------------------------------------------------- contracts
# Contract tests of two graded figures (adept_eval.scoring.graded) on hand-made features, with the
# expected values worked out here from the definitions in ``graded.METRICS`` and the docstrings.
#
# - energy_corr: "Pearson correlation of the frame-energy contours (dB, floored 40 dB below the
#   voice's speech level) over frames that are speech in either";
# - match_pauses: pauses pair one-to-one, "greedily by how many path points they share".


N = 40


def _features(energy: np.ndarray, speech: np.ndarray) -> Features:
    n = len(energy)
    rng = np.random.default_rng(n)
    return Features(np.full(n, np.nan), np.asarray(energy, dtype=float),
                    rng.normal(size=(n, 12)), np.asarray(speech, dtype=bool))


def _pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    dx, dy = x - x.mean(), y - y.mean()
    return float((dx * dy).sum() / math.sqrt((dx * dx).sum() * (dy * dy).sum()))


def _identity() -> Alignment:
    return Alignment(np.arange(N), np.arange(N))


# ----------------------------------------------------------------------------- energy_corr
def _speaking_where_the_other_is_silent():
    """Sample: speech in every frame, its syllables' level rising and falling, 6 dB quieter
    over the last quarter. Reference: the same syllables (a little out of phase) for three
    quarters, then digital silence (-100 dB), not speech."""
    k = np.arange(N)
    s = -20.0 + 6 * np.sin(2 * np.pi * k / 10) - 6.0 * (k >= 30)
    r = np.where(k < 30, -22.0 + 6 * np.sin(2 * np.pi * k / 10 + 0.4), -100.0)
    return (_features(s, np.ones(N, dtype=bool)), _features(r, k < 30),
            VoiceNorm(0.0, -20.0), VoiceNorm(0.0, -22.0))


def test_energy_correlation_counts_frames_that_are_speech_in_either_floored_at_40_db():
    sample, reference, s_norm, r_norm = _speaking_where_the_other_is_silent()
    got = graded.score(sample, reference, sample_norm=s_norm, reference_norm=r_norm,
                       alignment=_identity(), distances=[1.0, 2.0]).energy_corr

    # by the definition: every frame is speech in the sample, so all 40 count; the
    # reference's silence (-100 dB, 78 dB under its speech level of -22) counts as -40
    s_rel = sample.energy - (-20.0)
    r_rel = np.maximum(reference.energy - (-22.0), -40.0)
    expected = _pearson(s_rel, r_rel)
    assert got == pytest.approx(expected, abs=1e-9)

    # what the two misreadings would give instead differs well beyond the tolerance: only the
    # frames speech in both, or the silence at its raw level
    both = np.arange(N) < 30
    assert abs(expected - _pearson(s_rel[both], r_rel[both])) > 0.2
    assert abs(expected - _pearson(s_rel, reference.energy - (-22.0))) > 0.05


def test_energy_correlation_is_symmetric_in_who_is_silent():
    """The same with the roles swapped: the sample silent where the reference speaks."""
    sample, reference, s_norm, r_norm = _speaking_where_the_other_is_silent()
    got = graded.score(reference, sample, sample_norm=r_norm, reference_norm=s_norm,
                       alignment=_identity(), distances=[1.0, 2.0]).energy_corr
    expected = _pearson(np.maximum(reference.energy + 22.0, -40.0), sample.energy + 20.0)
    assert got == pytest.approx(expected, abs=1e-9)


def test_energy_floor_is_40_db_under_each_voices_own_speech_level():
    """The floor follows each voice's level (``VoiceNorm.energy``), not full scale: frames
    50 or 90 dB under the sample's level and 45 dB under the reference's all read as 40 dB
    under, so two contours that agree wherever either is above the floor correlate fully."""
    k = np.arange(N)
    pattern = 4 * np.sin(2 * np.pi * k / 8)
    quiet = (k % 8) >= 6  # two frames in eight, far under the voice's level
    s = np.where(quiet, np.where(k % 8 == 6, -50.0, -90.0), pattern) - 10.0
    r = np.where(quiet, -45.0, pattern) - 30.0
    speech = np.ones(N, dtype=bool)
    got = graded.score(_features(s, speech), _features(r, speech),
                       sample_norm=VoiceNorm(0.0, -10.0), reference_norm=VoiceNorm(0.0, -30.0),
                       alignment=_identity(), distances=[1.0, 2.0]).energy_corr
    # by the definition both read np.where(quiet, -40, pattern): the same contour
    assert got == pytest.approx(1.0, abs=1e-9)
    # unfloored, the quiet frames disagree (-50 / -90 against -45): far from 1
    assert _pearson(s + 10.0, r + 30.0) < 0.97


# ----------------------------------------------------------------------------- match_pauses
def test_pauses_pair_greedily_largest_shared_stretch_first():
    """Sample pauses A1 (frames 10-20) and A2 (36-46), reference pauses B1 (10-20) and B2
    (24-34); the path is the identity, each pause widened by 60 ms (3 frames) either side.
    Shared points: A1-B1 16 ([7, 23)), A2-B2 4 ([33, 37)), A1-B2 2 ([21, 23)). Taken largest
    first: A1-B1, then A2-B2 - two pairs. (Smallest first would take A1-B2 and leave A2 and
    B1 unpaired: one.)"""
    a = [Pause(10, 20), Pause(36, 46)]
    b = [Pause(10, 20), Pause(24, 34)]
    path = Alignment(np.arange(60), np.arange(60))
    assert graded.match_pauses(a, b, path) == 2
    assert graded.match_pauses(b, a, path) == 2


def test_a_pause_touching_two_pauses_pairs_once():
    """One-to-one: a sample pause whose widened stretch reaches two reference pauses (A1
    10-20 widened [7, 23); B1 10-20, B2 22-30 widened [19, 33)) is one pair, not two."""
    path = Alignment(np.arange(60), np.arange(60))
    assert graded.match_pauses([Pause(10, 20)], [Pause(10, 20), Pause(22, 30)], path) == 1
    assert graded.match_pauses([], [Pause(10, 20)], path) == 0
