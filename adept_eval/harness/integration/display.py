"""What ``lm_eval`` prints for our runs (results themselves are unchanged): the table with our
headline metric first, counts as integers and no arrow on counts or reference values (as the
suites' metric tables say), a quiet ``git describe`` outside a git checkout, and lm-eval's
"Custom kwargs" hint not repeated for each of our tasks. A table, run or hint with nothing of
ours in it is lm-eval's own."""

from __future__ import annotations

import os

from adept_eval.harness.integration.fallback import fell_back, mark, patched


def patch_table(utils_module) -> None:
    """Wraps lm-eval 0.4.13's ``lm_eval.utils.make_table(result_dict, column, ...)``."""
    original = utils_module.make_table
    if patched(original):
        return

    def make_table(result_dict, column="results", *args, **kwargs):
        try:
            if not _has_ours(result_dict, column):  # anyone else's table: lm-eval's own
                return original(result_dict, column, *args, **kwargs)
        except Exception as exc:
            fell_back("table", exc)
            return original(result_dict, column, *args, **kwargs)
        try:  # a table of nothing but our tasks: written directly, lm-eval's layout
            rows = our_rows(utils_module, result_dict, column, *args, **kwargs)
            if rows is not None:
                return tidy_rows(table_headers(column), rows, result_dict, column)
        except Exception as exc:
            fell_back("table", exc)
        text = original(result_dict, column, *args, **kwargs)
        try:
            return tidy_table(text, result_dict, column)
        except Exception as exc:
            fell_back("table", exc)
            return text

    utils_module.make_table = mark(make_table, original)


def _has_ours(result_dict, column: str) -> bool:
    """Does the table show any task or group of ours?

    Args:
        result_dict: lm-eval's results.
        column: the results column the table shows.

    Returns:
        True when a row would be ours.
    """
    from adept_eval.suites import suite_of

    entries = result_dict.get(column) if isinstance(result_dict, dict) else None
    return any(suite_of(key) is not None for key in entries or ())


def table_headers(column: str) -> list[str]:
    """lm-eval 0.4.13's table columns."""
    return ["Groups" if column == "groups" else "Tasks", "Version", "Filter", "n-shot",
            "Metric", "", "Value", "", "Stderr"]


def _metric_cells(name, version, filt, shots, metric, arrow, value, metrics) -> list[str]:
    """One metric's row of lm-eval's table, cells as text and stripped.

    Args:
        name: the task cell (empty after a task's first row).
        version: the version cell (empty after a task's first row).
        filt: the filter name.
        shots: the n-shot cell.
        metric: the metric name.
        arrow: the higher-is-better symbol, or "".
        value: the metric's value.
        metrics: all of the task's ``metric,filter`` -> value, where its stderr is looked up.

    Returns:
        The nine cells.
    """
    shown = f"{value:.4f}" if isinstance(value, float) else value
    stderr_key = f"{metric}_stderr,{filt}"
    if stderr_key in metrics:
        stderr = metrics[stderr_key]
        stderr = "N/A" if stderr == "N/A" else f"{stderr:.4f}"
        row = [name, version, filt, shots, metric, arrow, shown, "±", stderr]
    else:
        row = [name, version, filt, shots, metric, arrow, shown, "", ""]
    return [str(row[0]).strip(), _version_text(row[1]),
            *(_NAN_SHOWN.get(str(c).strip(), str(c).strip()) for c in row[2:])]


def _task_rows(utils_module, result_dict: dict, key: str, metrics: dict, depth: int) -> list:
    """One task's rows of lm-eval's table, one per metric, sorted by metric name.

    Args:
        utils_module: lm-eval's ``utils`` module (its higher-is-better symbols).
        result_dict: lm-eval's results.
        key: the task name.
        metrics: the task's entry of the results column (a copy: it is consumed).
        depth: the task's depth in the group hierarchy (indents its name).

    Returns:
        The rows, cells as text.
    """
    symbols = utils_module.HIGHER_IS_BETTER_SYMBOLS
    version = result_dict["versions"].get(key, "    N/A")
    shots = str(result_dict.get("n-shot", {}).get(key, " "))
    higher = result_dict.get("higher_is_better", {}).get(key, {})
    name = metrics.pop("alias", key)
    for dropped in ("name", "sample_len", "sample_count"):
        metrics.pop(dropped, None)
    name = (" " * depth + "- " + name) if depth > 0 else name
    rows = []
    for metric_filter, value in sorted(metrics.items()):
        metric, _, filt = metric_filter.partition(",")
        if metric.endswith("_stderr"):
            continue
        rows.append(_metric_cells(name, version, filt, shots, metric,
                                  symbols.get(higher.get(metric), ""), value, metrics))
        name, version = "", ""
    return rows


