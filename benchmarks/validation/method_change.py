"""Whether a change to the acoustic listener's method may be adopted: the rule, as code.

A method change is tried on the tuning and reserved rotations only (``benchmark.NOT_HELD_OUT``),
every family, and judged on the cells both runs scored (rotation x variant x task: the acoustic
listener's right answers). Rule 3 (stop 39) adopts it only if all three hold:

- **the total is not lower**;
- **no harm beyond noise**: the cells are not more often lower than higher beyond chance (exact
  one-sided sign test over the changed cells, p >= ``ALPHA``), and no rotation, task or family
  variant is: the same test over its changed cells, Holm-adjusted over every group with a
  changed cell, finds none below ``ALPHA`` - a change that wins on balance by trading away a
  voice, a class or a variant is not adopted;
- **no issue target newly missed**: the issue's required targets (``benchmark.check_targets``)
  checked on the tuning rotations themselves; a miss the candidate has that the earlier run does
  not (the same target, rotation, variant and task, class or measure) refuses it.

Cells are not independent: the cells of one rotation and task share their sentences across the
~50 variants (one question that turns in every variant is up to ~50 cells), and a cell's own
questions share a voice pairing and five sentences. Counting cells as units makes a *refusal*
easier, never an adoption, so harm is tested on cells; a *gain* may not be claimed from them, and
none is asked: a change is adopted when it does no measurable harm and serves the purpose its
pre-registration names. What it gained is read by (rotation, task) cluster - a cluster's net
change over the variants - which ``compare`` counts and prints beside the verdict. (Rule 2, the
same stop, asked for a gain beyond noise by a sign test over cells: v15 rose in 30 cells and fell
in 8, but in 7 clusters and fell in 7. Rule 1, stops 32-38, refused any cell more than one
question lower: noise, over ~3,400 cells.) Only an adopted change's held-out rotations are then
scored (docs/listener-validity.md).

``realistic_validation.py --family ... --save-cells RUN.json`` writes a run's cells and target
misses with the listener version that scored them and the rendering version of each voice set
(``systems.RENDER_VERSIONS``: another rendering is another benchmark, and runs of two renderings
are not compared); ``--compare-to OLD.json`` prints this verdict
against an earlier run. Cells only one run scored (another variant list, another rotation) are
left out and counted.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from adept_eval.scoring.stats import binomial_p, holm

ALPHA = 0.05
FORMAT = "adept-eval-validation-cells/3"


@dataclass(frozen=True)
class Cell:
    right: int
    questions: int


@dataclass(frozen=True)
class Run:
    listener_version: str
    cells: dict[str, Cell]  # "reference:system|family|variant|task"
    # the required targets this run misses on its own rotations (``benchmark.miss_keys``)
    target_misses: frozenset[str] = field(default_factory=frozenset)
    # voice set -> the rendering version it was scored on (``systems.RENDER_VERSIONS``): cells
    # of two renderings are two benchmarks, and are not compared
    renderings: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupTest:
    group: str  # "rotation a:b", "task t", "variant family|variant"
    lower: int  # cells that fell
    higher: int  # cells that rose
    p_adjusted: float  # one-sided sign test that it fell, Holm-adjusted over the groups


@dataclass(frozen=True)
class MethodChange:
    old_version: str
    new_version: str
    cells: int  # scored by both runs, with the same number of questions
    questions: int
    right_old: int
    right_new: int
    lower: tuple[tuple[str, int, int], ...]  # (cell, old, new), most lowered first
    higher: int  # cells
    unmatched: int  # cells scored by only one run (or with different question counts)
    p_worse: float  # one-sided sign test over the changed cells that more fell than rose
    # (rotation, task) clusters whose net change over the variants rose / fell: what it gained,
    # reported beside the verdict, not part of it
    clusters_higher: int
    clusters_lower: int
    groups: tuple[GroupTest, ...]  # every group with a changed cell, worst first
    new_misses: tuple[str, ...]  # required targets the new run misses and the old did not

    @property
    def worse_groups(self) -> tuple[GroupTest, ...]:
        return tuple(g for g in self.groups if g.p_adjusted < ALPHA)

    @property
    def refusals(self) -> tuple[str, ...]:
        """Why the change may not be adopted (none: it may)."""
        if not self.cells:
            return ("no cell scored by both runs",)
        out = []
        if self.right_new < self.right_old:
            out.append("total lower")
        if self.p_worse < ALPHA:
            out.append(f"worse beyond noise ({len(self.lower)} cells lower, {self.higher} "
                       f"higher: sign test p = {self.p_worse:.3g})")
        if self.worse_groups:
            out.append(f"{len(self.worse_groups)} group(s) worse")
        if self.new_misses:
            out.append(f"{len(self.new_misses)} target(s) newly missed")
        return tuple(out)

    @property
    def adopted(self) -> bool:
        return not self.refusals


def cells(by_rotation, listener_version: str, target_misses=frozenset(),
          renderings: dict[str, str] | None = None) -> Run:
    """The acoustic listener's right answers per cell of a families run
    (``benchmark.run_families`` results by (reference, system)), with the run's target misses
    (``benchmark.miss_keys`` of ``check_targets`` over all its rotations) and the rendering
    versions of its voice sets."""
    out = {}
    for (reference, system), rows in by_rotation.items():
        for row in rows:
            acoustic = row.results[0]
            for task, outcomes in acoustic.by_task().items():
                key = f"{reference}:{system}|{row.family}|{row.variant}|{task}"
                out[key] = Cell(sum(o.correct for o in outcomes), len(outcomes))
    return Run(listener_version, out, frozenset(target_misses), dict(renderings or {}))


def rendering_conflicts(old: dict[str, str], new: dict[str, str], used=()) -> list[str]:
    """The voice sets both runs record at different rendering versions ("name v2 -> v3"), and
    those of ``used`` (the voice sets the compared cells were scored on) that one run records
    and the other does not ("name unrecorded -> v3"): a run saved without its renderings is not
    taken for one on the other run's."""
    def version(record: dict[str, str], e: str) -> str:
        return f"v{record[e]}" if e in record else "unrecorded"

    names = (set(old) & set(new)) | {e for e in used if (e in old) != (e in new)}
    return [f"{e} {version(old, e)} -> {version(new, e)}" for e in sorted(names)
            if old.get(e) != new.get(e)]


