"""Load on the listening-test server: N simulated participants at once over loopback.

    python benchmarks/listening_test_load.py [--participants 100] [--think 3 0] [--ramp 0]
                                             [--client-processes 2] [--by-call]
                                             [--baseline REV] [--repeats N]

Builds a two-task test of a synthetic ADEPT's natural recordings, starts
`adept-eval listening-test serve` in its own process, and lets N participants (httpx, asyncio,
in one client process or split over ``--client-processes``) take the whole test at once:
session, consent, headphone check (fetching its tones), every sample of every question (as a
browser's media element asks for it, once), every answer. ``--think`` is the mean pause in
seconds a person takes on each page before sending it (reading the consent page, each
headphone trial, each question): 3 s is a fast but real listener; 0 answers as fast as the
server replies, a stress test far beyond real people. Everyone arrives in the same instant
unless ``--ramp`` spreads the arrivals over that many seconds.

Printed per row: response times of API calls as the clients saw them (client p50/p95/p99) and
as the server spent them (its Server-Timing header: from the request reaching the app to the
response starting; the difference is queueing in the client process, the kernel and uvicorn),
audio fetches, CPU used by the client process(es) and the server (% of one core over the
row's wall time: a client near 100% is itself the bottleneck), the time they were ready to run
but waited for a CPU taken by other work (Linux schedstat, % of wall time), the load average
before and after (other work on the machine inflates every figure), and a check that every
acknowledged answer is stored exactly once. ``--by-call`` adds the same figures per kind of call.

``--baseline REV`` compares the server of git revision REV (say, the commit before a change)
with the current code in the same run: REV's ``adept_eval`` is taken from git (``git archive``,
nothing in the working tree changes), builds its own test with its own code, and serves it from
its own process, while the clients are the current ones for both (so only the server differs).
Rows alternate between the two (baseline, current, current, baseline... for ``--repeats N``
rows each), since the load from other work on a shared machine drifts over minutes, and a
summary gives each figure's median over the repeats, side by side, with current/baseline
ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# the simulated crowd (testing.crowd) is not installed: it is imported from the repository root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adept_eval.listening_test.design import load_test  # noqa: E402
from testing.crowd import ServerProcess, crowd  # noqa: E402

TASKS = ["adept_propositional_attitude_female", "adept_syntactic_phrasing_female"]
REPO = Path(__file__).resolve().parent.parent
#: what a version's own code runs to build its test (corpus and test, as ``build_test`` of
#: that version makes them: the test's format changes between versions)
BUILD = """
import sys
from pathlib import Path
from adept_eval.corpora.corpus import Corpus
from adept_eval.listening_test.design import build_test
from adept_eval.corpora.synthetic import build_corpus
out = Path(sys.argv[1])
corpus = Corpus(build_corpus(out.parent / "adept"))
build_test(corpus, out, {"natural": None}, tasks=sys.argv[2].split(","), seed=1)
"""


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] * 1000 if xs else float("nan")


def lost_and_duplicated(test_dir: Path, outcomes) -> tuple[int, int, int]:
    with sqlite3.connect(test_dir / "responses.sqlite") as db:
        keys = {p: [i["key"] for i in json.loads(plan)["items"]]
                for p, plan in db.execute("SELECT participant, plan FROM participants")}
        rows = Counter(db.execute("SELECT participant, item FROM responses").fetchall())
    acked = Counter((o.participant, keys[o.participant][i]) for o in outcomes.values()
                    for i, _ in o.acknowledged)
    lost = len(set(acked) - set(rows))
    dup = sum(v - 1 for v in rows.values()) + sum(v - 1 for v in acked.values())
    return lost, dup, sum(rows.values())


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of another process (Linux /proc); NaN where there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_queue_wait(pid: int | str = "self") -> float:
    """Seconds the process's threads spent ready to run but waiting for a CPU (Linux
    schedstat): the cost of sharing the machine with other work; NaN where unknown."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return sum(int((t / "schedstat").read_text().split()[1]) for t in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return float("nan")


def load_average() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


async def warm_up(url: str) -> None:
    """A few requests that touch no participant, so the client's first-use costs (lazy
    imports, connection machinery) are not counted in the first participants' responses."""
    import httpx

    async with httpx.AsyncClient(base_url=url) as client:
        for _ in range(3):
            (await client.get("/healthz")).raise_for_status()


def share(url: str, test_dir: str, first: int, arrivals: list[float], think: float,
          start_at: float):
    """One client process's participants (numbered from ``first``, arriving ``arrivals``
    seconds after ``start_at``, a ``time.time()`` shared by every client process, each set up
    by then); returns their outcomes, the CPU the process used and the time it waited for a
    CPU."""
    config = load_test(test_dir)
    asyncio.run(warm_up(url))
    time.sleep(max(0.0, start_at - time.time()))
    c0, w0 = cpu_seconds(), run_queue_wait()
    outcomes = asyncio.run(crowd(url, config, len(arrivals), think=think, fetch_audio=True,
                                 arrivals=arrivals, first=first))
    return outcomes, cpu_seconds() - c0, run_queue_wait() - w0


