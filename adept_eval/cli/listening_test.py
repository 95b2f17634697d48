"""``adept-eval listening-test build | serve | run | seal | status | export | report``."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from adept_eval.corpora import spec
from adept_eval.options import arg_type
from adept_eval.results.formatting import lit, number, p_value, print_whole

console = Console(soft_wrap=True)
EXTRA_HINT = "the listening test needs its extra: pip install 'adept-eval[listening-test]'"


def add_parser(sub, common) -> None:
    """Register the ``listening-test`` command and its subcommands on ``sub``."""
    lt = sub.add_parser("listening-test", help="run ADEPT's listening tests with people: a web "
                        "app, responses in SQLite, honest statistics")
    lsub = lt.add_subparsers(dest="lt_command", required=True)

    def design_args(p):
        """Add the options that design a test (systems, tasks, attention checks...) to ``p``."""
        p.add_argument("systems", nargs="*", metavar="[NAME=]FOLDER",
                       help="samples folders laid out as `adept-eval manifest` says, or lm-eval "
                       "runs made with --log_samples (a run's --output_path folder, one "
                       "system's, or its results_*.json); several systems are balanced over "
                       "participants")
        p.add_argument("--natural", action="store_true",
                       help="also (or only) ADEPT's natural recordings, as system 'natural'")
        # one value, comma-separated, repeatable: with nargs="*" a system named after the
        # tasks (`--tasks T copy=sys_copy`) would be taken for a task, and the folder lost
        p.add_argument("--tasks", action="append", metavar="TASK[,TASK...]",
                       help="ADEPT tasks, comma-separated (or --tasks repeated; default: all 12)")
        p.add_argument("--title", default="ADEPT listening test")
        p.add_argument("--seed", type=int, help="design seed (default: random, recorded)")
        p.add_argument("--catch-per-task", type=arg_type("0 or more", whole=True, least=0),
                       default=1, help="attention checks per task (default 1)")
        p.add_argument("--min-catch-correct", type=arg_type("a share from 0 to 1", least=0,
                                                            most=1), default=1.0,
                       help="share of attention checks a participant must pass (default 1.0)")
        p.add_argument("--completion-code", help="shown at the end (default: random)")
        p.add_argument("--screenout-code", help="shown after a failed headphone check")
        p.add_argument("--completion-url", default="", help="link shown at the end; {code} is "
                       "filled, e.g. https://app.prolific.com/submissions/complete?cc={code}")
        p.add_argument("--match-loudness", type=loudness_arg, metavar="DBFS",
                       help="bring every stimulus to this speech level, e.g. -23 (default: as "
                       "each system produced it); recorded in the test's description")

    def serve_args(p):
        """Add the options that serve a test (host, port, mirroring, limits) to ``p``."""
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=arg_type("a port number from 1 to 65535", whole=True,
                                               least=1, most=65535), default=8000)
        p.add_argument("--mirror-to", metavar="REPO", help="also push the responses to this "
                       "private Hub dataset (token from HF_TOKEN / hf auth login)")
        p.add_argument("--mirror-every", type=arg_type("minutes above 0", positive=True),
                       default=5.0, metavar="MINUTES")
        p.add_argument("--audio-cache-mb", type=arg_type("0 or more MiB", least=0),
                       default=256.0, metavar="MIB",
                       help="keep up to this much of the test's audio in memory (default 256)")
        p.add_argument("--max-participants", type=arg_type("1 or more", whole=True, least=1),
                       default=1000, metavar="N",
                       help="take at most N participants in all (default 1000): a flood of "
                       "fake arrivals cannot grow the database without bound")
        p.add_argument("--new-sessions-per-minute", type=arg_type("1 or more", whole=True,
                                                                  least=1),
                       default=30, metavar="N",
                       help="new sessions one client address may start per minute (default "
                       "30, and twice that per /24 or /64 network; raise it for a lab whose "
                       "participants share one address)")
        p.add_argument("--proxy", metavar="ADDRESS[,ADDRESS...]", default="",
                       help="the reverse proxy's address or network (e.g. 10.0.0.5 or "
                       "10.0.0.0/8; * for every peer, only where the server is reachable "
                       "through the proxy alone): its X-Forwarded-For names each client. "
                       "Default: no proxy, every peer is a client")
        p.add_argument("--max-connections-per-address", type=arg_type("1 or more", whole=True,
                                                                     least=1),
                       default=64, metavar="N",
                       help="open connections one client address may hold (default 64, and "
                       "4 times that per network; a trusted proxy is not limited)")
        p.add_argument("--release-after", type=arg_type("minutes above 0", positive=True),
                       default=10.0, metavar="MINUTES",
                       help="an unfinished participant silent this long stops holding a place "
                       "of --max-participants (default 10; they may still finish)")
        p.add_argument("--min-listening", type=arg_type("a share of 0 or more", least=0),
                       default=1.0, metavar="SHARE",
                       help="share of a page's audio duration that must pass between the "
                       "server showing it and taking its answer (default 1: every sample "
                       "played through; 0: none)")

    p = lsub.add_parser("build", parents=[common], help="build a test folder (design and "
                        "blinded audio) from systems' samples")
    design_args(p)
    p.add_argument("-o", "--output", required=True, help="the test folder to create")
    p.set_defaults(func=cmd_build)

    p = lsub.add_parser("serve", help="serve a built test to participants (prints its URL)")
    p.add_argument("test", help="the test folder")
    serve_args(p)
    p.set_defaults(func=cmd_serve)

    p = lsub.add_parser("run", parents=[common], help="the whole human evaluation in one "
                        "command: build the test (unless the folder has one), serve it until "
                        "Ctrl-C, then export the responses and print the report")
    design_args(p)
    p.add_argument("-o", "--output", required=True, help="the test folder")
    serve_args(p)
    p.set_defaults(func=cmd_run)

    p = lsub.add_parser("seal", help="copy a built test for a public place (a Docker Space): "
                        "its audio, and its design encrypted with a new key, printed once, "
                        "that serve reads from ADEPT_LISTENING_KEY")
    p.add_argument("test", help="the built test folder")
    p.add_argument("-o", "--output", required=True, help="the sealed folder to create")
    p.set_defaults(func=cmd_seal)

    p = lsub.add_parser("status", help="live counts per task and system, and exclusions")
    p.add_argument("test")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    p = lsub.add_parser("export", help="write the `human` listener's responses file "
                        "(included participants; --all for everyone) and a participants file")
    p.add_argument("test")
    p.add_argument("-o", "--output", default="responses.csv")
    p.add_argument("--all", action="store_true", help="every participant, screening in a column")
    p.set_defaults(func=cmd_export)

    p = lsub.add_parser("report", help="the tutorial's step-4 table with clustered 95%% "
                        "intervals and tests against chance, agreement, per-participant "
                        "accuracy, a chart per task")
    p.add_argument("test")
    p.add_argument("-o", "--output", help="folder for report.json and the charts "
                   "(default: <test>/report)")
    p.add_argument("--include-incomplete", action="store_true")
    p.set_defaults(func=cmd_report)

    p = lsub.add_parser(
        "plan", help="how many participants per system give the power to detect an accuracy "
        "difference between two systems (simulated from the two-way cluster model, a pilot's "
        "variance components if given)",
        description="Power to detect an accuracy difference between two systems, by "
        "simulation. The simulated tests follow the design `listening-test build` makes: every "
        "participant answers every task, each task in one system, the systems rotating over "
        "tasks and participants, so each participant hears both compared systems on some tasks "
        "and the comparison is partly within participants. Each is analysed as `compare` "
        "analyses a real test (two-way cluster-robust variance over participants and "
        "sentences, Student's t reference), so the power shown is what `compare` gives. "
        "'Participants per system' is per task: with k systems the test has k times as many "
        "participants in all.")
    p.add_argument("--difference", type=float, required=True,
                   help="the accuracy difference to detect, e.g. 0.10")
    p.add_argument("--pilot", metavar="RESULTS", help="a pilot: a listening-test folder, or an "
                   "lm-eval run of the human listener made with --log_samples")
    p.add_argument("--power", type=float, default=0.8, help="the power wanted (default 0.8)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="two-sided significance level (default 0.05)")
    p.add_argument("--simulations", type=int, default=1000,
                   help="simulated tests per number of participants (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--questions", type=int, help="questions of the test, all answered by every "
                   "participant (default: the pilot's, else the 165 of all 12 tasks)")
    p.add_argument("--tasks", type=int, help="tasks the questions are spread over, each heard "
                   "in one system by a participant (default: the pilot's, else ADEPT's 12; "
                   "--tasks 1: each participant hears one system)")
    p.add_argument("--systems", type=int, default=2, help="systems in the test, rotated over "
                   "its tasks (default 2); the power is for a difference between two of them")
    p.add_argument("--accuracy", type=float, help="the baseline system's expected accuracy "
                   "(default: the pilot's, else 0.5, where answers vary most)")
    p.set_defaults(func=cmd_plan)


def loudness_arg(text: str) -> float:
    """``--match-loudness``: a speech level in dBFS from -70 up to (not including) 0, refused
    at argument parsing with argparse's one message naming the option."""
    import argparse

    from adept_eval.listening_test.design import MIN_LOUDNESS

    low, high = MIN_LOUDNESS, 0.0  # full scale (0) cannot be reached without clipping
    what = f"a speech level in dBFS from {low:g} to below {high:g}, e.g. -23"
    x = arg_type(what, least=low, most=high)(text)
    if x >= high:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r} (must be below "
                                         f"{high:g}: full scale cannot be reached without "
                                         "clipping)")
    return x