def voice_sets(keys) -> set[str]:
    """The voice sets of cells keyed "reference:system|family|variant|task"."""
    return {e for k in keys for e in k.split("|", 1)[0].split(":")}


def save(run: Run, path: Path) -> None:
    """JSON, one cell a line (a baseline kept in the repository diffs line by line)."""
    cells = ",\n".join(f"  {json.dumps(k)}: [{c.right}, {c.questions}]"
                        for k, c in sorted(run.cells.items()))
    misses = ",\n".join(f"  {json.dumps(m)}" for m in sorted(run.target_misses))
    Path(path).write_text(f'{{"format": {json.dumps(FORMAT)}, '
                          f'"listener_version": {json.dumps(run.listener_version)},\n'
                          f' "renderings": {json.dumps(run.renderings, sort_keys=True)},\n'
                          f' "target_misses": [\n{misses}\n ],\n'
                          f' "cells": {{\n{cells}\n }}}}\n')


def load(path: Path) -> Run:
    """A run saved by ``save``; a file that is not one is named with what is wrong."""
    try:
        payload = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a saved validation run ({e})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else None
        older = {FORMAT.rsplit("/", 1)[0] + "/1": "target misses",
                 FORMAT.rsplit("/", 1)[0] + "/2": "the rendering versions"}
        if found in older:
            raise ValueError(f"{path}: a run saved in format {found!r}, before {older[found]} "
                             f"were kept (want {FORMAT!r}): score it again with --save-cells")
        raise ValueError(f"{path}: not a saved validation run (want format {FORMAT!r}, "
                         "written by realistic_validation.py --save-cells)")
    try:
        return Run(str(payload["listener_version"]),
                   {str(k): Cell(int(v[0]), int(v[1])) for k, v in payload["cells"].items()},
                   frozenset(str(m) for m in payload["target_misses"]),
                   {str(k): str(v) for k, v in payload["renderings"].items()})
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ValueError(f"{path}: a saved validation run with a damaged cell list ({e!r})") \
            from None