def run_row(url: str, test_dir: Path, n: int, think: float, ramp: float, processes: int):
    processes = max(1, min(processes, n))
    # participant g arrives at ramp * g / n; process k takes g = k, k + K, k + 2K...
    arrivals = [[ramp * g / n for g in range(k, n, processes)] for k in range(processes)]
    firsts = [sum(len(a) for a in arrivals[:k]) for k in range(processes)]
    if processes == 1:
        start_at = time.time() + 1.0  # warmed up by then
        return (*share(url, str(test_dir), 0, arrivals[0], think, start_at),
                time.time() - start_at)
    outcomes, cpu, wait = {}, 0.0, 0.0
    with ProcessPoolExecutor(processes) as pool:
        start_at = time.time() + 3.0  # every process set up (imports, design, clients) by then
        futures = [pool.submit(share, url, str(test_dir), first, times, think, start_at)
                   for first, times in zip(firsts, arrivals)]
        for f in futures:
            part, used, waited = f.result()
            outcomes.update(part)
            cpu += used
            wait += waited
    return outcomes, cpu, wait, time.time() - start_at


class Version:
    """One server's code: the current tree (``root`` None, the installed package) or a git
    revision's ``adept_eval`` unpacked under ``root``; its test is built once by its own code
    and copied fresh for every row (a row's participants must be new to the server)."""

    def __init__(self, name: str, work: Path, root: Path | None = None):
        self.name, self.root = name, root
        self.env = None if root is None else {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(root),
                                                        os.environ.get("PYTHONPATH")]))}
        self.built = work / f"built-{name}" / "test"
        self.built.parent.mkdir(parents=True)
        subprocess.run([sys.executable, "-c", BUILD, str(self.built), ",".join(TASKS)],
                       env={**os.environ, **(self.env or {})}, check=True)
        # a simulated crowd comes from one address: lift the per-address limits on new sessions
        # and connections where the server has them (older servers have neither the limits
        # nor the options); and its pauses (--think) are not the samples' durations: no
        # listening time, so every row sends the same requests whatever the server's version
        usage = subprocess.run([sys.executable, "-m", "adept_eval.cli", "listening-test",
                                "serve", "--help"], env={**os.environ, **(self.env or {})},
                               capture_output=True, text=True, check=True).stdout
        lifted = (("--new-sessions-per-minute", "1000000"),
                  ("--max-connections-per-address", "100000"), ("--min-listening", "0"))
        self.args = tuple(part for option in lifted if option[0] in usage for part in option)

    def fresh_test(self, dest: Path) -> Path:
        shutil.copytree(self.built, dest)
        return dest


def unpack_revision(rev: str, dest: Path) -> Path:
    """The ``adept_eval`` package of git revision ``rev``, written under ``dest``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev,
                              "adept_eval"], capture_output=True, check=True).stdout
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest)
    return dest


def measure(version: Version, test_dir: Path, args, think: float) -> dict:
    """One row: the crowd against ``version``'s server; its figures, by name."""
    before = load_average()
    with ServerProcess(test_dir, args=version.args, env=version.env) as server:
        pid = server.proc.pid
        s0, sw0 = process_cpu_seconds(pid), run_queue_wait(pid)
        outcomes, client_cpu, client_wait, wall = run_row(
            server.url, test_dir, args.participants, think, args.ramp, args.client_processes)
        server_cpu = process_cpu_seconds(pid) - s0
        server_wait = run_queue_wait(pid) - sw0
    calls = [c for o in outcomes.values() for c in o.calls]
    api = [c[2] for c in calls if c[1] != "audio"]
    srv = [c[3] for c in calls if c[1] != "audio" and c[3] is not None]
    audio = [c[2] for c in calls if c[1] == "audio"]
    lost, dup, _ = lost_and_duplicated(test_dir, outcomes)
    by = defaultdict(list)
    for _, what, took, server_took in calls:
        by[what].append((took, server_took))
    return {"code": version.name, "think": think,
            "people": sum(o.stage == "done" for o in outcomes.values()),
            "answers": sum(len(o.acknowledged) for o in outcomes.values()), "api": len(api),
            **{f"client p{q}": pct(api, q) for q in (50, 95, 99)},
            **{f"server p{q}": pct(srv, q) for q in (50, 95, 99)},
            "audio": len(audio), "audio p95": pct(audio, 95),
            "client cpu": 100 * client_cpu / wall, "server cpu": 100 * server_cpu / wall,
            "client wait": 100 * client_wait / wall, "server wait": 100 * server_wait / wall,
            "wall": wall, "lost": lost, "dup": dup, "load": f"{before} -> {load_average()}",
            "by": by}


