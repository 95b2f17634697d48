"""How the acoustic listener hears real human emotional speech (ADEPT's emotion design).

Public corpora of acted emotional speech are laid out as ADEPT emotion tasks
(``benchmarks.validation.human``): one speaker's takes play ADEPT's references, and a system is
the same speaker's second take (``second-take``), that take in another voice (``other-voice``),
the reference take itself in another voice (``own-take-other-voice``) or another speaker of the
same sex saying the same sentences (``other-speaker``). Per corpus and family it prints, for the
acoustic listener and the naive four-feature baseline: questions (n), sentences, accuracy, its
95% interval resampling whole sentences (exact over the sentences when every question came out
alike), and the one-sided p against chance (0.20 for the five emotions) of an exact
test that relabels each sentence's stimuli as one (``stats.within_cluster_permutation_p``).
Corpora whose emotions are not ADEPT's five are laid out in another ADEPT multi-stimulus design
(JL-Corpus's four in the four-sample attitude design; ``human.LAYOUT``).

The corpora are not part of the repository: fetch them and pass their folders (each corpus's
licence governs its use; docs/listener-validity.md names where they are):

    python benchmarks/human_validation.py --corpus tess=PATH --corpus emodb=PATH --corpus jl=PATH
        [--family other-speaker] [--cache DIR]

The listener's category weight was chosen on TESS alone (``acoustic.CATEGORY_WEIGHT``); every
other corpus is held out.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

# the bench (benchmarks.validation) is not installed: it is imported from the repository root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

def summarise(results, cls: str) -> dict:
    """Accuracy, n, sentences, the sentence-resampled 95% interval and the clustered p of the
    results of one ADEPT class's layout."""
    from adept_eval.corpora import spec
    from adept_eval.scoring.stats import within_cluster_permutation_p
    from benchmarks.validation.benchmark import pooled_interval

    right = [r.correct for r in results]
    sentences = [r.sentence for r in results]
    labels = spec.CLASSES[cls].subcategories_for("female")
    pairs = defaultdict(list)
    for r in results:
        pairs[r.sentence].append((r.target if r.chosen else None, r.chosen))
    p = within_cluster_permutation_p([(labels, v) for v in pairs.values()])
    # whole sentences resampled; exact over the sentences when every question came out alike
    (low, high), _ = pooled_interval(results)
    return {"n": len(right), "sentences": len(set(sentences)),
            "accuracy": sum(right) / len(right), "low": low, "high": high, "p": p,
            "failed": sum(r.failed for r in results)}


def _p(p: float) -> str:
    """A p-value as printed: two significant digits, or a bound below floating point's."""
    return f"{p:.2g}" if p > 0 else "<1e-300"


def main() -> int:
    from tqdm.auto import tqdm

    from adept_eval.corpora import spec
    from adept_eval.scoring.listeners.acoustic import AcousticListener, listener_version
    from benchmarks.validation import human as H
    from benchmarks.validation.baseline import GlobalBaseline

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", required=True, metavar="NAME=PATH",
                        help=f"a corpus and its folder; NAME one of {', '.join(H.READERS)}")
    parser.add_argument("--family", action="append", choices=H.FAMILIES,
                        help="a family of systems (repeatable; default: every family)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="where features and voice-changed takes are kept")
    args = parser.parse_args()
    from adept_eval.paths import cache_home

    cache = args.cache or cache_home() / "human-validation"
    families = args.family or list(H.FAMILIES)
    print(f"acoustic listener {listener_version()}; 95% intervals resample whole sentences "
          f"(exact over them when every question came out alike); "
          f"p against chance: exact, clustered by sentence")
    header = (f"{'corpus':<7} {'family':<21} {'listener':<9} {'n':>5} {'sent':>5} "
              f"{'accuracy':>8} {'95% interval':>13} {'p':>8}")
    print(header)
    for item in args.corpus:
        name, _, root = item.partition("=")
        try:
            takes = H.read_corpus(name, root)
        except ValueError as exc:
            print(f"error: --corpus {item}: {exc}", file=sys.stderr)
            return 2
        cls = H.LAYOUT[name]
        chance = spec.task(f"adept_{cls}_female").chance
        print(f"{name}: {len(takes)} takes laid out as ADEPT's {cls} design "
              f"({len(spec.CLASSES[cls].subcategories_for('female'))} samples, chance "
              f"{chance:.2f})")
        for family in families:
            units = [u for speakers in H.SPEAKERS[name].values()
                     for u in H.units(takes, family, speakers)]
            if not units:
                print(f"{name:<7} {family:<21} (no sentence has every emotion in this family)")
                continue
            results: dict[str, list] = defaultdict(list)
            started = time.perf_counter()
            for unit in tqdm(units, desc=f"{name} {family}", unit="unit", leave=False):
                corpus, samples, asked = H.lay_out(takes, unit, cache)
                listeners = {
                    "acoustic": AcousticListener(corpus=corpus, cache_dir=str(cache / "features"),
                                                 graded=False, progress=False, workers=1),
                    "naive": GlobalBaseline(corpus=corpus, cache_dir=str(cache / "features")),
                }
                for label, listener in listeners.items():
                    results[label] += H.ask(listener, corpus, samples, asked, unit.name)
            for label, rows in results.items():
                s = summarise(rows, cls)
                failed = f"  ({s['failed']} failed)" if s["failed"] else ""
                print(f"{name:<7} {family:<21} {label:<9} {s['n']:>5} {s['sentences']:>5} "
                      f"{s['accuracy']:>8.3f} {s['low']:>6.3f}-{s['high']:.3f} "
                      f"{_p(s['p']):>8}{failed}")
            print(f"{'':<7} {'':<21} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