def _system_of(item: str) -> tuple[str, str]:
    """One command-line system, ``NAME=FOLDER`` or ``FOLDER``, as (name, source).

    Args:
        item: the argument as given.

    Returns:
        The system's name and its source: the samples folder, or an lm-eval run's results file.

    Raises:
        ValueError: an ADEPT task name given where a folder goes.
    """
    from adept_eval.listening_test.design import is_lm_eval_run, lm_eval_run, system_name

    from adept_eval.corpora.spec import TASKS

    name, sep, folder = item.partition("=")
    if not sep:
        if item in TASKS and not Path(item).exists():
            raise ValueError(f"{item}: an ADEPT task given where a system's folder goes; "
                             "list tasks with --tasks, comma-separated: --tasks "
                             f"{item},...")
        name, folder = Path(item).resolve().name, item
    if is_lm_eval_run(Path(folder)):
        run, note = lm_eval_run(Path(folder), name if sep else None)
        name = name if sep else system_name(run.system)
        console.print(f"system {lit(name)}: lm-eval run {lit(note)}", highlight=False)
        folder = str(run.results_path)
    return name, folder


def _systems(args) -> dict:
    """name -> source of each system named on the command line. A samples folder is named after
    the folder; an lm-eval run (its ``--output_path`` folder or ``results_*.json``) after the
    run's own system name, not the folder's (``out``), and stands for the one run it holds,
    printed with how it was chosen (``design.lm_eval_run``): participants hear that run."""
    from adept_eval.listening_test.design import NATURAL

    systems: dict = {}
    for item in args.systems:
        name, folder = _system_of(item)
        if name == NATURAL:
            # the name of ADEPT's own recordings (--natural): a system of that name would be
            # silently replaced by them under --natural, and without it a TTS system would be
            # labelled as the natural speech everywhere in the results
            raise ValueError(f"{item}: the system name {NATURAL!r} is reserved for ADEPT's "
                             "natural recordings (--natural); name this system otherwise, "
                             "NAME=FOLDER")
        if name in systems:
            raise ValueError(f"system {name!r} given twice; name them NAME=FOLDER")
        systems[name] = folder
    if args.natural:
        systems[NATURAL] = None
    if not systems:
        raise ValueError("name at least one samples folder, or --natural")
    return systems