def ms(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def three(row: dict, side: str) -> str:
    return "/".join(ms(row[f"{side} p{q}"]) for q in (50, 95, 99))


def print_row(row: dict, width: int) -> None:
    cpu = f"{row['client cpu']:.0f}%/{row['server cpu']:.0f}%"
    waits = f"{row['client wait']:.0f}%/{row['server wait']:.0f}%"
    print(f"{row['code']:<{width}} {row['think']:>5.1f} {row['people']:>6} {row['answers']:>7} "
          f"{row['api']:>5} {three(row, 'client'):>18} {three(row, 'server'):>18} "
          f"{row['audio']:>5} {row['audio p95']:>9.1f} {cpu:>10} {waits:>9} "
          f"{row['wall']:>6.1f} {row['lost']:>4} {row['dup']:>3}  {row['load']}", flush=True)


FIGURES = ["client p50", "client p95", "client p99", "server p50", "server p95", "server p99",
           "audio p95", "server cpu", "wall"]


def print_summary(rows: list[dict], names: list[str]) -> None:
    """Each figure's median over the repeats, per version, and current/baseline."""
    base, cur = names
    print(f"\nmedians over the repeats (ms; server CPU % of a core; wall s) and {cur}/{base}; "
          f"n = repeats per version")
    print(f"{'think':>5} {'figure':<11} {base:>10} {cur:>10} {'ratio':>6} {'n':>7}")
    for think in dict.fromkeys(r["think"] for r in rows):
        n = {name: sum(1 for r in rows if r["think"] == think and r["code"] == name)
             for name in names}
        for figure in FIGURES:
            med = {name: statistics.median(r[figure] for r in rows
                                           if r["think"] == think and r["code"] == name)
                   for name in names}
            ratio = med[cur] / med[base] if med[base] else float("nan")
            print(f"{think:>5.1f} {figure:<11} {med[base]:>10.2f} {med[cur]:>10.2f} "
                  f"{ratio:>6.2f} {n[base]:>3}/{n[cur]:<3}")


def print_by_call(rows: list[dict]) -> None:
    print("\nper kind of call: n, client p50/p95/p99, server p50/p95/p99 (ms)")
    for row in rows:
        for what in ("/api/session", "/api/consent", "/api/headphone", "/api/answer",
                     "/api/state", "audio"):
            if what not in row["by"]:
                continue
            c = [x[0] for x in row["by"][what]]
            s = [x[1] for x in row["by"][what] if x[1] is not None]
            print(f"{row['code']} think {row['think']:>3.1f} {what:<15} {len(c):>5} "
                  f"{pct(c, 50):7.1f} {pct(c, 95):7.1f} {pct(c, 99):7.1f}   "
                  f"{pct(s, 50):6.1f} {pct(s, 95):6.1f} {pct(s, 99):6.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=100)
    ap.add_argument("--think", type=float, nargs="*", default=[3.0, 0.0])
    ap.add_argument("--ramp", type=float, default=0.0,
                    help="spread arrivals over this many seconds (0: all in the same instant)")
    ap.add_argument("--client-processes", type=int, default=2,
                    help="split the participants over this many client processes (at think 0 "
                         "one httpx process needs a whole core)")
    ap.add_argument("--by-call", action="store_true", help="figures per kind of call too")
    ap.add_argument("--baseline", metavar="REV",
                    help="also run the server of this git revision, alternating rows with the "
                         "current code, and print both side by side with ratios")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rows per think time and version (medians are printed with "
                         "--baseline)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        versions = [Version("current", tmp)]
        if args.baseline:
            rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short",
                                  args.baseline], capture_output=True, text=True,
                                 check=True).stdout.strip()
            versions.insert(0, Version(rev, tmp, unpack_revision(args.baseline, tmp / "base")))
        names = [v.name for v in versions]
        width = max(4, *map(len, names))
        print(f"{os.cpu_count()} CPUs; {args.participants} participants, arrivals "
              + (f"spread over {args.ramp:g} s" if args.ramp else "all in the same instant")
              + f", {args.client_processes} client process(es); times in ms")
        print(f"{'code':<{width}} {'think':>5} {'people':>6} {'answers':>7} {'API':>5} "
              f"{'client p50/p95/p99':>18} {'server p50/p95/p99':>18} {'audio':>5} "
              f"{'audio p95':>9} {'CPU cl/srv':>10} {'CPU wait':>9} {'wall s':>6} "
              f"{'lost':>4} {'dup':>3}  load avg before -> after")
        rows = []
        for think in args.think:
            for repeat in range(args.repeats):
                # ABBA: whichever ran second in one repeat runs first in the next
                order = versions if repeat % 2 == 0 else versions[::-1]
                for version in order:
                    test_dir = version.fresh_test(tmp / f"test-{version.name}-{think}-{repeat}")
                    row = measure(version, test_dir, args, think)
                    print_row(row, width)
                    rows.append(row)
                    shutil.rmtree(test_dir, ignore_errors=True)
        if len(versions) == 2:
            print_summary(rows, names)
        if args.by_call:
            print_by_call(rows)


if __name__ == "__main__":
    main()
