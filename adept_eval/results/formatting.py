"""How figures and names are written in adept-eval's tables: the one home of the small helpers.

Reports, comparisons, the leaderboard, the listening test's report and the ``adept-eval``
commands all write a missing figure as ``-``, a p-value with a floor, an interval as
``low-high``, and print names from data literally; they do it through these functions so a
figure reads the same in every table.
"""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

MISSING = "-"


def missing(value) -> bool:
    """Whether a figure is absent: None, NaN, or lm-eval's ``"N/A"`` (a stderr not computed).

    Args:
        value: a figure as read from results (a number, None or text).

    Returns:
        True when the figure is to be shown as ``-``.
    """
    return value is None or value == "N/A" or (isinstance(value, float) and math.isnan(value))


def number(value, fmt: str = "{:.3f}", nan: str | None = MISSING) -> str:
    """A figure in ``fmt``, or ``-`` when it is missing (``missing``).

    Args:
        value: the figure.
        fmt: a ``str.format`` pattern with one field, e.g. ``"{:.2f}"`` or ``"{:+.3f}"``.
        nan: what a NaN reads as; None writes it as ``fmt`` does (``nan``), as the
            leaderboard's console tables show a score that is not a number.

    Returns:
        The text for a table cell.
    """
    if value is None:
        return MISSING
    if nan is not None and missing(value):
        return nan
    return fmt.format(value)


def interval(low, high, fmt: str = "{:.2f}", between: str = "-") -> str:
    """An interval as ``low-high`` (``between`` joins the ends); each end ``-`` when missing.

    Args:
        low: the lower end.
        high: the upper end.
        fmt: the pattern of each end.
        between: the text between the ends (``".."`` where the ends carry signs).

    Returns:
        The text for a table cell.
    """
    return f"{number(low, fmt)}{between}{number(high, fmt)}"


def p_value(p, floor: float = 1e-4, floor_text: str = "<1e-4", fmt: str = "{:.2g}") -> str:
    """A p-value: ``-`` when missing, ``floor_text`` below ``floor``, else in ``fmt``.

    Args:
        p: the p-value.
        floor: the smallest value written as a number.
        floor_text: what a smaller one reads as.
        fmt: the pattern of the others.

    Returns:
        The text for a table cell.
    """
    if missing(p):
        return MISSING
    return floor_text if p < floor else fmt.format(p)


def lit(value) -> str:
    """Text from data (a path, a system or task name, a scorer's label) to print as written.

    Rich would otherwise take ``[plot]`` or ``[a3f9...]`` in it for markup and drop it.

    Args:
        value: anything; it is printed as ``str(value)``.

    Returns:
        The text with Rich's markup escaped.
    """
    return escape(str(value))


def print_whole(console: Console, table: Table) -> None:
    """Print a table whole: at its natural width when the output is not a terminal (a file,
    a pipe), so no cell is truncated or folded to fit an imagined 80 columns.

    Args:
        console: where to print (its file and, on a terminal, its width).
        table: the table.
    """
    if console.is_terminal:
        console.print(table)
        return
    natural = console.measure(table, options=console.options.update(max_width=10_000))
    Console(file=console.file, width=max(console.width, natural.maximum),
            soft_wrap=True).print(table)