def cmd_build(args):
    """``listening-test build``: lay out a new test from the corpus and the systems.

    Args:
        args: the parsed command line (the design options, ``output``, corpus options).

    Returns:
        0.

    Raises:
        ValueError: a misnamed system or a used output folder.
    """
    from adept_eval.corpora.corpus import load_corpus
    from adept_eval.listening_test.design import build_test, check_new_folder

    check_new_folder(args.output)  # a used folder before the corpus is decoded
    systems = _systems(args)  # a misnamed system before the corpus is loaded
    tasks = [t.strip() for value in args.tasks or () for t in value.split(",") if t.strip()]
    corpus = load_corpus(args.corpus, download=not args.no_download, progress=not args.quiet)
    config = build_test(corpus, args.output, systems, tasks=tasks or None, title=args.title,
                        seed=args.seed, catch_per_task=args.catch_per_task,
                        min_catch_correct=args.min_catch_correct,
                        completion_code=args.completion_code, screenout_code=args.screenout_code,
                        completion_url=args.completion_url, match_loudness=args.match_loudness)
    n_items = sum(len(config.task_questions(t)) for t in config.tasks) + \
        config.catch_per_task * len(config.tasks)
    console.print(f"listening test built in {lit(args.output)}: {len(config.tasks)} tasks, "
                  f"{len(config.questions)} questions, {len(config.systems)} system(s) "
                  f"({lit(', '.join(config.systems))}); each participant answers {n_items} items "
                  f"({config.catch_per_task * len(config.tasks)} attention checks); audio "
                  f"re-encoded to one format, loudness {config.loudness}")
    console.print(f"completion code {config.completion_code}, screen-out code "
                  f"{config.screenout_code}; serve it with: adept-eval listening-test serve "
                  f"{lit(args.output)}")
    return 0


