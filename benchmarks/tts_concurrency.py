"""Parallel synthesis: ``tts-command`` samples per second at 1, 2 and 4 workers
(``concurrency=`` in ``--model_args``).

Two synthesisers run ADEPT's stimuli (texts and references from ``--corpus``; a synthetic
ADEPT made in a temporary folder when none is given), each run into a fresh cache so every
sample is synthesised:

- ``sleep``: a command that sleeps ``--sleep`` seconds (0.5) and copies the reference: the
  ideal is ``workers / sleep`` samples per second, whatever the machine's cores;
- ``espeak-ng``: Debian's espeak-ng speaking each text into the output (CPU bound: the gain
  is bounded by the cores free; ``--no-espeak`` leaves it out, as does its absence).

For each synthesiser and worker count it prints the samples synthesised (n), the failed ones
(an espeak-ng sample far shorter or longer than its reference fails the audio check, as in a
run), the median wall time of ``--repeat`` runs, samples per second and the speed-up over one
worker, with the machine's cores and 1-minute load average. The samples are the same at any
worker count (checked: the digests of the cached outputs of the sleeping command, which copies
its reference, match).

    python benchmarks/tts_concurrency.py                        # 40 samples, 1 2 4 workers
    python benchmarks/tts_concurrency.py --samples 95 --workers 1 4 --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adept_eval.errors import UserError, run_script
from adept_eval.options import arg_type


def stimuli_of(corpus_path: str | None, n: int, scratch: Path) -> list:
    """The first ``n`` stimuli of the corpus (every class in turn), as systems receive them.

    Args:
        corpus_path: a corpus (zip or folder), or None for a synthetic ADEPT made in
            ``scratch``.
        n: how many.
        scratch: a temporary folder.

    Returns:
        The ``Stimulus`` list.
    """
    from adept_eval.corpora.corpus import load_corpus
    from adept_eval.models.base import Stimulus

    if corpus_path is None:
        from adept_eval.corpora.synthetic import build_corpus

        corpus_path = str(scratch / "ADEPT")
        build_corpus(corpus_path)
    corpus = load_corpus(corpus_path, download=False, progress=False)
    recordings = sorted(corpus.recordings, key=lambda r: (r.sentence_id, r.cls, r.stimulus_id))
    if n > len(recordings):
        raise UserError(f"--samples {n}: the corpus has {len(recordings)} recordings")
    return [Stimulus(r.stimulus_id, r.text, r.audio_path) for r in recordings[:n]]


def commands(sleep: float, espeak: bool) -> dict[str, str]:
    """The synthesisers' ``tts-command`` templates, by name."""
    out = {"sleep": f"sh -c 'sleep {sleep:g}; cp \"$0\" \"$1\"' {{reference}} {{output}}"}
    if espeak and shutil.which("espeak-ng"):
        out["espeak-ng"] = "espeak-ng -w {output} {text}"
    return out


def one_run(template: str, workers: int, stimuli: list, cache: Path) -> dict:
    """Synthesise every stimulus into an empty cache with ``workers`` at once.

    Returns:
        ``seconds`` (wall), ``ok``, ``failed`` and ``digests`` (stimulus -> sha256 of its
        sample, for the usable ones).
    """
    from adept_eval.models.tts_command import TTSCommandSystem

    shutil.rmtree(cache, ignore_errors=True)
    system = TTSCommandSystem(command=template, name="bench", cache_dir=str(cache),
                              concurrency=workers)
    start = time.perf_counter()
    produced = system.produce(stimuli)
    seconds = time.perf_counter() - start
    digests = {p.stimulus_id: hashlib.sha256(Path(p.path).read_bytes()).hexdigest()
               for p in produced if p.status == "ok"}
    return {"seconds": seconds, "ok": len(digests), "failed": len(produced) - len(digests),
            "digests": digests}


def rows_for(name: str, template: str, workers: list[int], stimuli: list, repeat: int,
             scratch: Path) -> list[dict]:
    """One row per worker count: the median wall time of ``repeat`` runs and what it
    produced."""
    rows = []
    for count in workers:
        runs = [one_run(template, count, stimuli, scratch / f"{name}-{count}-{i}")
                for i in range(repeat)]
        if any(r["digests"] != runs[0]["digests"] for r in runs):
            raise RuntimeError(f"{name}: runs at {count} workers produced different samples")
        seconds = statistics.median(r["seconds"] for r in runs)
        rows.append({"synthesiser": name, "workers": count, "n": len(stimuli),
                     "ok": runs[0]["ok"], "failed": runs[0]["failed"], "seconds": seconds,
                     "rate": len(stimuli) / seconds, "digests": runs[0]["digests"]})
    base = rows[0]["rate"]
    for row in rows:
        row["speedup"] = row["rate"] / base
    return rows


def print_rows(rows: list[dict], repeat: int, sleep: float) -> None:
    """The table, one line per synthesiser and worker count."""
    print(f"{os.cpu_count()} cores; 1-minute load average {os.getloadavg()[0]:.2f}; median of "
          f"{repeat} run(s) each; the sleep command sleeps {sleep:g} s a sample")
    print(f"{'synthesiser':<12} {'workers':>7} {'n':>4} {'failed':>6} {'median s':>9} "
          f"{'samples/s':>10} {'speed-up':>9} {'ideal':>6}")
    for r in rows:
        ideal = f"{r['workers']:.0f}x" if r["synthesiser"] == "sleep" else "-"
        print(f"{r['synthesiser']:<12} {r['workers']:>7} {r['n']:>4} {r['failed']:>6} "
              f"{r['seconds']:>9.2f} {r['rate']:>10.2f} {r['speedup']:>8.2f}x {ideal:>6}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help="an ADEPT zip or folder (default: a synthetic ADEPT)")
    parser.add_argument("--samples", type=arg_type("a whole number of samples", whole=True,
                                                   least=1), default=40)
    parser.add_argument("--workers", nargs="+", default=[1, 2, 4],
                        type=arg_type("a whole number of workers", whole=True, least=1))
    parser.add_argument("--sleep", type=arg_type("seconds", positive=True), default=0.5,
                        help="seconds the sleeping command takes a sample (0.5)")
    parser.add_argument("--repeat", type=arg_type("a whole number of runs", whole=True,
                                                  least=1), default=1)
    parser.add_argument("--no-espeak", action="store_true", help="leave espeak-ng out")
    args = parser.parse_args(argv)
    os.environ["TQDM_DISABLE"] = "1"
    logging.getLogger("adept_eval").setLevel(logging.ERROR)  # espeak-ng's checked failures
    workers = sorted(set(args.workers))
    with tempfile.TemporaryDirectory(prefix="tts-concurrency-") as tmp:
        scratch = Path(tmp)
        stimuli = stimuli_of(args.corpus, args.samples, scratch)
        rows = []
        for name, template in commands(args.sleep, not args.no_espeak).items():
            rows += rows_for(name, template, workers, stimuli, args.repeat, scratch)
    digests = [r["digests"] for r in rows if r["synthesiser"] == "sleep"]
    if any(d != digests[0] for d in digests):
        raise RuntimeError("the sleeping command's samples differ between worker counts")
    print_rows(rows, args.repeat, args.sleep)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