def _fell_p(lower: int, higher: int) -> float:
    """One-sided exact sign test that units fell more often than they rose."""
    return binomial_p(lower, lower + higher, 0.5, alternative="greater")


def compare(old: Run, new: Run) -> MethodChange:
    """The rule's verdict on ``new`` against ``old``; runs scored on other renderings of a voice
    set are refused (ValueError): their cells measure another benchmark, not a method."""
    conflicts = rendering_conflicts(old.renderings, new.renderings,
                                    voice_sets(k for k in old.cells if k in new.cells))
    if conflicts:
        raise ValueError("the runs were scored on different renderings ("
                         + ", ".join(conflicts) + "): score the earlier method again")
    common = [k for k in old.cells if k in new.cells
              and old.cells[k].questions == new.cells[k].questions]
    lower = sorted(((k, old.cells[k].right, new.cells[k].right) for k in common
                    if new.cells[k].right < old.cells[k].right),
                   key=lambda c: (c[2] - c[1], c[0]))
    raised = sum(new.cells[k].right > old.cells[k].right for k in common)
    unmatched = len(set(old.cells) | set(new.cells)) - len(common)
    net = defaultdict(int)  # (rotation, task) -> net change over the variants
    counts = defaultdict(lambda: [0, 0])  # group -> [cells lower, cells higher]
    for k in common:
        rotation, family, variant, task = k.split("|")
        change = new.cells[k].right - old.cells[k].right
        net[rotation, task] += change
        if change:
            for g in (f"rotation {rotation}", f"task {task}", f"variant {family}|{variant}"):
                counts[g][change > 0] += 1
    names = sorted(counts)
    adjusted = holm([_fell_p(*counts[g]) for g in names]) if names else []
    groups = sorted((GroupTest(g, *counts[g], p) for g, p in zip(names, adjusted)),
                    key=lambda t: (t.p_adjusted, _fell_p(t.lower, t.higher),
                                   t.higher - t.lower, t.group))
    up, down = sum(v > 0 for v in net.values()), sum(v < 0 for v in net.values())
    return MethodChange(old.listener_version, new.listener_version, len(common),
                        sum(old.cells[k].questions for k in common),
                        sum(old.cells[k].right for k in common),
                        sum(new.cells[k].right for k in common), tuple(lower), raised,
                        unmatched, _fell_p(len(lower), raised) if lower or raised else 1.0,
                        up, down, tuple(groups),
                        tuple(sorted(new.target_misses - old.target_misses)))


def format_change(change: MethodChange) -> str:
    lines = [f"method change {change.old_version} -> {change.new_version}: "
             f"{change.cells} cells both runs scored ({change.questions} questions; "
             f"{change.unmatched} scored by one run only, left out)",
             f"  right answers {change.right_old} -> {change.right_new} "
             f"({change.right_new - change.right_old:+d}); cells lower {len(change.lower)}, "
             f"higher {change.higher} (sign test that more fell: p = {change.p_worse:.3g})",
             f"  (rotation, task) clusters, net over the variants: {change.clusters_higher} "
             f"higher, {change.clusters_lower} lower (what it gained, by independent units; "
             f"not part of the rule)"]
    if change.groups:
        worst = change.groups[0]
        fallen = (f"the most fallen: {worst.group} {worst.lower} lower, {worst.higher} higher "
                  f"(Holm-adjusted p = {worst.p_adjusted:.3g})" if worst.lower
                  else "none has a cell lower")
        lines.append(f"  groups (rotation, task, variant) with a changed cell: "
                     f"{len(change.groups)}; {fallen}")
    for g in change.worse_groups:
        lines.append(f"  worse: {g.group}: {g.lower} cells lower, {g.higher} higher "
                     f"(Holm-adjusted p = {g.p_adjusted:.3g})")
    for key, was, now in change.lower[:5]:
        lines.append(f"  fell most: {key} {was} -> {now}")
    for miss in change.new_misses:
        lines.append(f"  newly missed: {miss}")
    verdict = ("ADOPT: total not lower, no harm beyond noise, no group worse, no target newly "
               "missed" if change.adopted else "DO NOT ADOPT: " + "; ".join(change.refusals))
    lines.append(f"  {verdict}")
    return "\n".join(lines)
