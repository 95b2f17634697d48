"""How figures and names are written in adept-eval's tables: the one home of the small helpers.

Reports, comparisons, the leaderboard, the listening test's report and the ``adept-eval``
commands all write a missing figure as ``-``, a p-value with a floor, an interval as
``low-high``, and print names from data literally; they do it through these functions so a
figure reads the same in every table.
"""

from __future__ import annotations

import math
import re

from rich.console import Console
from rich.measure import Measurement
from rich.markup import escape
from rich.table import Table
from rich.text import Text

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
    """An interval as ``low-high`` (``between`` joins the ends); an end ``-`` when missing, and
    ``-`` alone when both are.

    Args:
        low: the lower end.
        high: the upper end.
        fmt: the pattern of each end.
        between: the text between the ends (``".."`` where the ends carry signs).

    Returns:
        The text for a table cell.
    """
    if missing(low) and missing(high):  # no interval at all: one dash, never "nan-nan"
        return MISSING
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


# a figure's text: digits, signs, intervals, ratios, percentages, exponents, "-", nan, inf
_FIGURE = re.compile(r"(?:[-+<>=~.,%/()\s0-9\u00b1\u2212\u2013]|e[-+]?\d|nan|inf)*", re.IGNORECASE)


def _plain(renderable) -> str | None:
    """A cell's text without markup, or None for a renderable that is not text."""
    if isinstance(renderable, Text):
        return renderable.plain
    if isinstance(renderable, str):
        return Text.from_markup(renderable).plain
    return None


def is_figure(renderable) -> bool:
    """Whether a table cell holds a figure (a number, interval, ratio, p-value or ``-``).

    Args:
        renderable: the cell as added to the table.

    Returns:
        True for text made only of numbers and their signs; False for names and for
        renderables that are not text.
    """
    text = _plain(renderable)
    return text is not None and _FIGURE.fullmatch(text.strip()) is not None


def keep_figures_whole(console: Console, table: Table) -> None:
    """Make the table's figure columns unbreakable and its other columns wrap.

    A column whose every cell is a figure (``is_figure``) is never narrower than its widest
    cell and never wraps, so Rich shrinks a table that is too wide for its console by wrapping
    names, never by cutting a number; its header still wraps between words. Every other column
    folds its text rather than ending it with an ellipsis.

    Args:
        console: the console the table is measured for.
        table: the table, changed in place.
    """
    options = console.options.update(max_width=10_000)
    for column in table.columns:
        cells = list(column.cells)
        if cells and all(is_figure(c) for c in cells):
            widest = max(Measurement.get(console, options, c).maximum for c in cells)
            header = column.header
            if isinstance(header, str):
                header = Text.from_markup(header)
            if isinstance(header, Text):
                header = header.copy()
                header.no_wrap, header.overflow = False, "fold"
                column.header = header
                widest = max([widest] + [len(w) for w in header.plain.split()])
            column.no_wrap = True
            column.min_width = column.max_width = max(widest, column.min_width or 0)
        else:
            column.no_wrap = False
            column.overflow = "fold"


NARROWEST_NAME = 12  # columns a wrapping column of names keeps before the table outgrows a terminal


def _least_width(console: Console, table: Table, floor: int | None) -> int:
    """The narrowest the table can be with its figures whole: every figure column at its
    widest cell, every other column at its longest word, or at ``floor`` when that is less."""
    texts = [c for c in table.columns if not c.no_wrap]
    kept = [c.max_width for c in texts]
    if floor is not None:
        for column in texts:
            column.max_width = min(column.max_width or floor, floor)
    try:
        return console.measure(table, options=console.options.update(max_width=10_000)).minimum
    finally:
        for column, max_width in zip(texts, kept):
            column.max_width = max_width


def _fit(console: Console, table: Table) -> int:
    """Fit a table to a terminal with its figures whole, changing its padding when it must.

    Tried in turn until one fits the terminal's width: names wrapping between words; the
    same with no padding beside the columns' dividers; names also folded inside words
    (down to ``NARROWEST_NAME``); both. When none fits, the last is printed wider than the
    terminal, which wraps its lines: a figure is never cut.

    Returns:
        The width to print the table at.
    """
    padding = table.padding
    compact = (padding[0], 0, padding[2], 0)
    width = console.width
    for pad, floor in ((padding, None), (compact, None), (padding, NARROWEST_NAME),
                       (compact, NARROWEST_NAME)):
        table.padding = pad
        least = _least_width(console, table, floor)
        if least <= width:
            return width
    return least


def print_whole(console: Console, table: Table) -> None:
    """Print a table with every figure whole: on a terminal at its width, names wrapping
    (``keep_figures_whole``, ``_fit``), and wider than the terminal only when its figures
    alone need more; elsewhere (a file, a pipe) at its natural width, so no cell is folded to
    fit an imagined 80 columns.

    Args:
        console: where to print (its file and, on a terminal, its width).
        table: the table; its columns and padding are changed to fit.
    """
    keep_figures_whole(console, table)
    if console.is_terminal:
        width = _fit(console, table)
    else:
        natural = console.measure(table, options=console.options.update(max_width=10_000))
        width = max(console.width, natural.maximum)
    if width == console.width:
        console.print(table)
        return
    Console(file=console.file, width=width, soft_wrap=True, force_terminal=console.is_terminal,
            color_system=console.color_system, no_color=console.no_color).print(table)


def chart_text(value) -> str:
    """Text from data to draw on a matplotlib chart as written.

    Matplotlib reads text between two ``$`` as mathtext, which draws ``p$x$q`` in italics
    and fails on ``p$^^$q``; each ``$`` is escaped.

    Args:
        value: anything; it is drawn as ``str(value)``.

    Returns:
        The text with its dollar signs escaped.
    """
    return str(value).replace("$", r"\$")


def fit_title(fig, ax, text: str, fontsize: float) -> None:
    """Set a chart's title broken into lines between words so that it fits inside the figure,
    and lay the figure out (``tight_layout``): a long title is never clipped at its edges.

    Args:
        fig: the matplotlib figure.
        ax: its axes, over which the title is centred.
        text: the title, already made safe with ``chart_text`` where it holds data.
        fontsize: the title's font size in points.
    """
    import textwrap

    # start from the figure's width in characters (a glyph ~0.6 of the font size wide)
    per_line = max(int(fig.get_figwidth() * 72 / (0.6 * fontsize)), 10)
    while True:
        lines = [wrapped for line in text.split("\n")  # the title's own breaks are kept
                 for wrapped in textwrap.wrap(line, per_line, break_long_words=False,
                                              break_on_hyphens=False) or [""]]
        title = ax.set_title("\n".join(lines), fontsize=fontsize)
        fig.tight_layout()
        box = title.get_window_extent(fig.canvas.get_renderer())
        if (box.x0 >= 0 and box.x1 <= fig.bbox.width) or per_line <= 10:
            return
        per_line = max(int(per_line * 0.85), 10)


def nan_as_null(x):
    """A result made ready for JSON, which has no NaN: every undefined figure (NaN) inside dicts
    and lists becomes None (null).

    Args:
        x: A figure, or a dict or list of them, nested.

    Returns:
        The same structure, NaN replaced by None.
    """
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: nan_as_null(v) for k, v in x.items()}
    if isinstance(x, list):
        return [nan_as_null(v) for v in x]
    return x
