"""Score listeners on cross-engine corpora: per task accuracy, chance and exact p-values.

A *rotation* is (reference engine, system engine), never the same engine: the reference corpus
plays ADEPT, the other engine's renderings play the systems. ``run_rotation`` evaluates every
system (adept-natural, copy, partial, flat, swap, and four non-speech signals) with the acoustic
listener and the naive baseline, and returns the rows ``format_rotation`` prints.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import spec
from ..corpus import Corpus, WAV_DIR
from ..listeners import Listener
from ..questions import all_questions
from ..stats import below_chance_p, binomial_p
from .systems import NONSPEECH, SWAPS, SYSTEMS, nonspeech_systems, render_engine, system_folder


@dataclass(frozen=True)
class Outcome:
    task: str
    target: str
    correct: bool
    chance: float
    status: str


def evaluate(listener: Listener, corpus: Corpus, folder: Path, sentence_ids: int = 5
             ) -> list[Outcome]:
    out = []
    for task, questions in all_questions(corpus).items():
        t = spec.task(task)
        for q in questions:
            if int(q.sentence_id) - t.cls.id_block >= sentence_ids:
                continue
            a = listener.answer(q, {s: str(folder / f"{s}.wav") for s in q.stimuli})
            out.append(Outcome(task, q.target, a.status == "ok" and bool(a.correct(q)),
                               t.chance, a.status))
    return out


def p_greater(k: int, n: int, p: float) -> float:
    return binomial_p(k, n, p, alternative="greater") if n else 1.0


def p_two_sided(k: int, n: int, p: float) -> float:
    return binomial_p(k, n, p) if n else 1.0


def p_below(outcomes: list[Outcome]) -> float:
    """Exact lower-tail p of the correct count, each question with its own chance level."""
    return below_chance_p(sum(o.correct for o in outcomes), [o.chance for o in outcomes])


@dataclass(frozen=True)
class SystemResult:
    system: str
    listener: str
    outcomes: tuple[Outcome, ...]
    refused: str = ""  # non-speech: "refused/checked" by adept-eval check
    seconds: float = 0.0

    def by_task(self) -> dict[str, list[Outcome]]:
        out = defaultdict(list)
        for o in self.outcomes:
            out[o.task].append(o)
        return out

    @property
    def pooled(self) -> float:
        return float(np.mean([o.correct for o in self.outcomes]))

    def swapped(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.target in SWAPS]


def _check_refusals(corpus: Corpus, folder: Path) -> str:
    from ..manifest import check_folder

    check = check_folder(corpus, folder, progress=False)
    refused = sum(1 for r in check.samples.values()
                  if any(p.kind == "no_speech" and str(r.path) in p.message for p in r.problems))
    silent = sum(1 for r in check.samples.values()
                 if not r.ok and not any(p.kind == "no_speech" for p in r.problems))
    other = f", {silent} other errors" if silent else ""
    return f"{refused}/{len(check.samples)} no-speech{other}"


def run_rotation(reference: str, system: str, cache: Path, *, listeners: dict[str, Listener]
                 | None = None, sentence_ids: int = 5, progress: bool = True,
                 nonspeech: bool = True, only: tuple[str, ...] | None = None
                 ) -> tuple[list[SystemResult], dict]:
    """Evaluate every system of one rotation (or ``only`` those named); see the module doc."""
    from ..listeners import get_listener
    from .baseline import GlobalBaseline

    if reference == system:
        raise ValueError("references and systems must come from different engines")
    ref_dir = render_engine(reference, cache, progress=progress)
    sys_dir = render_engine(system, cache, progress=progress)
    corpus = Corpus(ref_dir / "ADEPT")
    features = cache / "features"
    listeners = listeners or {
        "acoustic": get_listener("acoustic", corpus=corpus, cache_dir=str(features)),
        "baseline": GlobalBaseline(corpus=corpus, cache_dir=str(features)),
    }
    folders = {"adept-natural": ref_dir / "ADEPT" / WAV_DIR}
    folders.update({s: system_folder(sys_dir, s) for s in SYSTEMS})
    ns = nonspeech_systems(ref_dir) if nonspeech else {}
    results = []
    timing = {}
    for name, folder in list(folders.items()) + list(ns.items()):
        if only and name not in only:
            continue
        refused = _check_refusals(corpus, folder) if name in NONSPEECH else ""
        for lname, listener in listeners.items():
            t = time.perf_counter()
            outcomes = evaluate(listener, corpus, folder, sentence_ids)
            results.append(SystemResult(name, lname, tuple(outcomes), refused,
                                        time.perf_counter() - t))
    # real-time factor of a full evaluation: the copy system's features from scratch
    import soundfile as sf

    from ..listeners.acoustic import AcousticListener
    from ..prosody import FeatureStore

    copy = folders["copy"]
    audio_s = sum(sf.info(str(p)).duration for p in copy.rglob("*.wav"))
    fresh = AcousticListener(corpus=corpus, cache_dir=str(features))
    fresh.store = FeatureStore(cache / "features-rtf")
    for p in copy.rglob("*.wav"):  # only the natural features stay cached (the normal case)
        (cache / "features-rtf" / f"{FeatureStore.key(p)}.npz").unlink(missing_ok=True)
    for nat in (ref_dir / "ADEPT" / WAV_DIR).rglob("*.wav"):
        fresh.store.get(nat)
    fresh._memo.clear()
    t, cpu = time.perf_counter(), time.process_time()
    evaluate(fresh, corpus, copy, sentence_ids)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    timing.update(audio_s=audio_s, wall_s=wall, cpu_s=cpu, rtf=audio_s / wall if wall else 0.0,
                  rtf_cpu=audio_s / cpu if cpu else 0.0)
    return results, timing


def format_rotation(reference: str, system: str, results: list[SystemResult], timing: dict
                    ) -> str:
    lines = [f"=== rotation: references by {reference}, systems by {system} ==="]
    tasks = list(spec.TASKS)
    short = {t: t.removeprefix("adept_").replace("interpersonal_attitude", "interpers")
             .replace("propositional_attitude", "proposit").replace("topical_emphasis", "topical")
             .replace("syntactic_phrasing", "syntactic").replace("marked_tonicity", "tonicity")
             for t in tasks}
    for r in results:
        by = r.by_task()
        head = f"--- {r.system} / {r.listener}: pooled {r.pooled:.3f} (n={len(r.outcomes)})"
        failed = sum(o.status != "ok" for o in r.outcomes)
        if failed:
            head += f", {failed} failed (counted wrong)"
        if r.refused:
            head += f"; adept-eval check: {r.refused}"
        lines.append(head)
        lines.append(f"    {'task':24} {'acc':>5} {'n':>3} {'chance':>6} {'p>chance':>9} "
                     f"{'p(2-sided)':>10}")
        for t in tasks:
            os_ = by.get(t, [])
            if not os_:
                continue
            k, n, c = sum(o.correct for o in os_), len(os_), os_[0].chance
            lines.append(f"    {short[t]:24} {k / n:5.2f} {n:3d} {c:6.3f} "
                         f"{p_greater(k, n, c):9.4f} {p_two_sided(k, n, c):10.4f}")
        if r.system in ("swap", "copy"):
            sw = r.swapped()
            if sw:
                k = sum(o.correct for o in sw)
                lines.append(f"    swapped subcategories (anger, sadness, beginning, end, "
                             f"interpretations): {k}/{len(sw)} = {k / len(sw):.2f}, chance "
                             f"{np.mean([o.chance for o in sw]):.2f}, p(below chance) "
                             f"{p_below(sw):.4g}")
    lines.append(f"full evaluation of the copy system (natural features cached): "
                 f"{timing['audio_s']:.0f} s of system audio in {timing['wall_s']:.1f} s wall "
                 f"= {timing['rtf']:.0f}x real time; {timing['cpu_s']:.1f} s CPU "
                 f"= {timing['rtf_cpu']:.0f}x real time on one core")
    return "\n".join(lines)


# the first is the rotation the listener was tuned on; the others are held out
ROTATIONS = (("festival", "espeak"), ("espeak", "festival"), ("flite", "espeak"),
             ("espeak", "flite"), ("flite", "festival"), ("festival", "flite"))
