"""The leaderboard's boards of ADEPT and VStyle: what each shows beyond ``board.Board``.

ADEPT pools recognition accuracy over the run's questions with a sentence-clustered interval
(from its logged samples, else the bound of the largest design effect), adds the graded prosody
distance, per-class and per-task accuracy, and tests ties unpaired when samples are missing.
VStyle ranks the overall judge score of a language's four categories (VStyle's weighting) and
shows the failure rate of the judgements. ``board_of`` gives each suite its board; any other
suite gets the generic ``Board``.
"""

from __future__ import annotations

import math

from rich import box
from rich.table import Table

from adept_eval.corpora import spec, vstyle
from adept_eval.results.board import Board, Panel, Row, Standing, identity_reason, is_nan, \
    not_tested
from adept_eval.results.formatting import lit, number
from adept_eval.results.report import pooled_recognition, sentence_design_effect
from adept_eval.results.runs import Run, samples_mismatch
from adept_eval.scoring import stats
from adept_eval.suites import ADEPT, SUITES, VSTYLE, Suite

UNPAIRED_ACCURACY = ("unpaired two-proportion test, each sentence's questions counted as one "
                     "trial (a design-effect bound; no logged samples)")


def _cell(value) -> str:
    """A console cell: ``-`` for None, a NaN as ``nan`` (``formatting.number``)."""
    return number(value, "{:.3f}", nan=None)


