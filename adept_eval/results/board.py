"""A suite on the leaderboard: a row's standing in it, and how a suite's figures are read from a
run, tested for ties and shown.

``Board`` reads, ranks and shows any suite from its ``Suite`` record alone (its headline metric,
counts, direction and scale): a suite listed in ``suites.SUITES`` is on the leaderboard without
an edit anywhere else. A suite that shows more (pooled intervals, graded figures, per-class
columns) subclasses it in ``suite_boards``. The leaderboard itself (``leaderboard``) only
iterates the suites and asks their boards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from adept_eval.identity import answered
from adept_eval.results.formatting import lit, number
from adept_eval.results.runs import Run
from adept_eval.scoring import stats
from adept_eval.suites import Suite

if TYPE_CHECKING:  # matplotlib is an extra: only the chart imports it
    from matplotlib.axes import Axes

#: the columns every suite has on the leaderboard, after its own figures (without its prefix)
STANDING_COLUMNS = ("rank", "rank_range", "tie_method", "corpus", "complete", "unranked")


@dataclass
class Standing:
    """A row's figures in one suite: its columns' values (``figure``), its per-part figures
    (per task, per class, per category), what it is ranked among and whom it ties with."""

    figures: dict[str, object] = field(default_factory=dict)  # column (no suite prefix) -> value
    parts: dict[str, dict] = field(default_factory=dict)  # "tasks" -> task -> value, ...
    key: tuple = ()  # rows are ranked together only with the same key (corpus, scorer)
    tied: set[str] = field(default_factory=set)  # systems of its section it is not
    # significantly different from


@dataclass
class Row:
    """One system's run on the leaderboard: who scored it and its standing in each suite."""

    system: str
    run: str
    date: str | None = None
    people: bool = False  # people answered its listening-test questions (the human listener)
    scorers: dict[str, str | None] = field(default_factory=dict)  # suite -> scorer label
    standings: dict[str, Standing] = field(default_factory=dict)
    source: Run | None = field(default=None, repr=False)  # its run: tie tests read its samples

    def standing(self, suite: str) -> Standing:
        """The row's standing in ``suite``, made empty on first use."""
        return self.standings.setdefault(suite, Standing())

    def figure(self, suite: str, name: str):
        """One of the row's figures in ``suite`` (a column without the suite's prefix), or None."""
        standing = self.standings.get(suite)
        return standing.figures.get(name) if standing is not None else None

    def set_figure(self, suite: str, name: str, value) -> None:
        """Set one of the row's figures in ``suite``."""
        self.standing(suite).figures[name] = value

    def group(self, suite: str) -> tuple:
        """What the row is ranked among in ``suite`` (rows with the same key share a section)."""
        standing = self.standings.get(suite)
        return standing.key if standing is not None else ()


@dataclass(frozen=True)
class Panel:
    """One panel of the leaderboard's chart: its title and rows, drawn by its suite's board."""

    title: str
    members: list[Row]
    board: Board


def is_nan(value) -> bool:
    """Whether ``value`` is a number that is not a number (NaN)."""
    return isinstance(value, float) and math.isnan(value)


def identity_reason(run: Run, suite: str) -> str | None:
    """Why a run's figures in ``suite`` are not ranked from what it recorded, or None.

    Args:
        run: the run.
        suite: the suite's name.

    Returns:
        No identity, mixed scorers or corpora, ``--limit``, or a partial task set; else None.
    """
    recorded = run.suite(suite)
    if recorded is None:
        return "no run identity recorded (made before adept-eval recorded it)"
    if recorded.mixed:
        return "tasks scored by different scorers or corpora"
    if recorded.limited:
        return f"partial: run with --limit ({answered(recorded.limited)})"
    if not recorded.complete:
        return f"partial: {len(recorded.tasks)} of its tasks only"
    return None


def not_tested(why: str = "no logged samples") -> tuple[float, str]:
    """A pair whose difference cannot be tested: NaN, counted as tied, and why."""
    return math.nan, f"not tested ({why}): counted as tied"


