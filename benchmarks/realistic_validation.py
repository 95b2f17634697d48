"""Cross-engine validity of the acoustic listener on real TTS speech (ADEPT layout).

References (the stand-in for ADEPT's natural recordings) are spoken by one TTS engine and the
systems by another, never the same; the engines rotate. Per rotation and system (adept-natural,
copy, partial, flat, swap, and the non-speech tone / dc / noise / silence) it prints, for the
acoustic listener and for a naive global-feature baseline, per task: accuracy, n, chance, the
exact one-sided binomial p-value against chance and the two-sided one; the pooled accuracy; the
swapped-subcategory accuracy; for non-speech systems how many samples ``adept-eval check``
refuses; and the real-time factor of a full evaluation.

Engines: espeak-ng (SSML), festival and flite (plain text, prosody imposed by PSOLA), and voice
sets with their other voices (festival-ked: festival's ked; awb and flite-kal: flite's awb and kal
with an espeak-ng female variant; pico: SVOX Pico's female by its own markup, festival's MBROLA
us2 male; rhvoice: RHVoice's HTS voices clb and bdl for both speakers). Needs the Debian
packages espeak-ng, festival (+ festvox-us-slt-hts, festvox-kallpc16k, festvox-kdlpc16k) and
flite for every default rotation, libttspico-utils and festvox-us2 (Debian's non-free and contrib
components) for ``pico``, librhvoice5 and rhvoice-english (non-free) for ``rhvoice``;
``--rotation`` picks some (a rotation never has one synthesiser on both sides for a speaker).
The listener was tuned on three rotations (``benchmark.CALIBRATION_ROTATIONS``) and, since method
v9, on three more with new voices (``RESERVED_ROTATIONS``, read freely); the five others are
held out: reported as measured, the targets checked on them. Rendering takes a
few minutes per engine the first time; corpora are cached (``--cache``, default
``$ADEPT_EVAL_HOME/validation``).

    python benchmarks/realistic_validation.py [--rotation festival:espeak] [--system copy]
        [--sentences 5] [--no-nonspeech] [--cache DIR]

With ``--family realisation|delivery|delivery-extra|dose|monotone`` (repeatable) it scores variants
of the copy system instead (``benchmarks.validation.families``): the same prosody realised the
system engine's own way or one cue at a time, the copy system's audio post-processed as pipelines
do (``delivery-extra``: more of it than the issue asked for, reported and never a target), every
effect at a fraction of its size, and every rendition's pitch flattened (``monotone``: reported;
none of its questions may fail as "no speech"); per rotation a table per family (per task, the
naive baseline beside), then one summary table over the rotations and the listener-validity targets
checked on the held-out rotations. Per task, two tests against chance: the exact binomial (the
issue's target; it counts a sentence's mirrored questions as independent) and an exact permutation
test that relabels each sentence's stimuli as one (``stats.within_cluster_permutation_p``).
``--save-cells RUN.json`` keeps a families run's cells; ``--compare-to OLD.json`` then says
whether a method change meets the rule for adopting one (``validation.method_change``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

# the bench (benchmarks.validation) is not installed: it is imported from the repository root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from benchmarks.validation import benchmark, engines, method_change, systems

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rotation", action="append",
                        help="REFERENCE:SYSTEM engines (repeatable; default: every rotation)")
    parser.add_argument("--sentences", type=int, default=5,
                        help="sentences per class to evaluate (1-5; default 5 = all questions)")
    parser.add_argument("--cache", type=Path, default=None, help="where rendered corpora live")
    parser.add_argument("--no-nonspeech", action="store_true", help="skip the non-speech systems")
    parser.add_argument("--system", action="append", choices=systems.ALL_SYSTEMS,
                        help="evaluate only this system (repeatable; default: all)")
    parser.add_argument("--family", action="append", choices=benchmark.FAMILIES,
                        help="score realisation / delivery / delivery-extra / dose variants of "
                             "the copy system instead (repeatable)")
    parser.add_argument("--variant", action="append",
                        help="with --family: only this variant (repeatable)")
    parser.add_argument("--save-cells", type=Path, metavar="RUN.json",
                        help="with --family: write every cell's right answers, the targets the "
                             "run misses and the listener version to this file")
    parser.add_argument("--compare-to", type=Path, metavar="OLD.json",
                        help="with --family: judge this run against a saved one by the rule a "
                             "method change must meet (benchmarks.validation.method_change)")
    args = parser.parse_args()
    if (args.save_cells or args.compare_to) and not args.family:
        parser.error("--save-cells and --compare-to go with --family")
    earlier = None
    if args.compare_to:
        try:
            earlier = method_change.load(args.compare_to)
        except ValueError as e:
            parser.error(f"--compare-to {e}")
    rotations = [tuple(r.split(":")) for r in args.rotation] if args.rotation \
        else list(benchmark.ROTATIONS)
    for r in rotations:
        if len(r) != 2:
            parser.error(f"--rotation {':'.join(r)}: want REFERENCE:SYSTEM")
        try:
            engines.check_rotation(*r)
        except ValueError as e:
            parser.error(f"--rotation: {e}")
    renderings = {e: systems.RENDER_VERSIONS[e] for r in rotations for e in r}
    if earlier is not None:
        conflicts = method_change.rendering_conflicts(
            earlier.renderings, renderings,
            set(renderings) & method_change.voice_sets(earlier.cells))
        if conflicts:
            parser.error(f"--compare-to {args.compare_to}: scored on other renderings "
                         f"({', '.join(conflicts)}); score that method again on these")
    missing = {e for r in rotations for e in r} - set(engines.available())
    if missing:
        parser.error(f"TTS engine(s) not installed: {', '.join(sorted(missing))} "
                     f"({engines.install_hint(missing)})")
    cache = args.cache or systems.default_cache()
    try:
        return _run(args, rotations, renderings, earlier, cache)
    except engines.Clipped as e:  # a renderer's limit, not a fault of this program
        parser.exit(1, f"{parser.prog}: a rendering was refused: {e}\n")


def _run(args, rotations, renderings, earlier, cache) -> int:
    from adept_eval.scoring.listeners.acoustic import listener_version
    from benchmarks.validation import benchmark, method_change

    if args.family:
        by_rotation = {}
        for ref, sys in rotations:
            rows = benchmark.run_families(ref, sys, cache, families=tuple(args.family),
                                          variants=tuple(args.variant or ()) or None,
                                          sentence_ids=args.sentences)
            by_rotation[(ref, sys)] = rows
            print(benchmark.format_families(ref, sys, rows), flush=True)
            print()
        print(benchmark.format_family_summary(by_rotation, benchmark.CALIBRATION_ROTATIONS,
                                              benchmark.RESERVED_ROTATIONS))
        print()
        print(benchmark.format_targets(benchmark.check_targets(
            by_rotation, benchmark.NOT_HELD_OUT)))
        # the run's own misses, its tuning rotations included: a method change may not add any
        run = method_change.cells(by_rotation, listener_version(), benchmark.miss_keys(
            benchmark.check_targets(by_rotation)), renderings)
        if args.save_cells:
            method_change.save(run, args.save_cells)
        if earlier is not None:
            print()
            print(method_change.format_change(method_change.compare(earlier, run)))
        return 0
    for ref, sys in rotations:
        results, timing = benchmark.run_rotation(
            ref, sys, cache, sentence_ids=args.sentences, nonspeech=not args.no_nonspeech,
            only=tuple(args.system) if args.system else None)
        print(benchmark.format_rotation(ref, sys, results, timing), flush=True)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
