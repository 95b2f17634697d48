"""The one home of the tables' small formatting helpers (``adept_eval.results.formatting``)."""

import io
import math

import pytest

from rich.console import Console
from rich.table import Table

from adept_eval.results.formatting import interval, lit, number, p_value, print_whole


def test_a_missing_figure_reads_as_a_dash():
    assert [number(v) for v in (None, math.nan, "N/A", 0.12345)] == ["-", "-", "-", "0.123"]
    assert number(math.nan, nan=None) == "nan" and number(None, nan=None) == "-"
    assert number(0.5, "{:.1%}") == "50.0%"


def test_intervals_and_p_values():
    assert interval(0.1, 0.25) == "0.10-0.25"
    assert interval(-0.1, 0.2, "{:+.2f}", between="..") == "-0.10..+0.20"
    assert interval(None, 0.2) == "--0.20"
    assert [p_value(p) for p in (None, math.nan, 1e-6, 0.0321)] == ["-", "-", "<1e-4", "0.032"]
    assert p_value(5e-4, floor=1e-3, floor_text="<0.001", fmt="{:.3f}") == "<0.001"


def test_text_from_data_is_printed_literally():
    out = io.StringIO()
    Console(file=out, width=40).print(f"system {lit('[bold]x[/bold]')}")
    assert "[bold]x[/bold]" in out.getvalue()


def test_a_table_is_printed_whole_when_not_on_a_terminal():
    out = io.StringIO()
    table = Table()
    table.add_column("name")
    table.add_row("a-very-long-system-name-that-would-be-folded-at-forty-columns")
    print_whole(Console(file=out, width=40), table)
    assert "a-very-long-system-name-that-would-be-folded-at-forty-columns" in out.getvalue()


def _table(systems):
    table = Table(title="accuracy")
    for col in ("system", "subcategory", "n", "acc", "95% CI", "p", "participants in all"):
        table.add_column(col, justify="left" if col in ("system", "subcategory") else "right")
    for name in systems:
        table.add_row(name, "(all)", "96", "0.6042", "0.47-0.7291", "<1e-4", "1234")
    return table


def test_figures_are_never_cut_on_a_narrow_terminal_names_wrap_instead():
    """Rich shrank every column of a table wider than the terminal, ``0.6…`` for 0.6042."""
    names = ["mark-a-very-long-system-name-indeed", "x"]
    for width in (40, 60, 80, 120):
        out = io.StringIO()
        print_whole(Console(file=out, width=width, force_terminal=True, color_system=None),
                    _table(names))
        text = out.getvalue()
        assert "…" not in text
        for figure in ("96", "0.6042", "0.47-0.7291", "<1e-4", "1234"):
            assert sum(figure in line for line in text.splitlines()) == 2, (width, text)
        assert "participants" in text
        lines = [line for line in text.splitlines() if "0.6042" in line]
        if width >= 80:  # the figures fit: names wrap, the table keeps to the terminal
            assert max(len(line) for line in text.splitlines()) <= width, text
            assert width > 80 or "mark-a-very-long-system-name-indeed" not in text  # wrapped
        else:  # figures and 12 columns a name need more: the table is wider, no figure shorter
            assert all(len(line) > width for line in lines)


def test_a_table_redirected_is_printed_at_its_natural_width():
    out = io.StringIO()
    print_whole(Console(file=out, width=80), _table(["mark-a-very-long-system-name-indeed"]))
    assert "mark-a-very-long-system-name-indeed" in out.getvalue()
    assert "0.47-0.7291" in out.getvalue() and "…" not in out.getvalue()


def test_is_figure():
    from adept_eval.results.formatting import is_figure

    assert all(is_figure(t) for t in ("0.48-1.00", "<1e-4", "21/25 = 0.840", "-", "nan", "12",
                                      "+0.10..-0.20", "[bold]0.5[/bold]", "3.2e-05", ""))
    assert not any(is_figure(t) for t in ("(all)", "lower", "near 0", "copy", "e"))


def test_chart_text_draws_dollars_literally(tmp_path):
    from adept_eval.results.formatting import chart_text, fit_title

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2.5, 2))
    ax.bar([0], [1], label=chart_text("p$^^$q"))
    ax.legend()
    fit_title(fig, ax, chart_text("p$^^$q: a title far longer than the figure is wide, "
                                  "clustered by participant and sentence"), 9)
    fig.savefig(tmp_path / "c.png")  # mathtext would raise on $^^$
    box = ax.title.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    plt.close(fig)
