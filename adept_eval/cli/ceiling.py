"""``adept-eval ceiling``: a listener's accuracy on ADEPT's natural recordings."""

from __future__ import annotations

from pathlib import Path

from adept_eval.cli.common import (SYNTHETIC_NOTE, comma_list, console, key_values,
                                  print_table)
from adept_eval.options import arg_type
from adept_eval.results.formatting import lit


def add_parser(sub, common) -> None:
    """Register the command on ``sub``, the ``adept-eval`` subcommands; ``common``
    holds the corpus options the corpus commands share."""
    p = sub.add_parser("ceiling", parents=[common], help="a listener's accuracy on ADEPT's "
                       "natural recordings: its measured ceiling")
    p.add_argument("--listener", help="acoustic (default), audio-llm or human")
    p.add_argument("--option", "--metadata", dest="option", nargs="+", action="extend",
                   metavar="KEY=VALUE", help="listener options as lm-eval's --metadata takes "
                   "them (k=v,k2=v2, space-separated k=v k2=v2, or a JSON object), e.g. "
                   "llm_base_url=http://localhost:8000/v1; listener=NAME works here too")
    p.add_argument("--tasks", nargs="+", action="extend", metavar="TASK",
                   help="tasks or groups, space- or comma-separated (default: adept)")
    p.add_argument("--limit", type=arg_type("a whole number of at least 1", whole=True, least=1),
                   help="questions per task, at least 1 (a quick, partial ceiling)")
    p.set_defaults(func=run)


def _listener_of(args, options: dict) -> str:
    """The listener named by ``--listener`` or ``--metadata listener=`` (taken out of
    ``options``), "acoustic" when neither.

    Raises:
        ValueError: the two name different listeners.
    """
    listener = options.pop("listener", None)
    if listener and args.listener and listener != args.listener:
        raise ValueError(f"--listener {args.listener} and --metadata listener={listener} disagree")
    return listener or args.listener or "acoustic"


def _used_synthetic_corpus(res: dict) -> bool:
    """Whether lm-eval's results record ADEPT run on the synthetic stand-in corpus."""
    from adept_eval.identity import RunIdentity

    ident = RunIdentity.of(res)
    suite = ident.suites.get("adept") if ident is not None else None
    return suite is not None and suite.synthetic


def run(args) -> int:
    """A listener's accuracy on ADEPT's own natural recordings: the most it can credit a system.

    Args:
        args: the parsed command line (the corpus options, ``listener``, ``option``, ``tasks``,
            ``limit``).

    Returns:
        0.

    Raises:
        ValueError: the listener named twice, differently, or an unknown ADEPT task.
    """
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from adept_eval.harness.startup import register
    from adept_eval.results.report import adept_table

    if args.corpus:
        import os

        os.environ["ADEPT_EVAL_CORPUS"] = args.corpus
    options = key_values(args.option)
    listener = _listener_of(args, options)
    tasks = comma_list(args.tasks) or ["adept"]
    from adept_eval.suites import ADEPT

    _check_adept_tasks(tasks, [*ADEPT.tasks, *ADEPT.groups])  # before lm-eval's task index
    register()
    manager = TaskManager(metadata={"listener": listener, **options})
    res = simple_evaluate(model="adept-natural", tasks=tasks, task_manager=manager,
                          bootstrap_iters=0, limit=args.limit)
    synthetic = _used_synthetic_corpus(res)
    print_table(adept_table(res["results"], title=lit(
        f"Ceiling of the {listener!r} listener (accuracy on ADEPT's natural recordings)"
        + (f" - {SYNTHETIC_NOTE}" if synthetic else ""))))
    if synthetic:
        console.print(f"[red]{SYNTHETIC_NOTE}[/red] (adept-eval make-synthetic's corpus, for "
                      "trying the pipeline only: not this listener's ceiling on ADEPT)")
    return 0


def _check_adept_tasks(tasks: list[str], registered) -> None:
    """Refuse a --tasks name that is not an ADEPT task or group (a typo, say) before anything
    runs, naming it, suggesting the nearest names and listing the valid ones."""
    from adept_eval.suites import with_nearest

    adept = sorted(t for t in registered if t == "adept" or t.startswith("adept_"))
    unknown = [t for t in tasks if t not in adept and not (t.endswith((".yaml", ".yml"))
                                                          and Path(t).is_file())]
    if not unknown:
        return
    raise ValueError(f"--tasks: unknown ADEPT task or group {with_nearest(unknown, adept)}; "
                     f"valid: {', '.join(adept)}")