def our_rows(utils_module, result_dict: dict, column: str = "results",
             sort_results: bool = False) -> list[list[str]] | None:
    """The rows lm-eval 0.4.13's ``make_table`` would print (cells as text, stripped), or
    None when the table holds a task that is not ours (lm-eval then prints it itself).

    Why not let lm-eval print it: its ``make_table`` hands the rows to pytablewriter, whose
    per-cell type inference (a multi-byte string decoder per cell) cost ~0.5 s of a ~4 s
    ADEPT run for cells that are already text. The rows are built as lm-eval builds them
    (hierarchy from ``group_subtasks``, metrics sorted by name, stderr beside its metric) and
    printed as lm-eval formatted them (4 decimals), without pytablewriter's column-wide
    re-formatting of numbers (which printed a count of 165 as ``165.0000`` in a column of
    rates). ``tests/harness/integration/test_task_index.py`` checks it against lm-eval's own table on real runs.

    Args:
        utils_module: lm-eval's ``utils`` module (hierarchy builder, higher-is-better symbols).
        result_dict: lm-eval's results.
        column: the results column to show ("results" or "groups").
        sort_results: list tasks by name rather than in hierarchy order.

    Returns:
        The rows, or None as above.
    """
    from adept_eval.suites import suite_of

    entries = result_dict.get(column) or {}
    if not entries or any(suite_of(k) is None for k in entries):
        return None
    depth_map, ordered = utils_module._build_hierarchy_info(
        result_dict.get("group_subtasks", {}), set(entries))
    rows = []
    for key in (sorted(entries) if sort_results else ordered):
        rows += _task_rows(utils_module, result_dict, key, dict(entries[key]),
                           depth_map.get(key, 0))
    return rows


_NAN_SHOWN = {"nan": "NaN", "-nan": "NaN"}  # as lm-eval's table (pytablewriter) shows it


def _version_text(version) -> str:
    """A task version as lm-eval's table shows it: ``1.0`` (float or text) as ``1``."""
    text = str(version).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


def tidy_table(text: str, result_dict: dict, column: str = "results") -> str:
    """lm-eval's Markdown table with our rows in their suite's order and display (columns of
    lm-eval 0.4.13: Tasks, Version, Filter, n-shot, Metric, arrow, Value, +-, Stderr)."""
    lines = text.strip("\n").splitlines()
    if len(lines) < 3:
        return text
    headers = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[2:]]
    return tidy_rows(headers, rows, result_dict, column) or text


def tidy_rows(headers: list[str], rows: list[list[str]], result_dict: dict,
              column: str = "results") -> str | None:
    """The table of ``rows`` with our tasks' rows in their suite's order and display.

    Args:
        headers: the table's column headers.
        rows: the table's rows (cells as text); a row with a task cell starts a task's block.
        result_dict: lm-eval's results (maps a shown alias back to its task).
        column: the results column the table shows.

    Returns:
        The Markdown table, or None when no row is ours.
    """
    from adept_eval.suites import suite_of

    by_display = {}
    for key, entry in (result_dict.get(column) or {}).items():
        by_display[str((entry or {}).get("alias", key)).strip()] = key
    out, touched = [], False
    for block in _task_blocks(rows):
        name = block[0][0].strip().lstrip("- ").strip()
        task = by_display.get(name, name)
        suite = suite_of(task)
        if suite is None:
            out += block
            continue
        touched = True
        out += _suite_block(suite, task, block)
    if not touched:
        return None
    return markdown_table(headers, out)


def _task_blocks(rows: list[list[str]]) -> list[list[list[str]]]:
    """The table's rows grouped by task: a row with a task cell starts a block.

    Args:
        rows: the table's rows.

    Returns:
        The blocks, in order.
    """
    blocks = []
    for row in rows:
        if row[0] or not blocks:
            blocks.append([row])
        else:
            blocks[-1].append(row)
    return blocks


