"""Do the graded figures order systems by how much prosody they transfer, class by class?

Scores named systems' samples (ADEPT layout: ``CLASS/SUBCATEGORY/adXX_NNNN.wav``) against an
ADEPT-layout reference corpus the way the ADEPT tasks do inside lm-eval (the acoustic
listener's ``graded_scores``: its features and its per-sentence comparison as the distance)
and prints, per class and pooled, each
system's mean ``prosody_distance`` with a 95% bootstrap interval clustered by sentence, n and
failures, plus FFE, normalised F0 RMSE and F0 correlation; then whether the systems are ordered
as listed (e.g. copy < partial < flat) on every class. For validity, the references and the
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
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

FIGURES = ("prosody_distance", "ffe", "f0_rmse_norm_st", "f0_corr")


def score(listener, system: Path, sentence_limit: int):
    """class -> graded records of the system's stimuli (first ``sentence_limit`` sentences)."""
    from adept_eval import spec

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="ADEPT-layout reference corpus folder")
    parser.add_argument("--system", action="append", required=True, metavar="NAME=DIR",
                        help="a system's samples, in the expected order (repeatable)")
    parser.add_argument("--sentences", type=int, default=5, help="sentences per class (1-5)")
    parser.add_argument("--features", help="feature cache (default: a temporary folder)")
    args = parser.parse_args()

    from adept_eval import graded
    from adept_eval.corpus import Corpus
    from adept_eval.listeners import get_listener

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
        means = []
        for name, _ in systems:
            recs = (sum(results[name].values(), []) if cls == "pooled"
                    else results[name][cls])
            summary = graded.aggregate(recs, clusters=graded.adept_sentence_clusters(recs))
            pd = summary["prosody_distance"]
            means.append(pd.mean)
            extra = "  ".join(f"{f} {summary[f].mean:6.3f}" for f in FIGURES[1:])
            print(f"  {name:10} prosody_distance {pd.mean:6.3f} [{pd.ci_low:6.3f}, "
                  f"{pd.ci_high:6.3f}]  n={pd.n:3d} failed={pd.n_failed} "
                  f"undefined={pd.n_undefined}  {extra}")
        ok = all(a < b for a, b in zip(means, means[1:]))
        if cls != "pooled":
            ordered_everywhere &= ok
        print(f"  ordered {' < '.join(n for n, _ in systems)}: {'yes' if ok else 'NO'}")
    print(f"\nordered on every class: {'yes' if ordered_everywhere else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
