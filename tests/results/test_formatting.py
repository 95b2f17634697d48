"""The one home of the tables' small formatting helpers (``adept_eval.results.formatting``)."""

import io
import math

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
