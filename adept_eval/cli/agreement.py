"""``adept-eval agreement``: how far each automatic listener's answers agree with people's."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.markup import escape
from rich.table import Table

from adept_eval.cli.common import console, print_table
from adept_eval.results.formatting import interval, lit, number, p_value


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("agreement", parents=[common], help="how far each automatic "
                       "listener's answers agree with people's (a listening test) on the same "
                       "systems: per question, per system and task, and the systems' ranking")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="lm-eval results_*.json or --output_path folders (every run in them), "
                   "made with --log_samples: the automatic listeners' runs and the people's "
                   "runs of the same systems (--metadata listener=human responses=FILE, one "
                   "per system)")
    p.add_argument("--responses", nargs="+", action="extend", default=[], metavar="SYSTEM=FILE",
                   help="people's answers to SYSTEM read directly from a listening test's "
                   "responses file (listening-test export), instead of a people's run; SYSTEM "
                   "is the name the listener's runs carry (the corpus options say which "
                   "corpus the file answers)")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.set_defaults(func=run)


def _ci(c: dict) -> str:
    low, high = c["ci_low"], c["ci_high"]
    return "-" if number(low) == "-" or number(high) == "-" else interval(low, high, "{:.3f}", "..")


def _with_ci(c: dict) -> str:
    """A proportion and its 95% interval in one cell."""
    return f"{number(c['agreement'])} ({_ci(c)})"


def _acc(c: dict, side: str) -> str:
    """One side's accuracy and its 95% interval in one cell."""
    low, high = c[f"acc_{side}_ci"]
    return _with_ci({"agreement": c[f"acc_{side}"], "ci_low": low, "ci_high": high})


def _agreement_table(entry: dict) -> Table:
    """One listener's agreement with people: per system (pooled), then its tasks.

    Args:
        entry: one listener's figures (``results.agreement.agreement``'s ``listeners`` item).

    Returns:
        The table, ready to print.
    """
    t = Table(title=escape(f"listener {entry['listener']} vs people"), box=box.SIMPLE_HEAD,
              padding=(0, 1), pad_edge=False)
    for col in ("system / task", "questions", "responses (people)", "acc people (95% CI)",
                "acc listener (95% CI)", "agrees with each person (95% CI)", "chance", "p",
                "people with each other (95% CI)", "agrees with majority (95% CI)", "verdict"):
        t.add_column(col, justify="left" if col in ("system / task", "verdict") else "right",
                     overflow="fold")
    for system, s in entry["systems"].items():
        rows = [(system, s["pooled"], s["verdict"])]
        rows += [(f"  {task.removeprefix('adept_')}", c, "") for task, c in s["tasks"].items()]
        for name, c, verdict in rows:
            each, most, other = c["per_participant"], c["majority"], c["people_with_people"]
            t.add_row(lit(name), str(c["questions"]), f"{c['responses']} ({c['participants']})",
                      _acc(c, "people"), _acc(c, "machine"), _with_ci(each),
                      number(each["chance"]), p_value(each["p_chance"]), _with_ci(other),
                      _with_ci(most), verdict)
    return t


def _ranking_table(entry: dict) -> Table:
    """One listener's and people's accuracy per system, the figures its ranking compares."""
    r = entry["ranking"]
    t = Table(title=escape(f"listener {entry['listener']} vs people: the systems' ranking"),
              box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    for col in ("system", "acc people (95% CI)", "acc listener (95% CI)"):
        t.add_column(col, justify="left" if col == "system" else "right", overflow="fold")
    for s in r["systems"]:
        pooled = entry["systems"][s["system"]]["pooled"]  # the same accuracies, with intervals
        t.add_row(lit(s["system"]), _acc(pooled, "people"), _acc(pooled, "machine"))
    return t


def _ranking_line(r: dict) -> str:
    k = len(r["systems"])
    if k < 2 or number(r["kendall_tau_b"]) == "-":
        return r["verdict"]
    return (f"Kendall tau-b {number(r['kendall_tau_b'], '{:+.2f}')} over {k} systems, 95% CI "
            f"{interval(r['ci_low'], r['ci_high'], '{:+.2f}', ' to ')} (bootstrap of "
            f"{r['participants']} participants and {r['sentences']} sentences, "
            f"{r['replicates']} resamples"
            + (f", {r['undefined_replicates']} with a side's accuracies all equal left out"
               if r["undefined_replicates"] else "")
            + f"), p (order) {p_value(r['p_order'])}, at best {r['smallest_p']:.2g} with "
            f"{k} systems. {r['verdict']}")


NOTE = ("agrees with each person: share of people's answers the listener's answer matches "
        "(interval and p against chance: two-way cluster-robust over participants and "
        "sentences); people with each other: share of pairs of participants answering a "
        "question alike, what a listener answering like one more person would reach; agrees "
        "with majority: share of questions where it gave people's most "
        "frequent answer (a tie of k credits 1/k; clustered by sentence); chance: a listener "
        "answering at random (1/choices); a listener's failed question matches nobody")


def _responses(items: list[str]) -> dict[str, str]:
    """``--responses``' ``SYSTEM=FILE`` items as system -> file.

    Raises:
        OptionError: an item without ``SYSTEM=``, or a system named twice.
    """
    from adept_eval.errors import OptionError

    out: dict[str, str] = {}
    for item in items:
        system, sep, path = item.partition("=")
        if not sep or not system.strip() or not path.strip():
            raise OptionError(f"--responses {item}: give SYSTEM=FILE (the system the answers "
                              "are about, as its listener runs name it)")
        if system.strip() in out:
            raise OptionError(f"--responses: {system.strip()!r} given twice")
        out[system.strip()] = path.strip()
    return out


def run(args) -> int:
    """Print each automatic listener's agreement with people, per system and task, and its
    ranking of the systems against theirs; write every figure with ``--json``.

    Args:
        args: the parsed command line (``runs``, ``responses``, ``json`` and the corpus
            options).

    Returns:
        0.

    Raises:
        AgreementError: the runs cannot be set side by side (the message names the file).
        OptionError: a ``--responses`` item is not ``SYSTEM=FILE``.
        ResponsesError: a responses file cannot be read or has unusable rows.
        PublishError: a path holds no run, or a damaged one.
    """
    import json

    from adept_eval.results.agreement import agreement, to_json

    responses = _responses(args.responses)
    corpus = None
    if responses:
        from adept_eval.cli.common import load_corpus_of

        corpus = load_corpus_of(args)
    result = agreement(args.runs, responses=responses, corpus=corpus)
    for r in result["runs"]:
        console.print(f"{lit(r['system'])} answered by {lit(r['answered_by'])}: "
                      f"{lit(r['results'])}")
    console.print()
    for entry in result["listeners"]:
        print_table(_agreement_table(entry))
        console.print(lit(NOTE) + "\n")
        print_table(_ranking_table(entry))
        console.print(lit(_ranking_line(entry["ranking"])) + "\n")
    for note in result["notes"]:
        console.print(f"note: {lit(note)}")
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(result), indent=2), encoding="utf-8")
        console.print(f"wrote {lit(args.json)}")
    return 0