def _serve_options(args) -> dict:
    """The serve options of a parsed command line, as ``_serve`` takes them."""
    return dict(mirror_to=args.mirror_to, mirror_every=args.mirror_every,
                audio_cache_mb=args.audio_cache_mb, max_participants=args.max_participants,
                sessions_per_minute=args.new_sessions_per_minute, proxy=args.proxy,
                per_address=args.max_connections_per_address,
                release_after=args.release_after, min_listening=args.min_listening)


def _serve(test, host, port, mirror_to=None, mirror_every=5.0, audio_cache_mb=256.0,
           max_participants=1000, sessions_per_minute=30, proxy="", per_address=64,
           release_after=10.0, min_listening=1.0):
    try:
        from adept_eval.listening_test.app import ADMIN_TOKEN_ENV, check_address, serve
    except ImportError:
        raise RuntimeError(EXTRA_HINT) from None
    from adept_eval.listening_test.addresses import Proxies
    from adept_eval.listening_test.design import load_test

    proxies = Proxies.parse(proxy)  # a malformed --proxy: one message, before anything else

    load_test(test)  # a clear message before uvicorn starts
    from adept_eval.listening_test.store import DB_FILE, Store

    if (Path(test) / DB_FILE).exists():  # a damaged database: one message, before the URL
        _check_store(load_test(test), Store(Path(test) / DB_FILE, sync_every=0), close=True)
    check_address(host, port)  # before the URL is printed: a port in use is one message
    names = machine_names() if host in EVERY_ADDRESS else []
    shown = names[0] if names else url_host(host)
    console.print(f"Listening test at http://{shown}:{port}/?PROLIFIC_PID=<participant id>  "
                  "(Ctrl-C stops it; responses are kept)")
    if host in EVERY_ADDRESS:
        address = (f"; where participants' computers do not know the name {names[0]}, its "
                   f"address: http://{names[1]}:{port}/?PROLIFIC_PID=<participant id>"
                   if len(names) > 1 else "")
        console.print("(served on every address of this machine" + address + (
            "; behind a proxy, give the proxy's public address instead)" if names else
            ": replace localhost with the name or address participants' computers reach it "
            "by, or a proxy's public address; localhost is each participant's own computer)"),
            highlight=False)
    if os.environ.get(ADMIN_TOKEN_ENV):
        console.print(f"Admin view: http://{shown}:{port}/admin?token=${ADMIN_TOKEN_ENV}")
    else:
        console.print(f"Admin view off: set {ADMIN_TOKEN_ENV} (e.g. to "
                      f"{secrets.token_urlsafe(16)}) to enable /admin")
    if mirror_to:
        from adept_eval.listening_test.mirror import ensure_private

        ensure_private(mirror_to)  # before anyone arrives: never to a public dataset
        console.print(f"Responses mirrored to the private dataset {mirror_to} every "
                      f"{mirror_every:g} min and at shutdown")
    from adept_eval.listening_test.app import check_writable

    check_writable(Path(test).resolve())  # one clear message before uvicorn starts
    serve(test, host=host, port=port, mirror_repo=mirror_to, mirror_every=mirror_every,
          audio_cache_mb=audio_cache_mb, max_participants=max_participants,
          session_rate=(sessions_per_minute, 60.0), release_after=release_after * 60.0,
          min_listening=min_listening, proxies=proxies, per_address=per_address)


