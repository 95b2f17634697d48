"""Tables of lm-eval results for people: n, accuracy, its interval and the test against chance."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table

from . import spec, stats

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value):
    """A cell a spreadsheet will not run: text starting with = + - @ tab or CR gets a leading
    apostrophe (OWASP's CSV-injection advice); numbers and other text pass unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _f(x, fmt="{:.3f}") -> str:
    if x is None or x == "N/A" or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return fmt.format(x)


def _p(p) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "-"
    return "<1e-4" if p < 1e-4 else f"{p:.2g}"


def adept_table(results: dict, title: str = "ADEPT") -> Table:
    """One row per ADEPT task found in an lm-eval ``results`` dict."""
    present = [t for t in spec.TASKS if results.get(t)]
    agree = any((results[t].get("order_agreement,none") or 1.0) < 1.0 for t in present)
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    cols = ["task", "n", "acc", "95% CI", "chance", "p", "fail"] + (["agree"] if agree else [])
    for col in cols:
        table.add_column(col, justify="left" if col == "task" else "right", no_wrap=True,
                         min_width=len(col))
    for name in present:
        r = results[name]
        get = lambda m: r.get(f"{m},none")  # noqa: E731
        row = [name.removeprefix("adept_"), _f(get("n"), "{:.0f}"), _f(get("acc")),
               f"{_f(get('acc_ci_low'), '{:.2f}')}-{_f(get('acc_ci_high'), '{:.2f}')}",
               _f(get("chance"), "{:.2f}"), _p(get("p_chance")), _f(get("failed"), "{:.0f}")]
        if agree:
            row.append(_f(get("order_agreement"), "{:.2f}"))
        table.add_row(*row)
    return table


def pooled(results: dict, tasks: list[str]) -> tuple[int, int]:
    """(correct, n) over the given tasks' responses, from their accuracies and n."""
    return stats.pooled_counts(((results.get(t) or {}).get("acc,none"),
                                (results.get(t) or {}).get("n,none")) for t in tasks)


def group_table(results: dict) -> Table | None:
    """ADEPT groups pooled over their tasks' responses: n and an exact 95% interval, which
    lm-eval's own group rows (a weighted mean) do not carry."""
    from .suites import ADEPT

    groups = ADEPT.groups
    table = Table(title="ADEPT groups (pooled over all their questions)", box=box.SIMPLE_HEAD)
    for col in ("group", "tasks", "n", "acc", "95% CI"):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=col == "group")
    rows = 0
    for name, tasks in groups.items():
        present = [t for t in tasks if t in results]
        k, n = pooled(results, present)
        if n == 0 or (len(present) < 2):
            continue
        low, high = stats.clopper_pearson(k, n)
        table.add_row(name, str(len(present)), str(n), f"{k / n:.3f}", f"{low:.2f}-{high:.2f}")
        rows += 1
    return table if rows else None
