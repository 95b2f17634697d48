"""Load on the listening-test server: N simulated participants at once over loopback.

    python benchmarks/listening_test_load.py [--participants 100] [--think 0 1]

Builds a two-task test of a synthetic ADEPT's natural recordings, starts
`adept-eval listening-test serve` in its own process, and lets N participants (httpx, one
asyncio process) take the whole test at once: session, consent, headphone check, every audio
file (as a browser fetches it, once), every answer. ``--think`` is the mean pause before each
answer in seconds (0: every participant answers as fast as the server replies, a stress test
far beyond real people, who take several seconds per question). Prints response-time
percentiles of API calls as the clients saw them and as the server spent them (its
Server-Timing header: the rest is queueing in the client and the kernel), of audio fetches, and
checks that every acknowledged answer is stored exactly once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

from adept_eval.corpus import Corpus
from adept_eval.listening_test.design import build_test, load_test
from adept_eval.listening_test.simulate import ServerProcess, crowd
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=100)
    ap.add_argument("--think", type=float, nargs="*", default=[0.0, 1.0])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = Corpus(build_corpus(tmp / "adept"))
        print(f"{'think s':>7} {'people':>6} {'answers':>7} {'API calls':>9} {'API p50':>8} "
              f"{'API p95':>8} {'API p99':>8} {'srv p95':>8} {'audio':>6} {'audio p95':>9} "
              f"{'wall s':>6} {'lost':>4} {'dup':>4}")
        for think in args.think:
            test_dir = tmp / f"test-{think}"
            build_test(corpus, test_dir, {"natural": None}, tasks=TASKS, seed=1)
            config = load_test(test_dir)
            with ServerProcess(test_dir) as server:
                t0 = time.perf_counter()
                outcomes = asyncio.run(crowd(server.url, config, args.participants, think=think,
                                             fetch_audio=True))
                wall = time.perf_counter() - t0
            api = [x for o in outcomes.values() for x in o.latencies]
            audio_lat = [x for o in outcomes.values() for x in o.audio_latencies]
            srv = [x for o in outcomes.values() for x in o.server_times]
            lost, dup, _ = lost_and_duplicated(test_dir, outcomes)
            answers = sum(len(o.acknowledged) for o in outcomes.values())
            done = sum(o.stage == "done" for o in outcomes.values())
            print(f"{think:>7.1f} {done:>6} {answers:>7} {len(api):>9} {pct(api, 50):>6.1f}ms "
                  f"{pct(api, 95):>6.1f}ms {pct(api, 99):>6.1f}ms {pct(srv, 95):>6.1f}ms "
                  f"{len(audio_lat):>6} "
                  f"{pct(audio_lat, 95):>7.1f}ms {wall:>6.1f} {lost:>4} {dup:>4}")


if __name__ == "__main__":
    main()
