"""Do the graded figures order systems by how much prosody they transfer, class by class?

Scores named systems' samples (ADEPT layout: ``CLASS/SUBCATEGORY/adXX_NNNN.wav``) against an
ADEPT-layout reference corpus the way the ADEPT tasks do inside lm-eval (the acoustic
listener's ``graded_scores``: its features and its per-sentence comparison as the distance)
and prints, per class and pooled, each
system's mean ``prosody_distance`` with a 95% bootstrap interval clustered by sentence, n and
failures, plus FFE, normalised F0 RMSE and F0 correlation; then whether the systems are ordered
as listed (e.g. copy < partial < flat) on every class: each next system's prosody_distance is
higher than the one before it on the same stimuli by a paired test (the difference and interval
of ``stats.paired_difference``; p from the sentence-clustered sign-flip test, p < 0.05, the
stricter with few sentences; difference, interval, p and the pairs' n printed),
not merely its mean. At least two systems, 1-5 sentences per class. For validity, the references and the
systems must come from different engines/voices than the ones the listener was tuned on (see
the listener's realistic-validation benchmark, which renders such corpora).

    python benchmarks/graded_separation.py --corpus REF/ADEPT \\
        --system copy=DIR --system partial=DIR --system flat=DIR
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adept_eval.errors import run_script
from adept_eval.options import arg_type

FIGURES = ("prosody_distance", "ffe", "f0_rmse_norm_st", "f0_corr")
LEVEL = 0.05


def score(listener, system: Path, sentence_limit: int):
    """class -> graded records of the system's stimuli (first ``sentence_limit`` sentences)."""
    from adept_eval.corpora import spec

    by_class: dict[str, list] = {}
    for cls_name, cls in spec.CLASSES.items():
        for speaker in spec.SPEAKERS:
            for sid in cls.sentence_ids()[:sentence_limit]:
                key = f"{spec.SPEAKERS[speaker]}_{sid}"
                ids = [f"{cls_name}/{s}/{key}" for s in cls.subcategories_for(speaker)]
                samples = {i: str(system / f"{i}.wav") for i in ids
                           if (system / f"{i}.wav").exists()}
                by_class.setdefault(cls_name, []).extend(
                    listener.graded_scores(samples, ids).values())
    return by_class


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="ADEPT-layout reference corpus folder")
    parser.add_argument("--system", action="append", required=True, metavar="NAME=DIR",
                        help="a system's samples, in the expected order (repeatable)")
    parser.add_argument("--sentences", default=5, help="sentences per class (1-5)",
                        type=arg_type("1 to 5 sentences per class", whole=True, least=1, most=5))
    parser.add_argument("--features", help="feature cache (default: a temporary folder)")
    args = parser.parse_args(argv)
    if len(args.system) < 2:
        parser.error(f"argument --system: give at least two systems to order (got "
                     f"{len(args.system)})")

    from adept_eval.scoring import graded, stats
    from adept_eval.corpora.corpus import Corpus
    from adept_eval.scoring.listeners import get_listener

    systems = []
    for item in args.system:
        name, _, folder = item.partition("=")
        if not folder or not Path(folder).is_dir():
            parser.error(f"--system {item!r}: expected NAME=DIR with an existing folder")
        systems.append((name, Path(folder)))
    corpus = Corpus(args.corpus)
    listener = get_listener("acoustic", corpus=corpus, progress=False,
                            cache_dir=args.features or tempfile.mkdtemp(prefix="graded-sep-"))
    results = {name: score(listener, folder, args.sentences) for name, folder in systems}
    classes = list(next(iter(results.values())))

    ordered_everywhere = True
    for cls in classes + ["pooled"]:
        print(f"\n{cls}")
        by_system = {}
        for name, _ in systems:
            recs = (sum(results[name].values(), []) if cls == "pooled"
                    else results[name][cls])
            by_system[name] = recs
            summary = graded.aggregate(recs, clusters=graded.adept_sentence_clusters(recs))
            pd = summary["prosody_distance"]
            extra = "  ".join(f"{f} {summary[f].mean:6.3f}" for f in FIGURES[1:])
            print(f"  {name:10} prosody_distance {pd.mean:6.3f} [{pd.ci_low:6.3f}, "
                  f"{pd.ci_high:6.3f}]  n={pd.n:3d} failed={pd.n_failed} "
                  f"undefined={pd.n_undefined}  {extra}")
        ok = True
        for (first, _), (second, _) in zip(systems, systems[1:]):
            d = paired(by_system[first], by_system[second], stats)
            higher = d.n > 0 and d.difference > 0 and d.p_value < LEVEL
            ok &= higher
            print(f"  {second} - {first}: {d.difference:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}], "
                  f"p = {d.p_value:.3g}, n = {d.n} stimuli in {d.clusters} sentences: "
                  f"{'higher' if higher else 'NOT shown higher'}"
                  + (f" (the smallest p {d.clusters} sentences allow is "
                     f"{stats.smallest_sign_flip_p(d.clusters):.3g})"
                     if d.n and stats.smallest_sign_flip_p(d.clusters) >= LEVEL
                     else ""))
        if cls != "pooled":
            ordered_everywhere &= ok
        print(f"  ordered {' < '.join(n for n, _ in systems)}: {'yes' if ok else 'NO'}")
    print(f"\nordered on every class: {'yes' if ordered_everywhere else 'NO'} (each next "
          f"system's prosody_distance higher on the same stimuli, paired sentence-clustered "
          f"sign-flip test, p < {LEVEL:g}; {len(classes)} classes, {args.sentences} sentences "
          f"each)")
    return 0


def paired(a_records, b_records, stats):
    """``stats.paired_difference`` of ``b`` - ``a`` in prosody_distance over the stimuli both
    scored (a failed or undefined one on either side is left out), clustered by sentence, with
    the sentence sign-flip test's p."""
    from adept_eval.scoring import graded

    a = {r.id: r.prosody_distance for r in a_records if r.status == "ok"}
    b = {r.id: r.prosody_distance for r in b_records if r.status == "ok"}
    ids = sorted(a.keys() & b.keys())
    clusters = graded.adept_sentence_clusters(
        [r for r in a_records if r.id in b and r.status == "ok"])
    from dataclasses import replace

    diff = stats.paired_difference([b[i] for i in ids], [a[i] for i in ids],
                                   [clusters.get(i, i) for i in ids])
    # "ordered" asks for the exact sentence sign-flip test, which never over-claims with a
    # handful of sentences (its smallest p, 2 / 2^k, is printed when it cannot reach 5%)
    kept = [i for i in ids if not math.isnan(b[i] - a[i])]
    p = stats.cluster_sign_flip_p([b[i] - a[i] for i in kept], [clusters.get(i, i) for i in kept])
    return replace(diff, p_value=p)


if __name__ == "__main__":
    raise SystemExit(run_script(main))
