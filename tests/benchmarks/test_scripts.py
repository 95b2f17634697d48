"""The benchmark and maintenance scripts: bad input is one message naming the option (exit
status 2, no traceback), and what they print is computed from their inputs, with its n."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(path: str, *args: str, env: dict | None = None, timeout: int = 300):
    return subprocess.run([sys.executable, str(ROOT / path), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _one_message(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr
    for w in words:
        assert w in done.stderr, (w, done.stderr)


@pytest.mark.parametrize("args, words", [
    (["--simulations", "0"], ["--simulations", "at least 1"]),
    (["--shift", "0"], ["--shift", "positive"]),
    (["--shift", "x"], ["--shift", "positive"]),
    (["--part", "nothing"], ["--part", "invalid choice"]),
])
def test_human_comparison_level_refuses_bad_input(args, words):
    _one_message(_script("benchmarks/human_comparison_level.py", *args), *words)


def test_human_comparison_level_prints_rates_with_their_interval_and_n():
    """Each rate with its exact interval over the simulated tests; the two-way test's column
    is computed by ``stats.two_way_variance`` (the old CGM cells' term over-rejects the
    sorted crowd of unequal skill that the new one holds)."""
    from adept_eval.scoring import stats

    bench = _module("benchmarks/human_comparison_level.py")
    now, before, power = bench.people_rates("two groups 8:6", "best first", "rotated", 14,
                                            tests=600, shift=0.5, seed=3)
    assert now / 600 <= 0.08 and before / 600 >= 0.09 and power / 600 > 0.9
    low, high = stats.clopper_pearson(7, 130)
    assert bench.rate(7, 130) == f"{7 / 130:.1%} [{100 * low:.1f}, {100 * high:.1f}]"
    done = _script("benchmarks/human_comparison_level.py", "--simulations", "20", "--part",
                   "vstyle")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "n = 20 simulated tests per row" in done.stdout and "VStyle" in done.stdout


@pytest.mark.parametrize("args, words", [
    (["--sentences", "0"], ["--sentences", "at least 1"]),
    (["--sentences", "6"], ["--sentences", "at most 5"]),
    (["--only-one"], ["--system", "at least two systems"]),
    (["--corpus", "/nonexistent"], ["/nonexistent"]),
])
def test_graded_separation_refuses_bad_input(args, words, tmp_path):
    """--sentences 0 printed n=0 nan then "ordered on every class: yes"; one --system was
    always "ordered"; a missing corpus was a CorpusError traceback."""
    systems = ["--system", f"a={tmp_path}"] + ([] if "--only-one" in args else
                                                 ["--system", f"b={tmp_path}"])
    args = [a for a in args if a != "--only-one"]
    corpus = [] if "--corpus" in args else ["--corpus", str(tmp_path)]
    _one_message(_script("benchmarks/graded_separation.py", *corpus, *systems, *args), *words)


def test_graded_separation_orders_by_paired_tests(synthetic_root, systems, tmp_path):
    """Copy < flat by the paired test on every class; the reverse order is not shown."""
    done = _script("benchmarks/graded_separation.py", "--corpus", str(synthetic_root),
                   "--system", f"copy={systems['copy']}", "--system", f"flat={systems['flat']}",
                   "--sentences", "3", "--features", str(tmp_path / "f"), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ordered on every class: yes (each next system's prosody_distance higher on the " \
           "same stimuli, paired" in done.stdout, done.stdout[-3000:]
    assert "flat - copy: +" in done.stdout and "p = " in done.stdout
    few = _script("benchmarks/graded_separation.py", "--corpus", str(synthetic_root),
                  "--system", f"copy={systems['copy']}", "--system", f"flat={systems['flat']}",
                  "--sentences", "2", "--features", str(tmp_path / "f"), timeout=900)
    assert "the smallest p 4 sentences allow is 0.125" in few.stdout, few.stdout[-3000:]
    assert "ordered on every class: NO" in few.stdout
    back = _script("benchmarks/graded_separation.py", "--corpus", str(synthetic_root),
                   "--system", f"flat={systems['flat']}", "--system", f"copy={systems['copy']}",
                   "--sentences", "2", "--features", str(tmp_path / "f"), timeout=900)
    assert "ordered on every class: NO" in back.stdout, back.stdout[-3000:]


@pytest.mark.parametrize("args, words", [
    (["--audio", "EMPTY"], ["--audio", "no .mp3/.wav files in"]),
    (["--latency", "0"], ["--latency", "above 0"]),
    (["--concurrency", "0"], ["--concurrency", "at least 1"]),
])
def test_judge_throughput_refuses_bad_input(args, words, tmp_path):
    """An empty --audio folder was a ZeroDivisionError (before the script's own check),
    --latency 0 a division by zero."""
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args]
    if "--audio" not in args:
        (tmp_path / "one").mkdir()
        (tmp_path / "one" / "a.wav").write_bytes(b"RIFF")
        args += ["--audio", str(tmp_path / "one")]
    _one_message(_script("benchmarks/judge_throughput.py", *args, timeout=120), *words)


def test_publish_corpus_card_counts_what_it_publishes():
    """The dataset card said "195 ... twelve" whatever the corpus held."""
    publish = _module("scripts/publish_corpus.py")
    configs = {"recordings": 190, **{f"adept_task_{i}": 10 for i in range(11)}}
    text = publish.card(configs, "cc-by-4.0", "0" * 64)
    assert "190 natural English recordings (2 speakers, 6 prosodic classes) and the 11 " \
           "forced-choice listening tests built from them (110 questions)" in text
    assert "195" not in text and "twelve" not in text


def test_publish_corpus_refuses_a_missing_corpus(tmp_path):
    _one_message(_script("scripts/publish_corpus.py", "--corpus", str(tmp_path / "nonexistent"),
                         "--local-dir", str(tmp_path / "out")), "nonexistent")



def test_listening_test_load_summary_says_how_many_repeats(capsys):
    bench = _module("benchmarks/listening_test_load.py")
    rows = [dict({f: float(i + 1) for f in bench.FIGURES}, think=3.0, code=code)
            for i, code in enumerate(["base", "cur", "cur", "base", "base", "cur"])]
    bench.print_summary(rows, ["base", "cur"])
    out = capsys.readouterr().out
    assert "n = repeats per version" in out
    wall = next(line for line in out.splitlines() if line.split()[1:2] == ["wall"])
    assert wall.split()[-1] == "3/3", wall
    assert wall.split()[2:4] == ["4.00", "3.00"], wall  # base 1, 4, 5; cur 2, 3, 6


def test_adept_full_eval_refuses_repeat_0():
    _one_message(_script("benchmarks/adept_full_eval.py", "--repeat", "0"), "--repeat",
                 "at least 1")


def test_adept_full_eval_counts_its_corpus_and_takes_true_medians(synthetic_root, tmp_path):
    """It printed "12 tasks, 165 questions, 195 system samples" whatever --corpus held, and
    runs[len // 2] as the median (the upper middle run for an even --repeat)."""
    from adept_eval.corpora.corpus import Corpus
    from adept_eval.corpora.questions import all_questions

    bench = _module("benchmarks/adept_full_eval.py")
    runs = [{"wall": w, "cpu": c, "peak_mib": m} for w, c, m in ((4, 3, 100), (2, 1, 300),
                                                                   (3, 2, 200), (1, 9, 50))]
    assert bench.median_row(runs) == {"wall": 2.5, "cpu": 2.5, "peak_mib": 150}
    qs = all_questions(Corpus(synthetic_root))
    full = bench.corpus_counts(str(synthetic_root))
    assert full == (len([v for v in qs.values() if v]), sum(map(len, qs.values())),
                    len({s for v in qs.values() for q in v for s in q.stimuli}))


def test_graded_overhead_refuses_rounds_0_and_alternates_abba():
    """--rounds 0 was a traceback; "off" always ran first and paid the first-run costs."""
    _one_message(_script("benchmarks/graded_overhead.py", "--rounds", "0"), "--rounds",
                 "at least 1")
    bench = _module("benchmarks/graded_overhead.py")
    assert [bench.order(r) for r in range(4)] == [("off", "on"), ("on", "off")] * 2


@pytest.mark.parametrize("args, words", [
    (["--workers", "0"], ["--workers", "at least 1"]),
    (["--sleep", "0"], ["--sleep", "more than 0"]),
    (["--samples", "x"], ["--samples", "not a whole number"]),
])
def test_tts_concurrency_refuses_bad_input(args, words):
    _one_message(_script("benchmarks/tts_concurrency.py", *args), *words)


def test_tts_concurrency_prints_each_worker_count_with_its_n(synthetic_root):
    done = _script("benchmarks/tts_concurrency.py", "--corpus", str(synthetic_root),
                   "--samples", "6", "--workers", "2", "1", "--sleep", "0.05", "--no-espeak")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("sleep ")]
    assert [(r[1], r[2], r[3]) for r in rows] == [("1", "6", "0"), ("2", "6", "0")]
    for r in rows:  # samples/s is n over the median wall time printed
        assert float(r[5]) == pytest.approx(6 / float(r[4]), rel=0.02)
    assert rows[0][6] == "1.00x"
    done = _script("benchmarks/tts_concurrency.py", "--corpus", str(synthetic_root),
                   "--samples", "999", "--no-espeak")
    _one_message(done, "--samples 999: the corpus has 195 recordings")


@pytest.mark.parametrize("args, words", [
    (["--rounds", "0"], ["--rounds", "a whole number of rounds"]),
    (["--samples", "x"], ["--samples", "a whole number of samples"]),
])
def test_lm_eval_hook_cost_refuses_bad_input(args, words):
    _one_message(_script("benchmarks/lm_eval_hook_cost.py", *args), *words)
