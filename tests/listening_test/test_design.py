"""``listening_test.design``: the questions, plans, rotation and blinded audio of a built test,
and the systems' sources it is built from."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import soundfile as sf

from adept_eval.corpora import spec
from adept_eval.corpora.questions import build_questions
from adept_eval.errors import DesignError
from adept_eval.listening_test import design
from adept_eval.listening_test.design import build_test, item_from, load_test, plan_for

from .shared import TASKS


def test_questions_are_exactly_the_tutorial_designs(built, corpus):
    config = load_test(built)
    expected = [q for t in TASKS for q in build_questions(corpus, t)]
    assert [config.question(q.question_id) for q in expected] == expected
    assert config.tasks == tuple(TASKS) and len(config.questions) == 20 + 15 + 10
    for q in expected:  # neutral a choice (multi) but never the answer
        assert q.target != spec.NEUTRAL
        if q.design == "multi":
            assert spec.NEUTRAL in q.choice_subcategories


def test_plan_holds_every_question_once_in_a_seeded_shuffled_order(built):
    config = load_test(built)
    plan = plan_for(config, "alice", 0)
    assert plan == plan_for(config, "alice", 0)  # seeded: drawn again, the same
    other = plan_for(config, "bob", 1)
    assert [i["key"] for i in plan["items"]] != [i["key"] for i in other["items"]]
    items = [item_from(d) for d in plan["items"]]
    keys = [i.key for i in items if i.kind == "question"]
    assert sorted(keys) == sorted(config.questions)
    assert Counter(i.task for i in items if i.kind == "catch") == {t: 1 for t in TASKS}
    # each task's items are contiguous (one task at a time), in the participant's task order
    tasks_in_order = [t for k, t in enumerate(i.task for i in items)
                      if k == 0 or items[k - 1].task != t]
    assert tasks_in_order == plan["task_order"] and sorted(tasks_in_order) == sorted(TASKS)
    orders = set()
    for it in items:
        if it.kind != "question":
            continue
        q = config.question(it.question_id)
        system = plan["systems"][it.task]
        if q.design == "multi":
            # the presented audio: the question's stimuli in the task's system, in `order`
            assert it.audio == tuple(config.samples[system][q.stimuli[i]] for i in it.order)
            assert sorted(it.order) == list(range(q.n_choices))
            orders.add(it.order)
        else:
            assert it.choices == q.choices and it.audio == (config.samples[system][q.stimuli[0]],)
        assert it.answer == q.answer
    assert len(orders) > 1  # stimulus order is shuffled per participant and question


def test_systems_are_balanced_over_participants(built):
    config = load_test(built)
    counts = Counter()
    for i in range(6):
        for task, system in plan_for(config, f"p{i}", i)["systems"].items():
            counts[(task, system)] += 1
    assert all(counts[(t, s)] == 3 for t in TASKS for s in config.systems)
    # within a participant, tasks are spread over the systems too
    assert set(plan_for(config, "x", 0)["systems"].values()) == {"copy", "flat"}


def test_audio_is_blinded(built, corpus):
    config = load_test(built)
    names = [p.name for p in (built / design.AUDIO_DIR).iterdir()]
    assert len(names) == len(config.files)
    words = set(config.systems) | {r.key for r in corpus.recordings} | \
        {s for c in spec.CLASSES.values() for s in c.subcategories} | set(spec.CLASSES)
    for name in names:
        assert not any(w in name for w in words), name
    item = plan_for(config, "p", 0)["items"][0]
    public = json.dumps(item_from(item).public())
    assert not any(w in public for w in words if len(w) > 3 and w not in ("end",)), public


def test_headphone_trials_are_woods_antiphase(built):
    config = load_test(built)
    assert len(config.headphone_tokens) == design.HEADPHONE_TRIALS
    for tok, quiet in zip(config.headphone_tokens, config.headphone_answers):
        x, rate = sf.read(str(built / design.AUDIO_DIR / config.files[tok]))
        assert x.shape[1] == 2
        seg = int(1.5 * rate)
        tones = [x[i * seg: i * seg + rate] for i in range(3)]
        levels = [20 * np.log10(np.sqrt(np.mean(t[:, 0] ** 2))) for t in tones]
        loud = max(levels)
        assert [round(loud - v) for v in levels].count(6) == 1 and \
            int(np.argmin(levels)) == quiet
        anti = [np.allclose(t[:, 0], -t[:, 1], atol=1e-3) and np.abs(t).max() > 0.1
                for t in tones]
        assert sum(anti) == 1 and not anti[quiet]


def test_missing_samples_stop_the_build(corpus, tmp_path):
    from adept_eval.errors import DesignError

    (tmp_path / "empty").mkdir()
    with pytest.raises(DesignError, match="missing or unusable"):
        build_test(corpus, tmp_path / "t", {"empty": tmp_path / "empty"}, tasks=TASKS[:1])


def test_plans_are_stored_exactly_as_the_dataclass_form(built):
    """Drawing plans got faster (no ``asdict``, questions parsed once): what is stored must not
    change, or participants of a running test would be served a different plan."""
    from dataclasses import asdict

    config = load_test(built)
    for t in TASKS:
        assert config.task_questions(t) == [config.question(q) for q, d in
                                            config.questions.items() if d["task"] == t]
    plan = plan_for(config, "alice", 3)
    as_dataclass = [asdict(item_from(d)) for d in plan["items"]]
    assert json.dumps(plan["items"]) == json.dumps(as_dataclass)


def test_a_test_can_be_built_from_an_lm_eval_run(corpus, systems, tmp_path, monkeypatch):
    """`lm_eval --output_path run/ --log_samples` of any system: its logged audio is served."""
    import os
    import subprocess
    import sys

    run = tmp_path / "run"
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root)}
    subprocess.run([sys.executable, "-m", "lm_eval", "--model", "audio-dir", "--model_args",
                    f"path={systems['swap']},name=swapper", "--tasks",
                    "adept_marked_tonicity_male", "--output_path", str(run), "--log_samples"],
                   check=True, env=env, capture_output=True, timeout=600)
    config = build_test(corpus, tmp_path / "t", {"swapper": run},
                        tasks=["adept_marked_tonicity_male"], seed=1)
    for sid, tok in config.samples["swapper"].items():  # that run's own samples, re-encoded
        served, rate = sf.read(tmp_path / "t" / design.AUDIO_DIR / config.files[tok])
        source = sf.info(systems["swap"] / f"{sid}.wav")
        assert rate == config.rate == min(design.BLIND_RATE, source.samplerate)
        assert len(served) / rate == pytest.approx(source.duration, abs=1e-3)
    with pytest.raises(DesignError, match="no usable sample logged"):
        build_test(corpus, tmp_path / "t2", {"swapper": run}, tasks=["adept_emotion_male"])


def test_a_folder_of_several_systems_runs_is_refused_and_the_run_heard_is_printed(
        corpus, systems, tmp_path):
    """`listening-test build out2` where out2 is an lm-eval --output_path holding runs of two
    systems printed "1 system(s) (out2)" and served the newest run of either, never saying
    which. Now one source is one system: such a folder is refused in one message naming each
    system and what names it; a folder of one system's runs stands for the newest, printed
    with how it was chosen; and the system is named after the run's own system name, not the
    folder. The real adept-eval, on real lm_eval runs."""
    import os
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from faults import console_script

    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "COLUMNS": "1000",
           "TQDM_DISABLE": "1"}
    task = "adept_marked_tonicity_male"

    def lm_eval(system, name=None, output="out2"):
        args = f"path={systems[system]}" + (f",name={name}" if name else "")
        subprocess.run([sys.executable, "-m", "lm_eval", "--model", "audio-dir", "--model_args",
                        args, "--tasks", task, "--output_path", output, "--log_samples"],
                       check=True, env=env, capture_output=True, timeout=600, cwd=tmp_path)

    def build(*args):
        return subprocess.run([console_script("adept-eval"), "listening-test", "build", *args,
                               "--tasks", task, "--seed", "1"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)

    lm_eval("copy", "copier")
    lm_eval("flat")  # named after its samples folder, "flat"; lm-eval's folder after the path
    lm_eval("copy", "copier")  # a later run of the same system, beside the first
    refused = build("out2", "-o", "lt")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: out2 holds lm-eval runs of 2 systems (copier, flat); a system of the test "
        "is one system's run: name each to hear, e.g. copier="), lines
    assert not (tmp_path / "lt").exists()
    suggested = shlex.split(lines[0].split("e.g. ", 1)[1])
    named = dict(item.split("=", 1) for item in suggested)
    assert list(named) == ["copier", "flat"]
    runs = {name: sorted((tmp_path / folder).glob("results_*.json"))
            for name, folder in named.items()}
    assert len(runs["copier"]) == 2 and len(runs["flat"]) == 1
    built = build(*suggested, "-o", "lt")  # as the message says: each system by name
    assert built.returncode == 0, built.stderr
    newest = Path(named["copier"]) / runs["copier"][-1].name
    assert (f"system copier: lm-eval run {newest} (the newest of 2 runs of copier in "
            f"{named['copier']}; name another run's results_*.json to use it)") in built.stdout
    assert f"system flat: lm-eval run {Path(named['flat']) / runs['flat'][0].name}" \
        in built.stdout and "2 system(s) (copier, flat)" in built.stdout, built.stdout
    config = load_test(tmp_path / "lt")
    assert config.sources == {"copier": str(runs["copier"][-1].resolve()),
                              "flat": str(runs["flat"][0].resolve())}
    lm_eval("flat", output="my_run")  # an --output_path of one system's run
    one = build("my_run", "-o", "lt_one")  # no NAME=: named after the run's system, not my_run
    assert one.returncode == 0, one.stderr
    assert "1 system(s) (flat)" in one.stdout, one.stdout



def test_headphone_keys_are_each_participants_own(built):
    """The headphone key was the same for everyone (one script could share it). The six
    trials are now every placement of the quiet and the anti-phase tone, each participant
    hearing them in an order of their own."""
    config = load_test(built)
    assert sorted(Counter(config.headphone_answers).values()) == [2, 2, 2]
    keys = {tuple(config.headphone_answers[i] for i in design.headphone_order(config, f"p{n}"))
            for n in range(40)}
    assert len(keys) > 20
    assert design.headphone_order(config, "p1") == design.headphone_order(config, "p1")


def test_single_stimulus_attention_checks_do_not_always_want_the_beep(built):
    """The single-stimulus attention check's right answer was always "A beep" (44 of 44).
    It now plays a beep or a speech sample, drawn per participant."""
    config = load_test(built)
    single = [t for t in config.tasks if spec.task(t).cls.design == "single"]
    assert single
    right = Counter()
    for n in range(40):
        for d in plan_for(config, f"p{n}", n)["items"]:
            item = item_from(d)
            if item.kind == "catch" and item.design == "single":
                heard = item.choices[item.answer]
                is_beep = item.audio[0] in config.catch_tokens
                assert heard == design.CATCH_SINGLE_CHOICES[0 if is_beep else 1]
                right[heard] += 1
    assert all(right[c] >= 8 for c in design.CATCH_SINGLE_CHOICES), right


def _band_db(x: np.ndarray, rate: int, low: float, high: float) -> float:
    """The energy of ``x`` between ``low`` and ``high`` Hz, in dB of its total energy."""
    power = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    band = power[(freqs >= low) & (freqs < high)].sum()
    return float(10 * np.log10(band / power.sum() + 1e-30))


def test_served_audio_tells_systems_apart_by_nothing_but_their_sound(corpus, systems, tmp_path):
    """A 24 kHz stereo system 6 dB quieter beside a 44.1 kHz one: resampled to 44.1 kHz its
    files had lengths of the form ceil(n * 147 / 80), which named the system by
    Content-Length, and only the other system had energy above 12 kHz. Now every stimulus is
    served at the lowest system rate, low-passed at one cut-off, and each stimulus's versions
    are padded to one length: equal sizes, and the same (empty) top band."""
    from scipy.signal import resample_poly

    quiet = tmp_path / "quiet24k"
    for path in systems["copy"].rglob("*"):
        target = quiet / path.relative_to(systems["copy"])
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".wav":
            x, rate = sf.read(str(path))
            y = resample_poly(x, 80, 147) * 10 ** (-6 / 20)
            target.parent.mkdir(parents=True, exist_ok=True)
            sf.write(str(target), np.stack([y, y], axis=1), 24000, subtype="PCM_16")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    task = "adept_topical_emphasis_male"
    config = build_test(corpus, tmp_path / "t", {"A": systems["copy"], "B": quiet},
                        tasks=[task], seed=3)
    audio = tmp_path / "t" / design.AUDIO_DIR
    assert config.rate == 24000 and config.bandwidth == pytest.approx(10800)
    served = [config.samples["A"], config.samples["B"]]
    assert served[0].keys() == served[1].keys()
    for stimulus in served[0]:
        files = [audio / config.files[by[stimulus]] for by in served]
        assert files[0].stat().st_size == files[1].stat().st_size, stimulus
        infos = [sf.info(str(f)) for f in files]
        assert {(i.samplerate, i.channels) for i in infos} == {(24000, 1)}
        for f in files:
            x, rate = sf.read(str(f))
            assert _band_db(x, rate, 11000, 12000) < -60, (stimulus, f)
    for beep in config.catch_tokens:
        assert sf.info(str(audio / config.files[beep])).samplerate == 24000
