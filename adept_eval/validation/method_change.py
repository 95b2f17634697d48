"""Whether a change to the acoustic listener's method may be adopted: the rule, as code.

A method change is tried on the tuning and reserved rotations only (``benchmark.NOT_HELD_OUT``)
and adopted only if, over every family cell both runs scored (rotation x variant x task, the
acoustic listener's right answers), **the total is not lower and no cell is more than
``MAX_CELL_DROP`` questions lower**: a change that wins on balance by trading away whole
questions somewhere (a voice, a variant, a class) is not adopted, however large the balance.
Only then are the held-out rotations scored with it (docs/listener-validity.md).

``realistic_validation.py --family ... --save-cells RUN.json`` writes a run's cells with the
listener version that scored them; ``--compare-to OLD.json`` prints this verdict against an
earlier run. Cells only one run scored (another variant list, another rotation) are left out
and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MAX_CELL_DROP = 1
FORMAT = "adept-eval-validation-cells/1"


@dataclass(frozen=True)
class Cell:
    right: int
    questions: int


@dataclass(frozen=True)
class Run:
    listener_version: str
    cells: dict[str, Cell]  # "reference:system|family|variant|task"


@dataclass(frozen=True)
class MethodChange:
    old_version: str
    new_version: str
    cells: int  # scored by both runs, with the same number of questions
    questions: int
    right_old: int
    right_new: int
    lower: tuple[tuple[str, int, int], ...]  # (cell, old, new), most lowered first
    higher: int
    unmatched: int  # cells scored by only one run (or with different question counts)

    @property
    def too_low(self) -> tuple[tuple[str, int, int], ...]:
        return tuple(c for c in self.lower if c[1] - c[2] > MAX_CELL_DROP)

    @property
    def refusals(self) -> tuple[str, ...]:
        """Why the change may not be adopted (none: it may)."""
        if not self.cells:
            return ("no cell scored by both runs",)
        out = []
        if self.right_new < self.right_old:
            out.append("total lower")
        if self.too_low:
            out.append(f"{len(self.too_low)} cell(s) more than {MAX_CELL_DROP} question lower")
        return tuple(out)

    @property
    def adopted(self) -> bool:
        return not self.refusals


def cells(by_rotation, listener_version: str) -> Run:
    """The acoustic listener's right answers per cell of a families run
    (``benchmark.run_families`` results by (reference, system))."""
    out = {}
    for (reference, system), rows in by_rotation.items():
        for row in rows:
            acoustic = row.results[0]
            for task, outcomes in acoustic.by_task().items():
                key = f"{reference}:{system}|{row.family}|{row.variant}|{task}"
                out[key] = Cell(sum(o.correct for o in outcomes), len(outcomes))
    return Run(listener_version, out)


def save(run: Run, path: Path) -> None:
    """JSON, one cell a line (a baseline kept in the repository diffs line by line)."""
    cells = ",\n".join(f"  {json.dumps(k)}: [{c.right}, {c.questions}]"
                        for k, c in sorted(run.cells.items()))
    Path(path).write_text(f'{{"format": {json.dumps(FORMAT)}, '
                          f'"listener_version": {json.dumps(run.listener_version)},\n'
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
        raise ValueError(f"{path}: not a saved validation run (want format {FORMAT!r}, "
                         "written by realistic_validation.py --save-cells)")
    try:
        return Run(str(payload["listener_version"]),
                   {str(k): Cell(int(v[0]), int(v[1])) for k, v in payload["cells"].items()})
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ValueError(f"{path}: a saved validation run with a damaged cell list ({e!r})") \
            from None


def compare(old: Run, new: Run) -> MethodChange:
    common = [k for k in old.cells if k in new.cells
              and old.cells[k].questions == new.cells[k].questions]
    lower = sorted(((k, old.cells[k].right, new.cells[k].right) for k in common
                    if new.cells[k].right < old.cells[k].right),
                   key=lambda c: (c[2] - c[1], c[0]))
    higher = sum(new.cells[k].right > old.cells[k].right for k in common)
    unmatched = len(set(old.cells) | set(new.cells)) - len(common)
    return MethodChange(old.listener_version, new.listener_version, len(common),
                        sum(old.cells[k].questions for k in common),
                        sum(old.cells[k].right for k in common),
                        sum(new.cells[k].right for k in common), tuple(lower), higher,
                        unmatched)


def format_change(change: MethodChange) -> str:
    lines = [f"method change {change.old_version} -> {change.new_version}: "
             f"{change.cells} cells both runs scored ({change.questions} questions; "
             f"{change.unmatched} scored by one run only, left out)",
             f"  right answers {change.right_old} -> {change.right_new} "
             f"({change.right_new - change.right_old:+d}); cells lower {len(change.lower)}, "
             f"higher {change.higher}"]
    for key, was, now in change.too_low:
        lines.append(f"  more than {MAX_CELL_DROP} lower: {key} {was} -> {now}")
    verdict = (f"ADOPT: total not lower, no cell more than {MAX_CELL_DROP} question lower"
               if change.adopted else "DO NOT ADOPT: " + "; ".join(change.refusals))
    lines.append(f"  {verdict}")
    return "\n".join(lines)
