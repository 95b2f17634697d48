"""What ``validation.method_change`` reports about a listener method change: the group that fell
most (the "most fallen" line and ``groups``' order, worst first) and the cells that fell most
(``lower``, "most lowered first", and the "fell most" lines). The expected orders and p-values
are worked out here (scipy's binomial test and Holm's adjustment written out), not read from
the module under test.
"""

from __future__ import annotations

from scipy.stats import binomtest

from benchmarks.validation.method_change import Cell, Run, compare, format_change

ROTATIONS = ("a:b", "c:d")
TASKS = tuple(f"t{i}" for i in range(1, 7))
VARIANTS = ("v1", "v2", "v3", "v4")
KEYS = [f"{r}|fam|{v}|{t}" for r in ROTATIONS for v in VARIANTS for t in TASKS]


def _runs(change: dict[str, int]) -> tuple[Run, Run]:
    old = Run("old", {k: Cell(10, 20) for k in KEYS})
    new = Run("new", {k: Cell(10 + change.get(k, 0), 20) for k in KEYS})
    return old, new


def _fell_p(lower: int, higher: int) -> float:
    return binomtest(lower, lower + higher, 0.5, alternative="greater").pvalue


def _holm(ps: dict[str, float]) -> dict[str, float]:
    order = sorted(ps, key=lambda g: ps[g])
    out, running, m = {}, 0.0, len(ps)
    for rank, g in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[g]))
        out[g] = running
    return out


def test_the_most_fallen_group_is_the_one_that_fell_not_the_first_by_name():
    """Every cell of variant v4 falls a question (12 cells, both rotations, every task); every
    other cell rises one. The group that fell is "variant fam|v4" (12 lower, 0 higher); every
    rotation (6 lower, 18 higher) and task (2 lower, 6 higher) rose on balance, and by name
    "rotation a:b" comes first. The report must name v4 as the most fallen, and refuse."""
    old, new = _runs({k: (-1 if "|v4|" in k else 1) for k in KEYS})
    change = compare(old, new)

    counts = {f"rotation {r}": (6, 18) for r in ROTATIONS}
    counts |= {f"task {t}": (2, 6) for t in TASKS}
    counts |= {f"variant fam|{v}": (12, 0) if v == "v4" else (0, 12) for v in VARIANTS}
    adjusted = _holm({g: _fell_p(*c) for g, c in counts.items()})
    assert adjusted["variant fam|v4"] == min(adjusted.values())  # 12 x 2^-12
    assert abs(adjusted["variant fam|v4"] - 12 / 4096) < 1e-12

    worst = change.groups[0]
    assert (worst.group, worst.lower, worst.higher) == ("variant fam|v4", 12, 0)
    assert abs(worst.p_adjusted - adjusted["variant fam|v4"]) < 1e-12
    # every group's counts and Holm-adjusted p, worst first
    assert {g.group: (g.lower, g.higher) for g in change.groups} == counts
    ps = [g.p_adjusted for g in change.groups]
    assert ps == sorted(ps)
    for g in change.groups:
        assert abs(g.p_adjusted - adjusted[g.group]) < 1e-12, g

    text = format_change(change)
    assert (f"the most fallen: variant fam|v4 12 lower, 0 higher "
            f"(Holm-adjusted p = {12 / 4096:.3g})") in text, text
    assert [g.group for g in change.worse_groups] == ["variant fam|v4"]
    assert "DO NOT ADOPT" in text and "1 group(s) worse" in text


def test_the_most_fallen_group_is_found_among_groups_that_all_fell():
    """Every changed group fell, and by name the rotations come first: task t6 fell in all
    eight of its cells (p = 2^-8 before adjustment), each rotation in its four t6 cells
    (2^-4) and each variant in its two (2^-2); nothing rose. The most fallen is task t6."""
    old, new = _runs({k: -1 for k in KEYS if k.endswith("|t6")})
    change = compare(old, new)
    assert change.groups[0].group == "task t6", change.groups[:3]
    assert "the most fallen: task t6 8 lower, 0 higher" in format_change(change)


def test_the_cells_that_fell_most_come_first():
    """``lower``: (cell, old, new), most lowered first, ties by cell name; the report lists the
    first five as "fell most"."""
    falls = {"a:b|fam|v1|t1": 1, "a:b|fam|v1|t2": 5, "a:b|fam|v1|t3": 3, "a:b|fam|v1|t4": 5,
             "a:b|fam|v1|t5": 2, "a:b|fam|v1|t6": 4, "c:d|fam|v2|t1": 1}
    change_by = {k: -d for k, d in falls.items()}
    change_by["c:d|fam|v3|t3"] = 2  # one cell rose: not among the fallen
    old, new = _runs(change_by)
    change = compare(old, new)

    # by hand: the largest fall first, equal falls by name
    expected = [("a:b|fam|v1|t2", 10, 5), ("a:b|fam|v1|t4", 10, 5), ("a:b|fam|v1|t6", 10, 6),
                ("a:b|fam|v1|t3", 10, 7), ("a:b|fam|v1|t5", 10, 8), ("a:b|fam|v1|t1", 10, 9),
                ("c:d|fam|v2|t1", 10, 9)]
    assert list(change.lower) == expected
    assert change.higher == 1

    lines = [line.strip() for line in format_change(change).splitlines()
             if line.strip().startswith("fell most:")]
    assert lines == [f"fell most: {k} {was} -> {now}" for k, was, now in expected[:5]]


def test_when_nothing_fell_no_group_is_called_the_most_fallen():
    """Every changed cell rose: the report says no group has a lower cell (it named a group
    that had risen as 'the most fallen')."""
    old, new = _runs({"a:b|fam|v1|t1": +2, "c:d|fam|v2|t3": +1})
    text = format_change(compare(old, new))
    assert "none has a cell lower" in text and "the most fallen" not in text