class AdeptBoard(Board):
    """ADEPT on the leaderboard: pooled recognition accuracy, graded prosody distance, per
    class and per task."""

    @property
    def columns(self) -> tuple[str, ...]:
        """ADEPT's CSV columns (without the ``adept_`` prefix), in order."""
        return ("acc", "n", "ci_low", "ci_high", "chance", "tasks", "failed", "rank",
                "rank_range", "tie_method", "corpus", "synthetic", "complete", "unranked",
                "prosody_distance", "prosody_distance_ci_low", "prosody_distance_ci_high",
                "graded_n", "graded_failed")

    @property
    def defaults(self) -> dict[str, object]:
        """A row without ADEPT tasks ran none of them."""
        return {"tasks": 0}

    # ------------------------------------------------------------------------ reading a run
    def read(self, run: Run, row: Row) -> None:
        """Pooled accuracy with its interval, chance, per-class and per-task accuracy and the
        graded figures. Logged samples that do not match the results (cut short, edited)
        stand for nothing: every figure of such a row is read from the results alone, as
        ``report`` reads them."""
        results = run.results["results"]
        standing = row.standing(self.name)
        tasks, task_n = self._tasks(results)
        standing.parts.update(tasks=tasks, task_n=task_n)
        mismatch = samples_mismatch(run, list(tasks))
        samples = None if mismatch else run.samples
        k, n, low, high = pooled_recognition(results, list(tasks), samples, people=row.people)
        if n:
            standing.figures.update(
                acc=k / n, n=n, tasks=len(tasks), ci_low=low, ci_high=high,
                failed=sum(int(results[t].get("failed,none") or 0) for t in tasks),
                chance=stats.pooled_mean(
                    (results[t].get("chance,none", spec.TASKS[t].chance), task_n[t])
                    for t in tasks)[0],
                unranked="; ".join(filter(None, (identity_reason(run, self.name), mismatch)))
                or None)
            standing.parts["classes"] = self._classes(tasks, task_n)
            recorded = run.suite(self.name)
            if recorded is not None:
                standing.figures["synthetic"] = recorded.synthetic
                self.read_identity(run, standing)
        self._graded_from_results(standing.figures, results)

    @staticmethod
    def _tasks(results: dict) -> tuple[dict[str, float], dict[str, int]]:
        """Accuracy and questions of each ADEPT task the results hold, in the suite's order."""
        tasks, task_n = {}, {}
        for task in spec.TASKS:
            r = results.get(task)
            if not r or r.get("acc,none") is None:
                continue
            tasks[task] = float(r["acc,none"])
            task_n[task] = int(r.get("n,none") or 0)
        return tasks, task_n

    @staticmethod
    def _classes(tasks: dict[str, float], task_n: dict[str, int]) -> dict[str, float]:
        """Accuracy per class over both speakers, weighted by the tasks' questions."""
        by_class: dict[str, list[tuple[float, int]]] = {}
        for task, acc in tasks.items():
            by_class.setdefault(spec.TASKS[task].cls.name, []).append((acc, task_n[task]))
        return {name: stats.pooled_mean(parts)[0] for name, parts in by_class.items()
                if sum(m for _, m in parts)}

    @staticmethod
    def _graded_from_results(figures: dict, results: dict) -> None:
        """The run's pooled prosody distance: the tasks' means weighted by their stimuli, with
        the stratified interval pooled from the tasks' own sentence-clustered t intervals
        (``stats.pooled_interval`` on their sentences - 1 degrees of freedom: the tasks are
        fixed strata holding different stimuli). From the results alone, so that a board read
        from a folder and one read from the Hub (``--from-hub``: results only) give the same
        interval; an interval pooled from the logged samples over all sentences at once was
        wider, holding the differences between tasks, which are not sampled."""
        graded = {t: r for t, r in results.items() if t in spec.TASKS and r.get("graded_n,none")}
        parts = [(r.get("prosody_distance,none"), r.get("graded_n,none")) for r in graded.values()]
        if not parts:
            return
        mean, n = stats.pooled_mean(parts)
        if not n or mean is None or math.isnan(mean):
            return
        figures.update(prosody_distance=mean, graded_n=int(n),
                       graded_failed=_graded_failed(results))
        low, high = _pooled_distance_interval(graded.values())
        if not math.isnan(low):
            figures.update(prosody_distance_ci_low=low, prosody_distance_ci_high=high)

    def unranked_for(self, row: Row, column: str) -> str | None:
        """A row without graded figures cannot be ranked by them; ranked by prosody distance,
        a row with failed stimuli is listed apart: a failed stimulus has no distance and is
        left out of the mean, so a system missing its hardest samples would rank as well as
        one that made them all (accuracy scores them wrong)."""
        figure = lambda name: row.figure(self.name, name)  # noqa: E731
        if figure("unranked") is not None:
            return None
        if figure("acc") is not None and figure(column) is None:
            return ("no graded figures (listener without them, or graded=false); ranked by "
                    "prosody_distance")
        if column == "prosody_distance" and figure("graded_failed"):
            return (f"prosody distance over {figure('graded_n')} stimuli: "
                    f"{figure('graded_failed')} failed (missing or unusable samples) and were "
                    "left out; ranked by prosody_distance only with none failed")
        return None

    def extra_columns(self, row: Row) -> dict[str, object]:
        """Accuracy per task (``acc_<class>_<speaker>``) and per class (``class_<class>``)."""
        standing = row.standings.get(self.name) or Standing()
        out = {f"acc_{t.removeprefix('adept_')}": v
               for t, v in standing.parts.get("tasks", {}).items()}
        out.update({f"class_{c}": v for c, v in standing.parts.get("classes", {}).items()})
        return out

    # ------------------------------------------------------------------------ ties
    def tie_figure(self, column: str) -> str | None:
        """``compare``'s paired accuracy or prosody-distance test."""
        return "accuracy" if column == "acc" else "prosody_distance"

    def unpaired_p(self, a: Row, b: Row, column: str) -> tuple[float, str]:
        """Accuracy: a two-proportion test bounded by the sentences' design effect (never for
        people's runs: their responses are not independent trials); prosody distance: a z
        test from the two intervals."""
        if column == "acc":
            return self._unpaired_accuracy(a, b)
        if column == "prosody_distance":
            p = stats.interval_difference_p(*(r.figure(self.name, f) for r in (a, b) for f in (
                "prosody_distance", "prosody_distance_ci_low", "prosody_distance_ci_high")))
            if math.isnan(p):
                return not_tested("no logged samples, no recorded interval")
            return p, "unpaired z test from the intervals (no logged samples)"
        return not_tested()

    def _unpaired_accuracy(self, a: Row, b: Row) -> tuple[float, str]:
        """The two-proportion test of two rows' accuracy, each sentence's questions counted as
        one trial's worth (``sentence_design_effect``)."""
        if a.people or b.people:
            return not_tested("people's runs without logged samples: their responses are not "
                              "independent trials")
        deff = [self.sentence_design_effect(r) for r in (a, b)]
        if any(math.isnan(d) for d in deff):
            return not_tested("no logged samples, and no task counts to bound the sentences' "
                              "clustering")
        counts = [(round(r.figure(self.name, "acc") * r.figure(self.name, "n")),
                   r.figure(self.name, "n")) for r in (a, b)]
        return stats.two_proportion_p(*counts[0], *counts[1], *deff), UNPAIRED_ACCURACY

    def sentence_design_effect(self, row: Row) -> float:
        """The largest design effect a row's accuracy can have from its questions' clustering
        by sentence (``stats.max_design_effect``: a sentence's questions all alike), from its
        tasks' question counts and ADEPT's 5 sentences a task (a task's questions spread
        evenly over its sentences, as the questions mirror one another). Without the tasks'
        counts, from the number of tasks and the run's n (every task taken as the same size);
        nan without either. A two-proportion test with it cannot claim a significance the
        clustering would undo, at the cost of power: it counts each sentence as one trial's
        worth (logged samples, tested paired by sentence, are the powerful way).

        Args:
            row: the row.

        Returns:
            The design effect, or nan.
        """
        task_n = (row.standings.get(self.name) or Standing()).parts.get("task_n", {})
        if any(task_n.values()):
            return sentence_design_effect(task_n)
        tasks, n = row.figure(self.name, "tasks"), row.figure(self.name, "n")
        if tasks and n:
            sentences = len(next(iter(spec.TASKS.values())).cls.sentence_ids()) * tasks
            return stats.max_design_effect([n / sentences] * sentences)
        return math.nan

    # ------------------------------------------------------------------------ showing
    def heading(self, members: list[Row]) -> str:
        """The listener and the corpus (synthetic said); people's runs share a section by the
        listener's kind: who answered each is in the logged samples (``compare`` says)."""
        first = members[0]
        corpus = first.figure(self.name, "corpus")
        text = f"ADEPT {corpus[:12]}" if corpus else "ADEPT (unrecorded copy)"
        if first.figure(self.name, "synthetic"):
            text += " - SYNTHETIC stand-in corpus, not ADEPT results"
        listener = ("human (participants may differ between runs)" if first.people
                    else first.scorers.get(self.name))
        return f"ADEPT, scored by the `{listener}` listener, corpus {text}"

    def markdown_section(self, members: list[Row]) -> list[str]:
        """The section's accuracy, graded and per-class table, then its per-task table.

        Args:
            members: the section's rows, in rank order.

        Returns:
            The Markdown lines.
        """
        return self._markdown_ranked(members) + self._markdown_tasks(members) + [""]

    def _parts(self, row: Row, name: str) -> dict:
        """One of a row's breakdowns (``classes`` or ``tasks``), empty when absent."""
        return row.standing(self.name).parts.get(name, {})

    def _markdown_ranked(self, members: list[Row]) -> list[str]:
        """The section's heading, notes and its table of rank, accuracy, graded and classes."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        parts = self._parts
        classes = [c for c in spec.CLASS_ORDER if any(c in parts(r, "classes") for r in members)]
        out = [f"## {self.heading(members)}", "",
               "Recognition accuracy over all questions (n) with its 95% interval clustered by "
               "sentence (from results alone: the bound of the largest design effect), chance "
               "weighted over the tasks run; per-class accuracy "
               "over both speakers.", "",
               "Prosody distance (graded, lower is better: 0 = the references' prosody, 1 = as "
               "far as the wrong subcategories) over the stimuli scored (n), 95% "
               "cluster-robust t interval over sentences.", "",
               f"Rank range: the ranks a system could hold given the paired tests between the "
               f"section's systems ({fig(members[0], 'tie_method')}): a system's range spans "
               "every system it is not significantly different from.", "",
               "| rank | rank range | system | accuracy | 95% CI | chance | n | failed | "
               "prosody distance | 95% CI | graded n | date | " +
               " | ".join(c.replace("_", " ") for c in classes) + " |",
               "|---:|---:|---|---:|---|---:|---:|---:|---:|---|---:|---|" +
               "---:|" * len(classes)]
        for r in members:
            out.append(f"| {fig(r, 'rank')} | {fig(r, 'rank_range')} | {r.system} | "
                       f"{number(fig(r, 'acc'))} | "
                       f"{number(fig(r, 'ci_low'), '{:.2f}')}-"
                       f"{number(fig(r, 'ci_high'), '{:.2f}')} | "
                       f"{number(fig(r, 'chance'), '{:.2f}')} | {fig(r, 'n')} | "
                       f"{fig(r, 'failed')} | {number(fig(r, 'prosody_distance'))} | "
                       f"{number(fig(r, 'prosody_distance_ci_low'), '{:.2f}')}-"
                       f"{number(fig(r, 'prosody_distance_ci_high'), '{:.2f}')} | "
                       f"{number(fig(r, 'graded_n'), '{}')} | {r.date or '-'} | " +
                       " | ".join(number(parts(r, "classes").get(c)) for c in classes) + " |")
        return out

    def _markdown_tasks(self, members: list[Row]) -> list[str]:
        """The section's per-task accuracy table, preceded by a blank line."""
        parts = self._parts
        tasks = [t for t in spec.TASKS if any(t in parts(r, "tasks") for r in members)]
        out = ["", "Per task (accuracy; questions per task as in the ADEPT tutorial):", "",
               "| system | " + " | ".join(t.removeprefix("adept_") for t in tasks) + " |",
               "|---|" + "---:|" * len(tasks)]
        out += [f"| {r.system} | " + " | ".join(number(parts(r, "tasks").get(t)) for t in tasks)
                + " |" for r in members]
        return out

    def markdown_apart(self, apart: list[Row]) -> list[str]:
        """ADEPT runs not ranked, with their listener, tasks, corpus and the reason."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        out = ["## ADEPT runs not ranked", "",
               "| system | listener | accuracy | n | tasks | corpus | why not ranked |",
               "|---|---|---:|---:|---:|---|---|"]
        out += [f"| {r.system} | {r.scorers.get(self.name)} | {number(fig(r, 'acc'))} | "
                f"{fig(r, 'n')} | {fig(r, 'tasks')} | {(fig(r, 'corpus') or '-')[:12]}"
                f"{' (synthetic)' if fig(r, 'synthetic') else ''} | {fig(r, 'unranked')} |"
                for r in apart]
        return out + [""]

    def ranked_table(self, members: list[Row]) -> Table:
        """A section's console table: accuracy with its interval, chance, n, failed and the
        graded figures. Every column folds (wraps inside a word) rather than cut a name or a
        figure with "..."; the system column is at least its header's width."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        table = Table(title=lit(self.heading(members)), box=box.SIMPLE_HEAD, padding=(0, 1),
                      pad_edge=False)
        name_width = max(len("system"), min(24, max(len(r.system) for r in members)))
        for col, width in (("rank", 4), ("rank range", 5), ("system", name_width), ("acc", 5),
                           ("95% CI", 9), ("chance", 6), ("n", 3), ("failed", 6),
                           ("distance", 8), ("95% CI ", 9), ("graded n", 8)):
            table.add_column(col, justify="left" if col == "system" else "right",
                             overflow="fold", min_width=width)
        two = "{:.2f}"
        for r in members:
            table.add_row(str(fig(r, "rank")), str(fig(r, "rank_range") or "-"), lit(r.system),
                          _cell(fig(r, "acc")),
                          f"{number(fig(r, 'ci_low'), two, nan=None)}-"
                          f"{number(fig(r, 'ci_high'), two, nan=None)}",
                          number(fig(r, "chance"), two, nan=None), str(fig(r, "n")),
                          str(fig(r, "failed")), _cell(fig(r, "prosody_distance")),
                          f"{number(fig(r, 'prosody_distance_ci_low'), two, nan=None)}-"
                          f"{number(fig(r, 'prosody_distance_ci_high'), two, nan=None)}",
                          number(fig(r, "graded_n"), "{}", nan=None))
        return table

    def apart_table(self, apart: list[Row]) -> Table:
        """ADEPT runs not ranked: listener, accuracy, n and the reason."""
        table = Table(title="ADEPT runs not ranked", box=box.SIMPLE_HEAD)
        for col in ("system", "listener", "accuracy", "n", "why not ranked"):
            table.add_column(col, justify="right" if col in ("accuracy", "n") else "left",
                             overflow="fold")
        for r in apart:
            table.add_row(lit(r.system), lit(r.scorers.get(self.name)),
                          _cell(r.figure(self.name, "acc")), str(r.figure(self.name, "n")),
                          lit(r.figure(self.name, "unranked")))
        return table

    def chart_panels(self, ranked: list[list[Row]], apart: list[Row]) -> list[Panel]:
        """One panel per listener and corpus (dated), drawing the figure the section is
        ranked by (accuracy, or the prosody distance with ``--sort prosody_distance``), the
        best at the top; and one of the rows not ranked."""
        by_acc = lambda r: r.figure(self.name, "acc")  # noqa: E731
        panels = []
        for members in ranked:
            first = members[0]
            corpus = f"corpus {(first.figure(self.name, 'corpus') or '?')[:10]}" + \
                (" SYNTHETIC" if first.figure(self.name, "synthetic") else "")
            dates = sorted(r.date for r in members if r.date)
            when = f", {dates[0][:10]}..{dates[-1][:10]}" if dates else ""
            if _ranked_by_distance(members, self.name):
                title, order = "ADEPT prosody distance (lower is better)", sorted(
                    members, key=lambda r: r.figure(self.name, "prosody_distance"), reverse=True)
            else:
                title, order = "ADEPT accuracy", sorted(members, key=by_acc)
            panels.append(Panel(f"{title}, scored by {first.scorers.get(self.name)}\n"
                                f"{corpus}{when}", order, self))
        if apart:
            reasons = sorted({r.figure(self.name, "unranked").split(":")[0] for r in apart})
            panels.append(Panel("ADEPT, not ranked (" + "; ".join(reasons) + ")",
                                sorted(apart, key=by_acc), self))
        return panels

    def chart_label(self, row: Row, rank_range: str | None, many: bool) -> str:
        """The system, n (stimuli when ranked by prosody distance), rank range, and for a row
        not ranked its listener (and SYNTHETIC)."""
        unranked = row.figure(self.name, "unranked")
        listener = row.scorers.get(self.name)
        if _ranked_by_distance([row], self.name) and unranked is None:
            return (f"{row.system} (n={row.figure(self.name, 'graded_n')} stimuli)"
                    + (f" rank {rank_range}" if rank_range and many else ""))
        return (super().chart_label(row, rank_range, many)
                + (f" [{listener.split()[0]}]" if unranked else "")
                + (" SYNTHETIC" if unranked and row.figure(self.name, "synthetic") else ""))

    def draw(self, ax, names: list[str], members: list[Row]) -> None:
        """Accuracy bars with 95% intervals, grey when the interval holds chance, and the
        chance line pooled over the panel's rows; for a section ranked by prosody distance,
        its bars and intervals instead (``_draw_distance``)."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        if _ranked_by_distance(members, self.name) and all(
                fig(r, "unranked") is None for r in members):
            self._draw_distance(ax, names, members)
            return
        values = [fig(r, "acc") for r in members]
        err = [[fig(r, "acc") - fig(r, "ci_low") for r in members],
               [fig(r, "ci_high") - fig(r, "acc") for r in members]]
        at_chance = [fig(r, "ci_low") <= (fig(r, "chance") or 0) <= fig(r, "ci_high")
                     for r in members]
        ax.barh(names, values, xerr=err, capsize=3,
                color=["#bbbbbb" if c else "#4c72b0" for c in at_chance])
        chance = stats.pooled_mean((fig(r, "chance"), fig(r, "n")) for r in members)[0]
        _chance_line(ax, chance)
        for i, (r, c) in enumerate(zip(members, at_chance)):
            if c:
                ax.text(min(fig(r, "ci_high") + 0.02, 0.8), i, "at chance", va="center",
                        fontsize=8, color="#555555")
        ax.set_xlim(0, 1)
        ax.set_xlabel("recognition accuracy (95% CI); grey: at chance")

    def _draw_distance(self, ax, names: list[str], members: list[Row]) -> None:
        """Prosody-distance bars with their 95% intervals (none drawn where a row has none),
        on 0 (the references' prosody) to at least 1 (as far as the wrong references)."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        values = [fig(r, "prosody_distance") for r in members]
        low = [fig(r, "prosody_distance_ci_low") for r in members]
        high = [fig(r, "prosody_distance_ci_high") for r in members]
        known = [lo is not None and hi is not None and not (is_nan(lo) or is_nan(hi))
                 for lo, hi in zip(low, high)]
        err = [[v - lo if k else 0.0 for v, lo, k in zip(values, low, known)],
               [hi - v if k else 0.0 for v, hi, k in zip(values, high, known)]]
        ax.barh(names, values, xerr=err, capsize=3, color="#55a868")
        ax.axvline(1.0, color="#c44e52", linestyle="--", linewidth=1)
        ax.set_xlim(0, max([1.05] + [hi + 0.05 for hi, k in zip(high, known) if k] +
                           [v + 0.05 for v in values]))
        ax.set_xlabel("prosody distance (95% CI), lower is better; 1 (dashed): as far as "
                      "the wrong references")


def _ranked_by_distance(members: list[Row], suite: str) -> bool:
    """Whether the rows were ranked by prosody distance (``leaderboard --sort``)."""
    return bool(members) and members[0].figure(suite, "ranked_by") == "prosody_distance"


def _graded_failed(results: dict) -> int:
    """Failed graded stimuli over the run's ADEPT tasks, from their results."""
    return sum(int(r.get("graded_failed,none") or 0) for t, r in results.items()
               if t in spec.TASKS)


def _pooled_distance_interval(task_results) -> tuple[float, float]:
    """The prosody distance's interval pooled from the tasks' own (``stats.pooled_interval``).

    Args:
        task_results: the results of the tasks with graded stimuli.

    Returns:
        The interval's bounds (nan when it cannot be pooled).
    """
    low, high, _ = stats.pooled_interval(
        ((r.get("prosody_distance,none"), r.get("prosody_distance_ci_low,none"),
          r.get("prosody_distance_ci_high,none"), r.get("graded_n,none"))
         for r in task_results), df=TASK_SENTENCE_DF)
    return low, high


#: the degrees of freedom of a task's prosody-distance interval: its sentences - 1
TASK_SENTENCE_DF = len(next(iter(spec.CLASSES.values())).sentence_ids()) - 1


def _chance_line(ax, chance: float) -> None:
    """A dashed, labelled line at the pooled chance level (none when it is NaN)."""
    if math.isnan(chance):
        return
    ax.axvline(chance, color="#c44e52", linestyle="--", linewidth=1)
    ax.text(chance, -0.45, f" chance {chance:.2f}", color="#c44e52", fontsize=8,
            va="bottom")


class VStyleBoard(Board):
    """VStyle on the leaderboard: a language's overall judge score (its four categories, 0.25
    each), n judged and the failure rate."""

    @property
    def columns(self) -> tuple[str, ...]:
        """VStyle's CSV columns (without the ``vstyle_`` prefix), in order."""
        return ("score", "n", "failure_rate", "rank", "rank_range", "tie_method", "corpus",
                "sample", "complete", "unranked")

    def read(self, run: Run, row: Row) -> None:
        """The first language the run has categories of: their scores, n judged, failure rate
        and, with all four categories, the overall score (its group's)."""
        results = run.results["results"]
        for lang in vstyle.LANGUAGES:
            group = results.get(f"vstyle_{lang}")
            cats = {c: results[f"vstyle_{lang}_{c}"] for c in vstyle.CATEGORIES
                    if f"vstyle_{lang}_{c}" in results}
            if cats:
                self._read_language(run, row.standing(self.name), lang, group, cats)
                return

    def _read_language(self, run: Run, standing: Standing, lang: str, group: dict | None,
                       cats: dict[str, dict]) -> None:
        """One language's figures into ``standing`` (see ``read``)."""
        key = self.suite.key
        figures = standing.figures
        standing.parts["categories"] = {f"{lang}_{c}": r.get(key("score"))
                                        for c, r in cats.items()}
        judged = sum(int(r.get(key("n")) or 0) for r in cats.values())
        failed = sum(int(r.get(key("n_failed")) or 0) for r in cats.values())
        figures["n"] = judged
        figures["failure_rate"] = failed / (judged + failed) if judged + failed else None
        whole = len(cats) == len(vstyle.CATEGORIES)
        if group and group.get(key("score")) is not None and whole:
            figures["score"] = group[key("score")]
        figures["unranked"] = self._unranked_reason(run, figures.get("score"), len(cats),
                                                    judged, failed)
        recorded = run.suite(self.name)
        if recorded is not None:
            figures["sample"] = recorded.sample
            self.read_identity(run, standing)

    def _unranked_reason(self, run: Run, score, categories: int, judged: int,
                         failed: int) -> str | None:
        """Why a language's overall score cannot be ranked (categories missing, identity
        unrecorded, a NaN score, or failed judgements), or None.

        A failed judgement (no answer audio, an unparseable verdict) has no score and is left
        out of the mean, so a system missing its hardest answers would rank as well as one
        that answered them all (ADEPT scores a failed question wrong): such a run is listed
        apart, as ADEPT's runs with failed stimuli are by prosody distance."""
        if categories != len(vstyle.CATEGORIES):
            return f"partial: {categories} of {len(vstyle.CATEGORIES)} categories"
        reason = identity_reason(run, self.name)
        if reason is None and is_nan(score):
            return (f"no score: the overall is not a number ({failed} of "
                    f"{judged + failed} judgements failed, {judged} judged)")
        if reason is None and failed:
            return (f"failed judgements: {failed} of {judged + failed} ("
                    f"{failed / (judged + failed):.1%}) failed and were left out of the mean; "
                    "ranked only with none failed")
        return reason

    def extra_columns(self, row: Row) -> dict[str, object]:
        """The score of each category (``vstyle_<language>_<category>``)."""
        standing = row.standings.get(self.name) or Standing()
        return {f"vstyle_{c}": v for c, v in standing.parts.get("categories", {}).items()}

    def tie_figure(self, column: str) -> str | None:
        """``compare``'s paired judge-score test."""
        return "vstyle"

    def heading(self, members: list[Row]) -> str:
        """The judge and the corpus (VStyle's published sample said)."""
        first = members[0]
        corpus = first.figure(self.name, "corpus")
        text = f"VStyle {corpus[:12]}" if corpus else "VStyle"
        if first.figure(self.name, "sample"):
            text += " - VStyle's published sample (the project page's examples), not VStyle results"
        return f"VStyle, judged by `{first.scorers.get(self.name)}`, {text}"

    def markdown_section(self, members: list[Row]) -> list[str]:
        """The section's overall score, n, failure rate and per-category scores."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        cats_of = lambda r: r.standing(self.name).parts.get("categories", {})  # noqa: E731
        cats = sorted({c for r in members for c in cats_of(r)})
        out = [f"## {self.heading(members)}", "",
               "Overall score 1-5 (each category 0.25, VStyle's weighting); n judged answers.",
               "", f"Rank range: from the paired tests between the section's systems "
               f"({fig(members[0], 'tie_method')}).", "",
               "| rank | rank range | system | overall | n | failure rate | " +
               " | ".join(cats) + " |",
               "|---:|---:|---|---:|---:|---:|" + "---:|" * len(cats)]
        for r in members:
            out.append(f"| {fig(r, 'rank')} | {fig(r, 'rank_range')} | {r.system} | "
                       f"{number(fig(r, 'score'), '{:.2f}')} | "
                       f"{fig(r, 'n')} | {number(fig(r, 'failure_rate'), '{:.1%}')} | " +
                       " | ".join(number(cats_of(r).get(c), '{:.2f}') for c in cats) + " |")
        return out + [""]

    def markdown_apart(self, apart: list[Row]) -> list[str]:
        """VStyle runs not ranked, with their judge and the reason."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        out = ["## VStyle runs not ranked", "",
               "| system | judge | overall | n | why not ranked |", "|---|---|---:|---:|---|"]
        out += [f"| {r.system} | {r.scorers.get(self.name)} | "
                f"{number(fig(r, 'score'), '{:.2f}')} | {fig(r, 'n')} | {fig(r, 'unranked')} |"
                for r in apart]
        return out + [""]

    def ranked_table(self, members: list[Row]) -> Table:
        """A section's console table: overall score, n and failure rate."""
        fig = lambda r, name: r.figure(self.name, name)  # noqa: E731
        table = Table(title=lit(self.heading(members)), box=box.SIMPLE_HEAD)
        for col in ("rank", "rank range", "system", "overall", "n", "failure rate"):
            table.add_column(col, justify="left" if col == "system" else "right",
                             overflow="fold", min_width=5 if col == "rank range" else None)
        for r in members:
            table.add_row(str(fig(r, "rank")), str(fig(r, "rank_range") or "-"), lit(r.system),
                          number(fig(r, "score"), "{:.2f}", nan=None), str(fig(r, "n")),
                          number(fig(r, "failure_rate"), "{:.1%}", nan=None))
        return table

    def apart_table(self, apart: list[Row]) -> Table:
        """VStyle runs not ranked: judge, overall score, n and the reason."""
        table = Table(title="VStyle runs not ranked", box=box.SIMPLE_HEAD)
        for col in ("system", "judge", "overall", "n", "why not ranked"):
            table.add_column(col, overflow="fold")
        for r in apart:
            table.add_row(lit(r.system), lit(r.scorers.get(self.name)),
                          number(r.figure(self.name, "score"), "{:.2f}", nan=None),
                          str(r.figure(self.name, "n")), lit(r.figure(self.name, "unranked")))
        return table

    def chart_panels(self, ranked: list[list[Row]], apart: list[Row]) -> list[Panel]:
        """One panel per judge and corpus; rows not ranked are not charted."""
        return [Panel(f"VStyle overall (judge {members[0].scorers.get(self.name)})",
                      sorted(members, key=lambda r: r.figure(self.name, "score")), self)
                for members in ranked]

    def draw(self, ax, names: list[str], members: list[Row]) -> None:
        """The overall scores on the judge's 1-5 scale."""
        ax.barh(names, [r.figure(self.name, "score") for r in members], color="#dd8452")
        ax.set_xlim(1, 5)
        ax.set_xlabel("speech-judge score (1-5)")


#: the boards of the suites that show more than the generic ``Board``
_BOARDS: dict[str, type[Board]] = {ADEPT.name: AdeptBoard, VSTYLE.name: VStyleBoard}


def board_of(suite: str | Suite) -> Board:
    """The leaderboard's board of a suite: its own where it has one, else the generic one.

    Args:
        suite: the suite or its name (``suites.SUITES``).

    Returns:
        The board.

    Raises:
        KeyError: no suite of that name.
    """
    record = suite if isinstance(suite, Suite) else SUITES[suite]
    return _BOARDS.get(record.name, Board)(record)