def _suite_block(suite, task: str, block: list[list[str]]) -> list[list[str]]:
    """One of our tasks' rows, in its suite's metric order and display.

    Args:
        suite: the task's suite.
        task: the task name.
        block: the task's rows as lm-eval printed them.

    Returns:
        The rows to show; the first carries the task's head cells.
    """
    order = {m: i for i, m in enumerate(suite.display_order(task))}
    head = block[0][:4]
    body = sorted(block, key=lambda r: (order.get(r[4], len(order)), r[4]))
    return [_shown(suite, list(r), head if i == 0 else ["", "", "", ""])
            for i, r in enumerate(body)]


def _shown(suite, r: list[str], head: list[str]) -> list[str]:
    """One metric row as its suite's table says to show it."""
    r[:4] = head
    if len(r) > 8 and r[8] == "N/A":  # our intervals are metrics of their own
        r[7:9] = ["", ""]
    metric = suite.metric(r[4]) if len(r) > 4 else None
    shown = metric.shown if metric is not None else "arrow"
    if shown == "count":
        try:
            r[6] = str(int(round(float(r[6]))))
        except ValueError:
            pass
        r[5] = ""
        r[7:9] = ["", ""]
    elif shown == "plain":
        r[5] = ""
    return r


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """The Markdown table lm-eval prints (pytablewriter's layout: headers centred, cells
    left-aligned, columns at least 3 wide), written directly: pytablewriter infers a type for
    every cell and spent ~1 s of a 4 s ADEPT run on a table whose cells are already text."""
    widths = [max([3, _width(h), *(_width(r[i]) for r in rows if i < len(r))])
              for i, h in enumerate(headers)]

    def line(cells):
        return "|" + "|".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths)) + "|"

    head = "|" + "|".join(_centre(h, w) for h, w in zip(headers, widths)) + "|"
    rule = "|" + "|".join("-" * w for w in widths) + "|"
    body = [line([*(r[:len(widths)]), *[""] * (len(widths) - len(r))]) for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


def _width(text: str) -> int:
    """Display width in a terminal: East Asian wide and full-width characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _centre(text: str, width: int) -> str:
    pad = width - _width(text)
    left = pad // 2
    return " " * left + text + " " * (pad - left)


def patch_git(loggers_utils) -> None:
    """In a run of ours, ``git describe`` outside a git checkout stays quiet (lm-eval lets git
    print ``fatal: not a git repository`` on stderr); any other caller gets lm-eval's own
    function. Wraps lm-eval 0.4.13's ``lm_eval.loggers.utils.get_git_commit_hash``, which
    ``simple_evaluate`` calls (so ``fallback.OUR_RUN`` tells the run). Quiet for everyone
    would be an upstream change (docs/reliability-and-speed.md)."""
    from adept_eval.harness.integration.fallback import OUR_RUN

    original = loggers_utils.get_git_commit_hash
    if patched(original):
        return

    def get_git_commit_hash():
        if not OUR_RUN.get():
            return original()
        try:
            import subprocess

            done = subprocess.run(["git", "describe", "--always"], capture_output=True,
                                  text=True, check=False)
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
            return loggers_utils.get_commit_from_path(os.getcwd())
        except Exception:
            return original()

    loggers_utils.get_git_commit_hash = mark(get_git_commit_hash, original)


class QuietCustomKwargs:
    """Drops lm-eval's "Custom kwargs can be passed to --metadata" hint for our tasks (it is
    logged once per task, and our tasks document their --metadata keys)."""

    def filter(self, record) -> bool:
        """The logging filter: drop the hint when it names one of our tasks.

        Args:
            record: the log record.

        Returns:
            False to drop the record, True to keep it.
        """
        try:
            msg = record.getMessage()
            if "Custom kwargs can be passed to `--metadata`" in msg:
                from adept_eval.suites import suite_of

                return suite_of(msg.split(":", 1)[0].strip()) is None
        except Exception:
            pass
        return True


def patch_task_logging(task_module) -> None:
    """A filter on the logger of lm-eval 0.4.13's ``lm_eval.api.task`` (which logs the hint)."""
    import logging

    log = logging.getLogger(task_module.__name__)
    if not any(isinstance(f, QuietCustomKwargs) for f in log.filters):
        log.addFilter(QuietCustomKwargs())
