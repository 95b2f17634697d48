"""Load on the listening-test server: N simulated participants at once over loopback.

    python benchmarks/listening_test_load.py [--participants 100] [--think 3 0] [--ramp 0]
                                             [--client-processes 2] [--by-call]

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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from adept_eval.corpus import Corpus
from adept_eval.listening_test.design import build_test, load_test
from adept_eval.listening_test.simulate import CROWD_ARGS, ServerProcess, crowd
from adept_eval.synthetic import build_corpus

TASKS = ["adept_propositional_attitude_female", "adept_syntactic_phrasing_female"]


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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = Corpus(build_corpus(tmp / "adept"))
        print(f"{os.cpu_count()} CPUs; {args.participants} participants, arrivals "
              + (f"spread over {args.ramp:g} s" if args.ramp else "all in the same instant")
              + f", {args.client_processes} client process(es); times in ms")
        print(f"{'think':>5} {'people':>6} {'answers':>7} {'API':>5} "
              f"{'client p50/p95/p99':>18} {'server p50/p95/p99':>18} {'audio':>5} "
              f"{'audio p95':>9} {'CPU cl/srv':>10} {'CPU wait':>9} {'wall s':>6} "
              f"{'lost':>4} {'dup':>3}  load avg before -> after")
        details = []
        for think in args.think:
            test_dir = tmp / f"test-{think}"
            build_test(corpus, test_dir, {"natural": None}, tasks=TASKS, seed=1)
            before = load_average()
            with ServerProcess(test_dir, args=CROWD_ARGS) as server:
                pid = server.proc.pid
                s0, sw0 = process_cpu_seconds(pid), run_queue_wait(pid)
                outcomes, client_cpu, client_wait, wall = run_row(
                    server.url, test_dir, args.participants, think, args.ramp,
                    args.client_processes)
                server_cpu = process_cpu_seconds(pid) - s0
                server_wait = run_queue_wait(pid) - sw0
            calls = [c for o in outcomes.values() for c in o.calls]
            api = [c[2] for c in calls if c[1] != "audio"]
            srv = [c[3] for c in calls if c[1] != "audio" and c[3] is not None]
            audio = [c[2] for c in calls if c[1] == "audio"]
            lost, dup, _ = lost_and_duplicated(test_dir, outcomes)
            answers = sum(len(o.acknowledged) for o in outcomes.values())
            done = sum(o.stage == "done" for o in outcomes.values())
            three = "/".join(f"{pct(api, q):.0f}" if pct(api, q) >= 10 else f"{pct(api, q):.1f}"
                             for q in (50, 95, 99))
            three_srv = "/".join(f"{pct(srv, q):.0f}" if pct(srv, q) >= 10
                                 else f"{pct(srv, q):.1f}" for q in (50, 95, 99))
            cpu = f"{100 * client_cpu / wall:.0f}%/{100 * server_cpu / wall:.0f}%"
            waits = f"{100 * client_wait / wall:.0f}%/{100 * server_wait / wall:.0f}%"
            print(f"{think:>5.1f} {done:>6} {answers:>7} {len(api):>5} {three:>18} "
                  f"{three_srv:>18} {len(audio):>5} {pct(audio, 95):>9.1f} {cpu:>10} "
                  f"{waits:>9} {wall:>6.1f} {lost:>4} {dup:>3}  {before} -> {load_average()}",
                  flush=True)
            by = defaultdict(list)
            for _, what, took, server_took in calls:
                by[what].append((took, server_took))
            details.append((think, by))
        if args.by_call:
            print("\nper kind of call: n, client p50/p95/p99, server p50/p95/p99 (ms)")
            for think, by in details:
                for what in ("/api/session", "/api/consent", "/api/headphone", "/api/answer",
                             "/api/state", "audio"):
                    if what not in by:
                        continue
                    c = [x[0] for x in by[what]]
                    s = [x[1] for x in by[what] if x[1] is not None]
                    print(f"think {think:>3.1f} {what:<15} {len(c):>5} "
                          f"{pct(c, 50):7.1f} {pct(c, 95):7.1f} {pct(c, 99):7.1f}   "
                          f"{pct(s, 50):6.1f} {pct(s, 95):6.1f} {pct(s, 99):6.1f}")


if __name__ == "__main__":
    main()
