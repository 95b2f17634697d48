"""What ``lm_eval`` prints for our runs (results themselves are unchanged): the table with our
headline metric first, counts as integers and no arrow on counts or reference values (as the
suites' metric tables say), a quiet ``git describe`` outside a git checkout, and lm-eval's
"Custom kwargs" hint not repeated for each of our tasks."""

from __future__ import annotations

import os

from .fallback import fell_back, mark, patched


def patch_table(utils_module) -> None:
    """Wraps lm-eval 0.4.13's ``lm_eval.utils.make_table(result_dict, column, ...)``."""
    original = utils_module.make_table
    if patched(original):
        return

    def make_table(result_dict, column="results", *args, **kwargs):
        text = original(result_dict, column, *args, **kwargs)
        try:
            return tidy_table(text, result_dict, column)
        except Exception as exc:
            fell_back("table", exc)
            return text

    utils_module.make_table = mark(make_table)


def tidy_table(text: str, result_dict: dict, column: str = "results") -> str:
    """lm-eval's Markdown table with our rows in their suite's order and display (columns of
    lm-eval 0.4.13: Tasks, Version, Filter, n-shot, Metric, arrow, Value, +-, Stderr)."""
    from ..suites import suite_of

    lines = text.strip("\n").splitlines()
    if len(lines) < 3:
        return text
    headers = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[2:]]
    by_display = {}
    for k, v in (result_dict.get(column) or {}).items():
        by_display[str((v or {}).get("alias", k)).strip()] = k
    blocks, touched = [], False
    for row in rows:
        if row[0] or not blocks:
            blocks.append([row])
        else:
            blocks[-1].append(row)
    out = []
    for block in blocks:
        name = block[0][0].strip().lstrip("- ").strip()
        task = by_display.get(name, name)
        suite = suite_of(task)
        if suite is None:
            out += block
            continue
        touched = True
        order = {m: i for i, m in enumerate(suite.display_order(task))}
        head = block[0][:4]
        body = sorted(block, key=lambda r: (order.get(r[4], len(order)), r[4]))
        for i, r in enumerate(body):
            out.append(_shown(suite, list(r), head if i == 0 else ["", "", "", ""]))
    if not touched:
        return text
    return markdown_table(headers, out)


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
    """``git describe`` outside a git checkout printed ``fatal: not a git repository``. Wraps
    lm-eval 0.4.13's ``lm_eval.loggers.utils.get_git_commit_hash``."""
    original = loggers_utils.get_git_commit_hash
    if patched(original):
        return

    def get_git_commit_hash():
        try:
            import subprocess

            done = subprocess.run(["git", "describe", "--always"], capture_output=True,
                                  text=True, check=False)
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
            return loggers_utils.get_commit_from_path(os.getcwd())
        except Exception:
            return original()

    loggers_utils.get_git_commit_hash = mark(get_git_commit_hash)


class QuietCustomKwargs:
    """Drops lm-eval's "Custom kwargs can be passed to --metadata" hint for our tasks (it is
    logged once per task, and our tasks document their --metadata keys)."""

    def filter(self, record) -> bool:
        try:
            msg = record.getMessage()
            if "Custom kwargs can be passed to `--metadata`" in msg:
                from ..suites import suite_of

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