#: ``--host`` values that serve on every address of the machine (others' computers included)
EVERY_ADDRESS = ("0.0.0.0", "::", "")


def url_host(host: str) -> str:
    """``--host`` as written in a URL: the loopback address as localhost (only this machine
    reaches it anyway), an IPv6 address in brackets."""
    if host == "127.0.0.1":
        return "localhost"
    return f"[{host}]" if ":" in host else host


def machine_names() -> list[str]:
    """What participants on other computers can reach a server on every address by: this
    machine's host name and its address on the network (the one its default route leaves from;
    connecting a UDP socket only chooses the route, no packet is sent), each left out when it
    is unknown or names the loopback. The URL given to participants had said localhost, which
    on a participant's computer is that computer itself."""
    import socket

    names = []
    try:
        name = socket.gethostname()
    except OSError:
        name = ""
    if name and name != "localhost" and not name.startswith("127."):
        names.append(name)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): never a real host
            address = probe.getsockname()[0]
        if not address.startswith(("127.", "0.")):
            names.append(address)
    except OSError:  # no network route: the host name alone, or localhost with a note
        pass
    return names


def cmd_serve(args):
    """``listening-test serve``: serve a built test until stopped.

    Args:
        args: the parsed command line (``test`` and the serve options).

    Returns:
        0.
    """
    _serve(args.test, args.host, args.port, **_serve_options(args))
    return 0


def cmd_seal(args):
    """``listening-test seal``: write a sealed copy of a built test and print its key.

    Args:
        args: the parsed command line (``test``, ``output``).

    Returns:
        0.
    """
    from adept_eval.listening_test.design import seal_test
    from adept_eval.listening_test.sealed import KEY_ENV

    key = seal_test(args.test, args.output)
    console.print(f"sealed copy in {args.output} (audio and test.sealed; no test.json). Its "
                  f"key, shown only now: give it to the server as the secret {KEY_ENV}:",
                  highlight=False)
    print(key)
    return 0


def cmd_run(args):
    """``listening-test run``: build the test (or continue one), serve it, then export the
    responses and write the report.

    Args:
        args: the parsed command line (the design and serve options, ``output``).

    Returns:
        0.
    """
    from adept_eval.listening_test.design import CONFIG_FILE

    if (Path(args.output) / CONFIG_FILE).exists():
        console.print(f"continuing the test in {args.output} (its design is kept)")
    else:
        cmd_build(args)
    _serve(args.output, args.host, args.port, **_serve_options(args))
    out = Path(args.output) / "export" / "responses.csv"
    _export(args.output, out, False)
    _report(args.output, None, False)
    return 0


