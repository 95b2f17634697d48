"""Speech-judge client throughput against a self-hosted-style judge, on real compressed speech.

The judge is a loopback server in its own process (``testing.judge_server --fast``:
asyncio, listen backlog 1024, canned verdicts, no JSON parsing - near-zero CPU per request) that
answers after a fixed latency. Items are VStyle's real example responses (MP3, 22-44 kHz, mean
~11 s), cycled, each with its own instruction text, judged through ``evaluate``'s code path
(``adept_eval.judge.judge``) over real HTTP. Every run is a fresh child process, so its
CPU time and peak RSS are its own.

For each concurrency x latency it prints items/s, the ideal (concurrency / latency), the share of
the ideal, the client's CPU ms per item (all threads), peak RSS, connections the server saw, and
requests. Audio checks (decode, silence) are cached by file hash, so the grid runs with the
checks warm - as a rerun, or any run over files judged before; the first row, with the checks
cold, shows what first sight of a file costs. Then a warm rerun (every verdict cached) and a
memory run (1,500 items at the top concurrency).

    python benchmarks/judge_throughput.py                       # the full grid (~2 min)
    python benchmarks/judge_throughput.py --concurrency 64 --latency 0.25   # one cell

Each run has enough items that fixed costs (session, cache, imports done lazily, the summary)
weigh no more than a user would feel them: ``--seconds`` of ideal work, at least ``--waves``
waves of ``concurrency`` items, at most ``--max-items`` (1,500: the issue's measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_AUDIO = ROOT.parent / "shared" / "data" / "vstyle_examples" / "en" / "wav"


def items_for(audio_dir: Path, n: int, tag: str) -> list:
    from adept_eval.judge import JudgeItem

    files = sorted(p for p in audio_dir.iterdir() if p.suffix.lower() in (".mp3", ".wav"))
    if not files:
        raise SystemExit(f"no .mp3/.wav files in {audio_dir}")
    return [JudgeItem(str(files[i % len(files)]), f"{tag}: say sentence {i} happily.",
                      "instruction/emotion", item_id=str(i)) for i in range(n)]


# ----------------------------------------------------------------------------- child: one run
def child(args) -> int:
    os.environ["TQDM_DISABLE"] = "1"
    from adept_eval.judge import JudgeConfig, judge
    from adept_eval.judge.runner import JudgeRunner

    items = items_for(Path(args.audio), args.items, args.tag)
    cfg = JudgeConfig(model="bench", base_url=args.url, concurrency=args.concurrency,
                      cache_path=args.cache, timeout=60, max_retries=2)
    decodes = {}
    original = JudgeRunner.__init__

    def spy(self, *a, **kw):  # remember the runner's audio checks to report their decodes
        original(self, *a, **kw)
        decodes["checks"] = self.client.checks

    JudgeRunner.__init__ = spy
    start = time.time()
    cpu, wall = time.process_time(), time.perf_counter()
    if args.profile:
        import cProfile

        prof = cProfile.Profile(time.process_time)  # CPU time: the machine may be busy
        out = prof.runcall(judge, items, cfg, progress=False)
        prof.dump_stats(args.profile)
    else:
        out = judge(items, cfg, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    JudgeRunner.__init__ = original
    print(json.dumps({"n": out["n"], "failed": out["n_failed"], "wall": wall, "cpu": cpu,
                      "start": start, "end": start + wall,
                      "requests": out["n_requests"], "cached": out["n_cached_judgements"],
                      "decodes": decodes["checks"].decodes,
                      "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "details": sorted({it["detail"] for it in out["items"] if it["detail"]})[:3]}))
    return 0


class Server:
    """The loopback judge in its own process; its request/connection counters on exit."""

    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "testing.judge_server", "--fast", "--latency", str(latency)],
            cwd=Path(__file__).resolve().parents[1],  # the repository root: testing/ is not installed
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        self.stats: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.stats = json.loads(self.proc.stdout.readline() or "{}")
        self.proc.wait(timeout=30)


def run(url, n, conc, cache, audio, tag) -> dict:
    cmd = [sys.executable, __file__, "--child", "--url", url, "--items", str(n),
           "--concurrency", str(conc), "--cache", cache, "--audio", str(audio), "--tag", tag]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"run failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def row(label, conc, lat, r, stats=None) -> str:
    ideal = conc / lat if lat else float("nan")
    rate = r["n"] / r["wall"]
    conns = stats.get("connections", "-") if stats else "-"
    return (f"{label:<7} {conc:>5} {lat:>6.2f} {r['n']:>6} {rate:>8.1f} {ideal:>7.1f} "
            f"{rate / ideal:>6.0%} {1000 * r['cpu'] / r['n']:>7.2f} {r['rss_mib']:>6.0f} "
            f"{r['decodes']:>7} {r['requests']:>6} {conns:>6} {r['failed']:>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[4, 16, 64, 256])
    parser.add_argument("--latency", type=float, nargs="*", default=[0.25, 2.0])
    parser.add_argument("--waves", type=int, default=6, help="at least waves x concurrency items")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="items per run: this many seconds of ideal work (capped)")
    parser.add_argument("--max-items", type=int, default=1500)
    parser.add_argument("--memory-items", type=int, default=1500)
    parser.add_argument("--audio", default=str(DEFAULT_AUDIO), help="folder of MP3/WAV responses")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--items", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.concurrency = args.concurrency[0]
        return child(args)

    audio = Path(args.audio)
    if not audio.is_dir():
        raise SystemExit(f"{audio}: no such folder (give --audio DIR with MP3/WAV responses)")
    files = [p for p in audio.iterdir() if p.suffix.lower() in (".mp3", ".wav")]
    mean_kb = sum(p.stat().st_size for p in files) / len(files) / 1000
    work = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    cache = str(work / "cache.sqlite")
    load = os.getloadavg()
    print(f"{len(files)} response files in {audio} (mean {mean_kb:.0f} kB), {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("judge: loopback server in its own process (asyncio, backlog 1024, canned verdicts)")
    print(f"{'checks':<7} {'conc':>5} {'lat s':>6} {'items':>6} {'items/s':>8} {'ideal':>7} "
          f"{'ideal%':>6} {'cpu ms':>7} {'RSS MB':>6} {'decodes':>7} {'reqs':>6} {'conns':>6} "
          f"{'failed':>6}")
    top = max(args.concurrency)

    def count(conc: int, lat: float) -> int:
        return max(args.waves * conc, min(args.max_items, round(args.seconds * conc / lat)))

    first_lat = args.latency[0]
    # cold checks: every file seen for the first time (decoded once, then by hash)
    conc0 = 64 if 64 in args.concurrency else top
    with Server(first_lat) as srv:
        r = run(srv.url, count(conc0, first_lat), conc0, cache, audio, "cold")
    print(row("cold", conc0, first_lat, r, srv.stats))
    for lat in args.latency:
        for conc in args.concurrency:
            n = count(conc, lat)
            with Server(lat) as srv:
                r = run(srv.url, n, conc, cache, audio, f"c{conc}-l{lat}")
            print(row("warm", conc, lat, r, srv.stats), flush=True)
    # warm rerun: the same items again, every verdict cached
    with Server(first_lat) as srv:
        tag = f"c{top}-l{args.latency[-1]}"
        r = run(srv.url, count(top, args.latency[-1]), top, cache, audio, tag)
    print(f"cached rerun of {r['n']} items: {1000 * r['wall'] / r['n']:.2f} ms/item wall, "
          f"{1000 * r['cpu'] / r['n']:.2f} ms/item CPU, {r['cached']} cache hits, "
          f"{r['requests']} requests, {r['decodes']} decodes")
    # memory: many items at the top concurrency, fresh checks cache (every file decoded once)
    lat = args.latency[-1]
    with Server(lat) as srv:
        r = run(srv.url, args.memory_items, top, str(work / "mem.sqlite"), audio, "memory")
    print(f"memory: {r['n']} items at concurrency {top}, latency {lat:g} s: peak RSS "
          f"{r['rss_mib']:.0f} MiB, {r['n'] / r['wall']:.1f} items/s "
          f"({r['n'] / r['wall'] / (top / lat):.0%} of ideal), {r['failed']} failed, "
          f"{srv.stats.get('connections')} connections")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