class Board:
    """How the leaderboard reads, ranks and shows one suite, from its ``Suite`` record alone:
    the headline metric pooled over the suite's tasks a run has (weighted by its count metric),
    with the count of what was scored and of what failed."""

    def __init__(self, suite: Suite):
        self.suite = suite

    @property
    def name(self) -> str:
        """The suite's name: the prefix of its leaderboard columns."""
        return self.suite.name

    @property
    def columns(self) -> tuple[str, ...]:
        """Every CSV column of the suite (without its prefix), in order."""
        return (self.suite.headline, "n", "failed", "tasks") + STANDING_COLUMNS

    @property
    def defaults(self) -> dict[str, object]:
        """Column -> the value a row without the suite's figures shows (None otherwise)."""
        return {}

    @property
    def sorts(self) -> dict[str, tuple[str, bool]]:
        """``--sort`` choices this suite ranks by: name -> (column, higher is better); the
        first is its default (``Suite.sorts``)."""
        return self.suite.sorts

    def ranked_by(self, sort: str) -> tuple[str, bool]:
        """The column the suite's rows are ranked by under ``--sort sort``, and whether higher
        is better: the sort's own when the suite offers it, else its default."""
        if sort in self.sorts:
            return self.sorts[sort]
        if self.sorts:
            return next(iter(self.sorts.values()))
        return self.suite.headline, self.suite.higher_is_better

    # ------------------------------------------------------------------------ reading a run
    def read(self, run: Run, row: Row) -> None:
        """Fill ``row``'s standing in the suite from ``run``'s results (nothing when the run
        has none of its tasks).

        Args:
            run: the run.
            row: its row, given its standing here.
        """
        results = run.results["results"]
        tasks = [t for t in self.suite.tasks
                 if (results.get(t) or {}).get(self.suite.key(self.suite.headline)) is not None]
        if not tasks:
            return
        parts = [(results[t][self.suite.key(self.suite.headline)],
                  results[t].get(self.suite.key(self.suite.n_metric)) or 0) for t in tasks]
        value, scored = stats.pooled_mean(parts)
        failed = sum(int(results[t].get(self.suite.key(self.suite.failed_metric)) or 0)
                     for t in tasks)
        standing = row.standing(self.name)
        standing.figures.update({self.suite.headline: value, "n": int(scored), "failed": failed,
                                 "tasks": len(tasks)})
        standing.figures["unranked"] = identity_reason(run, self.name)
        self.read_identity(run, standing)

    def read_identity(self, run: Run, standing: Standing) -> None:
        """The corpus, completeness and ranking key a run recorded for the suite."""
        recorded = run.suite(self.name)
        if recorded is not None:
            standing.figures["corpus"] = recorded.corpus_sha256 or None
            standing.figures["complete"] = recorded.complete
            standing.key = recorded.comparable_key()

    def unranked_for(self, row: Row, column: str) -> str | None:
        """Why a row otherwise ranked cannot be ranked by ``column`` (None: it can)."""
        return None

    def extra_columns(self, row: Row) -> dict[str, object]:
        """CSV columns beyond ``columns`` (per task, per class...): full name -> value."""
        return {}

    # ------------------------------------------------------------------------ ties
    def tie_figure(self, column: str) -> str | None:
        """The figure ``compare.tie_test`` tests a pair on when ranked by ``column`` (None:
        the suite has no paired test)."""
        return None

    def unpaired_p(self, a: Row, b: Row, column: str) -> tuple[float, str]:
        """The p-value of a difference between two rows from their recorded figures, and how
        it was made (rows whose runs have no logged samples to pair)."""
        return not_tested()

    # ------------------------------------------------------------------------ showing
    def heading(self, members: list[Row]) -> str:
        """A ranked section's heading: the suite, its scorer and corpus."""
        first = members[0]
        corpus = first.figure(self.name, "corpus")
        return (f"{self.suite.title}, scored by `{first.scorers.get(self.name)}`, corpus "
                f"{corpus[:12] if corpus else '(unrecorded copy)'}")

    def markdown_section(self, members: list[Row]) -> list[str]:
        """A ranked section as Markdown lines (ending with a blank line)."""
        headline = self.suite.headline
        out = [f"## {self.heading(members)}", "",
               f"| rank | rank range | system | {headline} | n | failed |",
               "|---:|---:|---|---:|---:|---:|"]
        out += [f"| {self._fig(r, 'rank')} | {self._fig(r, 'rank_range')} | {r.system} | "
                f"{number(r.figure(self.name, headline))} | {self._fig(r, 'n')} | "
                f"{self._fig(r, 'failed')} |" for r in members]
        return out + [""]

    def markdown_apart(self, apart: list[Row]) -> list[str]:
        """The suite's rows shown apart, as Markdown lines (ending with a blank line)."""
        out = [f"## {self.suite.title} runs not ranked", "",
               f"| system | scorer | {self.suite.headline} | n | why not ranked |",
               "|---|---|---:|---:|---|"]
        out += [f"| {r.system} | {r.scorers.get(self.name)} | "
                f"{number(r.figure(self.name, self.suite.headline))} | {self._fig(r, 'n')} | "
                f"{self._fig(r, 'unranked')} |" for r in apart]
        return out + [""]

    def _fig(self, row: Row, name: str):
        """A figure of ``row`` in this suite, as ``str`` formats it (None shows as None)."""
        return row.figure(self.name, name)

    def ranked_table(self, members: list[Row]) -> Table:
        """A ranked section as a console table."""
        table = Table(title=lit(self.heading(members)), box=box.SIMPLE_HEAD)
        for col in ("rank", "rank range", "system", self.suite.headline, "n", "failed"):
            table.add_column(col, justify="left" if col == "system" else "right",
                             overflow="fold")
        for r in members:
            table.add_row(str(self._fig(r, "rank")), str(self._fig(r, "rank_range") or "-"),
                          lit(r.system), number(r.figure(self.name, self.suite.headline),
                                                nan=None),
                          str(self._fig(r, "n")), str(self._fig(r, "failed")))
        return table

    def apart_table(self, apart: list[Row]) -> Table:
        """The suite's rows shown apart, as a console table."""
        table = Table(title=f"{self.suite.title} runs not ranked", box=box.SIMPLE_HEAD)
        for col in ("system", "scorer", self.suite.headline, "n", "why not ranked"):
            table.add_column(col, overflow="fold")
        for r in apart:
            table.add_row(lit(r.system), lit(r.scorers.get(self.name)),
                          number(r.figure(self.name, self.suite.headline), nan=None),
                          str(self._fig(r, "n")), lit(self._fig(r, "unranked")))
        return table

    def chart_panels(self, ranked: list[list[Row]], apart: list[Row]) -> list[Panel]:
        """The chart's panels for the suite: one per ranked section."""
        column, _ = self.ranked_by("")
        return [Panel(f"{self.suite.title} {column} (scorer {members[0].scorers.get(self.name)})",
                      sorted(members, key=lambda r: r.figure(self.name, column)), self)
                for members in ranked]

    def chart_label(self, row: Row, rank_range: str | None, many: bool) -> str:
        """A bar's label: the system, its n and, in a section of several, its rank range."""
        return (f"{row.system} (n={row.figure(self.name, 'n')})"
                + (f" rank {rank_range}" if rank_range and many else ""))

    def draw(self, ax: Axes, names: list[str], members: list[Row]) -> None:
        """The panel's bars: each row's ranked figure on the suite's scale.

        Args:
            ax: the panel's axes.
            names: the bars' labels (``chart_label``), in ``members``' order.
            members: the panel's rows.
        """
        column, _ = self.ranked_by("")
        ax.barh(names, [r.figure(self.name, column) for r in members], color="#55a868")
        ax.set_xlim(*self.suite.scale)
        ax.set_xlabel(f"{self.suite.title} {column}")