def _open(test):
    from adept_eval.listening_test.design import load_test
    from adept_eval.listening_test.store import DB_FILE, Store

    config = load_test(test)
    db = Path(test) / DB_FILE
    if not db.exists():
        raise ValueError(f"{db}: no responses yet (serve the test first)")
    return config, _check_store(config, Store(db))


def _check_store(config, store, *, close=False):
    """``store``, once its responses are found to belong to the test's design ``config``
    (``analysis.refuse_foreign``); closed afterwards with ``close``, and closed when refused."""
    from adept_eval.listening_test.analysis import refuse_foreign

    try:
        refuse_foreign(config, store)
    except BaseException:
        store.close()
        raise
    if close:
        store.close()
    return store


def cmd_status(args):
    """``listening-test status``: participants, screening and responses per task and system.

    Args:
        args: the parsed command line (``test``, ``json``).

    Returns:
        0.

    Raises:
        ValueError: the test has no responses yet.
    """
    from adept_eval.listening_test.analysis import status_summary

    config, store = _open(args.test)
    s = status_summary(config, store)
    if args.json:
        console.print_json(json.dumps(s))
        return 0
    console.print(f"{lit(s['title'])}: {s['participants']} participants, {s['responses']} "
                  "responses")
    console.print("screening: " + ", ".join(f"{lit(k)} {v}" for k, v in s["screening"].items()))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("task", "system", "people", "included", "responses", "incl. resp."):
        table.add_column(col, justify="left" if col in ("task", "system") else "right",
                         no_wrap=col == "task")
    for r in s["tasks"]:
        table.add_row(r["task"].removeprefix("adept_"), lit(r["system"]), str(r["participants"]),
                      str(r["included"]), str(r["responses"]), str(r["included_responses"]))
    print_whole(console, table)
    return 0


def _export(test, out, include_all):
    from adept_eval.listening_test.export import export, check_output

    check_output(out)  # before the database is opened: a folder as -o is one message
    config, store = _open(test)
    paths = export(config, store, out, include_all=include_all)
    for p in paths:
        n = sum(1 for _ in open(p, encoding="utf-8")) - 1
        console.print(f"{lit(p)}: {n} rows")
    if len(config.systems) == 1:
        console.print(f"score it: lm_eval --model audio-dir --model_args path=<samples> --tasks "
                      f"{' '.join(config.tasks) if len(config.tasks) < 12 else 'adept'} "
                      f"--metadata listener=human responses={paths[0]}")
    return paths


def cmd_export(args):
    """``listening-test export``: the responses as files for lm-eval and analysis.

    Args:
        args: the parsed command line (``test``, ``output``, ``all``).

    Returns:
        0.
    """
    _export(args.test, Path(args.output), args.all)
    return 0


def _p(p) -> str:
    """A p-value as the listening test's report writes it: three decimals, floored at 0.001."""
    return p_value(p, floor=1e-3, floor_text="<0.001", fmt="{:.3f}")


def _kappa(system: str, agreement: dict) -> str:
    """A system's Fleiss' kappa with what it rests on: questions rated by two or more people."""
    if not agreement.get("questions"):
        return f"{lit(system)}: - (no question rated twice)"
    return (f"{lit(system)}: {number(agreement['kappa'], '{:.2f}')} "
            f"({agreement['questions']} questions, {agreement['mean_raters']:.1f} raters each "
            "on average)")


def _participant_counts(screening: dict) -> dict:
    """Count participants per screening outcome, in order of first appearance.

    Args:
        screening: participant id -> screening record.

    Returns:
        Screening outcome -> number of participants with it.
    """
    counts = {}
    for record in screening.values():
        counts[record.screening] = counts.get(record.screening, 0) + 1
    return counts


