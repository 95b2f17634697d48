"""Tables of lm-eval results for people: n, accuracy, its interval and the test against chance."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table

from . import spec


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
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for col in ("task", "n", "acc", "95% CI", "chance", "p", "orders agree", "failed"):
        table.add_column(col, justify="left" if col == "task" else "right", no_wrap=col == "task")
    for name in spec.TASKS:
        r = results.get(name)
        if not r:
            continue
        get = lambda m: r.get(f"{m},none")  # noqa: E731
        table.add_row(name.removeprefix("adept_"), _f(get("n"), "{:.0f}"), _f(get("acc")),
                      f"{_f(get('acc_ci_low'), '{:.2f}')}-{_f(get('acc_ci_high'), '{:.2f}')}",
                      _f(get("chance"), "{:.2f}"), _p(get("p_chance")),
                      _f(get("order_agreement"), "{:.2f}"), _f(get("failed"), "{:.0f}"))
    return table