def _print_header(config, analysis, include_incomplete: bool) -> None:
    """Print who took part and what the accuracy tables measure."""
    counts = _participant_counts(analysis.screening)
    console.print(f"{lit(config.title)}: {len(analysis.screening)} participants; "
                  + ", ".join(f"{lit(k)} {v}" for k, v in counts.items()))
    who = ("over included participants and incomplete ones (--include-incomplete)"
           if include_incomplete else "over included participants")
    console.print(f"Recognition accuracy (the tutorial's step 4) {who}, "
                  "with 95% intervals and p against chance clustered by participant and by "
                  "sentence (two-way cluster-robust variance, Korn-Graubard interval)")


def _accuracy_table(config, analysis, task: str) -> Table:
    """One task's accuracy table: a row per system and subcategory, kappas in the title.

    Args:
        config: the listening test's configuration.
        analysis: the result of ``analyse``.
        task: the task to tabulate.

    Returns:
        The table, ready to print.
    """
    kappas = "; ".join(_kappa(s, analysis.agreement.get((task, s), {})) for s in config.systems)
    table = Table(title=f"{task} (chance {spec.task(task).chance:.2f}; Fleiss' kappa "
                  f"{kappas})", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for col in ("system", "subcategory", "n", "correct", "acc", "95% CI", "p", "people",
                "sentences"):
        table.add_column(col, justify="left" if col in ("system", "subcategory")
                         else "right", no_wrap=True)
    for row in (r for r in analysis.accuracy if r.task == task):
        st = row.stats
        table.add_row(lit(row.system), row.subcategory or "(all)", str(st.n), str(st.correct),
                      number(st.acc), f"{number(st.ci_low, '{:.2f}')}-{number(st.ci_high, '{:.2f}')}",
                      _p(st.p_value), str(row.participants), str(st.clusters),
                      end_section=not row.subcategory)
    return table


def _participants_table(screening: dict) -> Table:
    """The participants table: screening, headphone check, attention and accuracy, by arrival.

    Args:
        screening: participant id -> screening record.

    Returns:
        The table, ready to print.
    """
    people = Table(title="Participants", box=box.SIMPLE_HEAD)
    for col in ("participant", "screening", "headphones", "attention", "answered", "accuracy"):
        people.add_column(col, no_wrap=col == "screening")
    for s in sorted(screening.values(), key=lambda s: s.arrival):
        headphones = {True: "pass", False: "fail", None: "-"}[s.headphone_passed]
        people.add_row(lit(s.participant), lit(s.screening), headphones,
                       f"{s.catch_correct}/{s.catch_total}",
                       f"{s.answered}/{s.items}", f"{s.correct}/{s.questions} = {number(s.accuracy)}")
    return people


def _report_json(config, analysis, included: str) -> dict:
    """The figures ``report.json`` holds.

    Args:
        config: the listening test's configuration.
        analysis: the result of ``analyse``.
        included: the screening outcome that counts a participant as included.

    Returns:
        A JSON-ready dict (NaN still present; ``_no_nan`` removes it).
    """
    return {
        "title": config.title,
        "screening": {p: s.screening for p, s in analysis.screening.items()},
        "included_participants": sum(s.screening == included for s in analysis.screening.values()),
        "step4": [{"task": r.task, "system": r.system, "subcategory": r.subcategory,
                   "responses": r.responses, "correct": r.correct, "accuracy": r.accuracy}
                  for r in analysis.step4],
        "accuracy": [{"task": r.task, "system": r.system, "subcategory": r.subcategory,
                      "participants": r.participants, "sentences": r.stats.clusters,
                      "chance": spec.task(r.task).chance, "p_chance": r.stats.p_value,
                      **{k: getattr(r.stats, k) for k in r.stats.__dataclass_fields__
                         if k not in ("clusters", "p_value")}}
                     for r in analysis.accuracy],
        "agreement": [{"task": t, "system": s, **v} for (t, s), v in analysis.agreement.items()],
        "participants": [{**s.__dict__, "accuracy": s.accuracy}
                         for s in analysis.screening.values()],
    }


def _write_charts(config, analysis, out: Path, plot_task) -> list:
    """Draw one accuracy chart per task that has responses, replacing any earlier run's charts.

    Args:
        config: the listening test's configuration.
        analysis: the result of ``analyse``.
        out: the report directory.
        plot_task: the chart-drawing function from the analysis module.

    Returns:
        The paths of the charts written; those drawn before matplotlib turns out to be
        missing are kept, and a note is printed.
    """
    charts = []
    for task in config.tasks:  # an earlier run's charts never stand beside this report
        (out / f"{task}.png").unlink(missing_ok=True)
    try:
        for task in config.tasks:
            if any(r.task == task and r.stats.n for r in analysis.accuracy):
                png = out / f"{task}.png"
                plot_task(config, analysis.accuracy, task, png)
                charts.append(png)
    except ImportError:
        console.print("[yellow]no charts: pip install matplotlib[/yellow]")
    return charts


def _report(test, out, include_incomplete):
    """Print a listening test's results and write ``report.json`` and per-task charts.

    Args:
        test: the listening test's directory.
        out: the report directory; ``<test>/report`` when empty.
        include_incomplete: also count participants who did not finish.
    """
    from adept_eval.listening_test.analysis import INCLUDED, analyse, plot_task

    config, store = _open(test)
    analysis = analyse(config, store, include_incomplete=include_incomplete)
    _print_header(config, analysis, include_incomplete)
    for task in config.tasks:
        print_whole(console, _accuracy_table(config, analysis, task))
    print_whole(console, _participants_table(analysis.screening))
    out = Path(out) if out else Path(test) / "report"
    out.mkdir(parents=True, exist_ok=True)
    report = _report_json(config, analysis, INCLUDED)
    (out / "report.json").write_text(json.dumps(_no_nan(report), indent=1), encoding="utf-8")
    charts = _write_charts(config, analysis, out, plot_task)
    console.print(f"written: {lit(out / 'report.json')}" + (f" and {len(charts)} charts" if charts
                                                         else ""))


def _no_nan(x):
    """JSON has no NaN: an undefined figure (no responses) is written as null."""
    from adept_eval.results.formatting import nan_as_null

    return nan_as_null(x)


def cmd_report(args):
    """``listening-test report``: the results printed, with ``report.json`` and charts.

    Args:
        args: the parsed command line (``test``, ``output``, ``include_incomplete``).

    Returns:
        0.
    """
    _report(args.test, args.output, args.include_incomplete)
    return 0


def cmd_plan(args):
    """``listening-test plan``: participants per system -> power, and the recommendation."""
    from adept_eval.listening_test.plan import describe_design, describe_model, plan, recommendation

    result = plan(args.difference, pilot=args.pilot, power=args.power, alpha=args.alpha,
                  simulations=args.simulations, seed=args.seed, questions=args.questions,
                  accuracy=args.accuracy, tasks=args.tasks, systems=args.systems)
    table = Table(title=f"Power to detect an accuracy difference of {result.difference:g} "
                  "between two systems", box=box.SIMPLE_HEAD, pad_edge=False,
                  title_justify="left")
    for col in ("participants per system (each task)", "participants in all",
                "responses per system", "power", "+- (MC s.e.)", "simulated tests"):
        # never narrower than its longest word: headers wrap between words, never inside one
        table.add_column(col, justify="right", overflow="fold",
                         min_width=max(len(w) for w in col.split()))
    for n, p, se in result.rows:
        table.add_row(str(n), str(n * result.systems), str(n * result.questions), f"{p:.3f}",
                      f"{se:.3f}", str(result.simulations))
    print_whole(console, table)
    console.print(describe_design(result))
    console.print(describe_model(result))
    console.print(recommendation(result))
    return 0
