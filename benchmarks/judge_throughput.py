"""Speech-judge client throughput against a self-hosted-style judge, on real compressed speech.

The judge is a loopback server in its own process (``testing.judge_server --fast``: one
asyncio protocol on uvloop when installed, listen backlog 1024, canned verdicts, request bytes
counted but not kept) that answers after a fixed latency; its own CPU per request is measured
and printed. Items are VStyle's real example responses (MP3,
22-44 kHz, mean ~11 s), cycled, each with its own instruction text, judged through the code path
``evaluate`` uses (``adept_eval.judge.judge``) over real HTTP. Every run is a fresh child
process, so its CPU time and peak RSS are its own; the clock runs around the ``judge()`` call
(imports come before it and are timed separately: once per process).

For each concurrency x latency it prints, side by side: items/s, the ideal (concurrency /
latency) and the share of it reached; the client's CPU ms per item (all threads) and the event
loop thread's share of it; peak RSS; where the wall time went - start-up (clock start to the
first complete request at the server), the steady flow (first request in to last answer out)
and the tail (last answer to ``judge()`` returning); the server's CPU ms per request, its
connections, and the 1-minute load average when the run ended. Rows:

- ``warm``: the audio checks of these files are cached (a rerun of the checks, or any run over
  files judged before), the verdicts are not (each run has its own instruction texts): this is
  the HTTP client's own speed;
- ``cold``: a fresh cache, so every file is decoded once to be checked (264 files: the first
  wave of a run over new responses), for the two headline cells (64 at 0.25 s, 256 at 2 s);
- a cached rerun (every verdict cached: no request, no decode), and a memory run (1,500 items at
  the top concurrency, fresh cache).

    python benchmarks/judge_throughput.py                       # the full grid (~4 min)
    python benchmarks/judge_throughput.py --concurrency 64 --latency 0.25   # one cell

Each run has enough items that fixed costs (session, cache, the summary) weigh no more than a
user would feel them: ``--seconds`` of ideal work, at least ``--waves`` waves of ``concurrency``
items, at most ``--max-items`` (1,500: the issue's measurement). ``ADEPT_EVAL_EVENT_LOOP``
(``uvloop`` / ``asyncio``) picks the event loop, as for any run; ``--loops asyncio uvloop``
repeats the headline cells under each, side by side.
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
sys.path.insert(0, str(ROOT))

from adept_eval.errors import run_script
from adept_eval.options import arg_type

DEFAULT_AUDIO = ROOT.parent / "shared" / "data" / "vstyle_examples" / "en" / "wav"
HEADLINE = ((64, 0.25), (256, 2.0))  # the targets: >= 90% of ideal


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
    t = time.perf_counter()
    from adept_eval.judge import JudgeConfig, judge
    from adept_eval.judge.runner import JudgeRunner
    from adept_eval.llm.client import event_loop_name

    imports = time.perf_counter() - t
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
    cpu, loop_cpu, wall = time.process_time(), time.thread_time(), time.perf_counter()
    if args.profile:
        import cProfile

        prof = cProfile.Profile(time.process_time)  # CPU time: the machine may be busy
        out = prof.runcall(judge, items, cfg, progress=False)
        prof.dump_stats(args.profile)
    else:
        out = judge(items, cfg, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    loop_cpu = time.thread_time() - loop_cpu  # the calling thread runs the event loop
    JudgeRunner.__init__ = original
    print(json.dumps({"n": out["n"], "failed": out["n_failed"], "wall": wall, "cpu": cpu,
                      "loop_cpu": loop_cpu, "start": start, "end": start + wall,
                      "imports": imports, "loop": event_loop_name(),
                      "requests": out["n_requests"], "cached": out["n_cached_judgements"],
                      "decodes": decodes["checks"].decodes,
                      "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "details": sorted({it["detail"] for it in out["items"] if it["detail"]})[:3]}))
    return 0


class Server:
    """The loopback judge in its own process; its counters and CPU time on exit."""

    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "testing.judge_server", "--fast", "--latency", str(latency)],
            cwd=ROOT,  # the repository root: testing/ is not installed
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        self.stats: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.stats = json.loads(self.proc.stdout.readline() or "{}")
        self.proc.wait(timeout=30)


def run(n, conc, lat, cache, audio, tag, loop: str | None = None, passes: int = 1) -> dict:
    """One child run against a fresh server (``passes`` > 1: that many, one after the other,
    against the same server - verdicts are cached per server - and the last one's figures);
    the child's figures with the server's merged in."""
    env = dict(os.environ)
    if loop:
        env["ADEPT_EVAL_EVENT_LOOP"] = loop
    with Server(lat) as srv:
        cmd = [sys.executable, __file__, "--child", "--url", srv.url, "--items", str(n),
               "--concurrency", str(conc), "--cache", cache, "--audio", str(audio), "--tag", tag]
        for _ in range(passes):
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if res.returncode:
                break
    if res.returncode:
        raise SystemExit(f"run failed:\n{res.stderr[-2000:]}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    r["server"] = srv.stats
    r["load"] = os.getloadavg()[0]
    return r


HEADER = (f"{'checks':<6} {'loop':<7} {'conc':>4} {'lat s':>5} {'items':>5} {'items/s':>7} "
          f"{'ideal':>6} {'%ideal':>6} {'cpu ms':>6} {'loop ms':>7} {'RSS MB':>6} "
          f"{'start s':>7} {'steady s':>8} {'(ideal)':>7} {'tail s':>6} {'srv ms':>6} "
          f"{'conns':>5} {'failed':>6} {'load':>5}")


def row(label, conc, lat, r) -> str:
    """One run's figures; times from the server's stamps (same machine, same clock)."""
    s = r["server"]
    ideal = conc / lat if lat else float("nan")
    rate = r["n"] / r["wall"]
    first, last = s.get("first_request"), s.get("last_response")
    start = f"{first - r['start']:7.2f}" if first else f"{'-':>7}"
    steady = f"{last - first:8.2f}" if first and last else f"{'-':>8}"
    tail = f"{r['end'] - last:6.2f}" if last else f"{'-':>6}"
    srv = 1000 * s["cpu_seconds"] / s["requests"] if s.get("requests") else float("nan")
    return (f"{label:<6} {r['loop']:<7} {conc:>4} {lat:>5.2f} {r['n']:>5} {rate:>7.1f} "
            f"{ideal:>6.1f} {rate / ideal:>6.0%} {1000 * r['cpu'] / r['n']:>6.2f} "
            f"{1000 * r['loop_cpu'] / r['n']:>7.2f} {r['rss_mib']:>6.0f} {start} {steady} "
            f"{r['n'] * lat / conc:>7.2f} {tail} {srv:>6.2f} {s.get('connections', '-'):>5} "
            f"{r['failed']:>6} {r['load']:>5.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    whole = arg_type("a whole number of at least 1", whole=True, least=1)
    parser.add_argument("--concurrency", type=whole, nargs="+", default=[4, 16, 64, 256])
    parser.add_argument("--latency", nargs="+", default=[0.25, 2.0],
                        type=arg_type("seconds above 0", positive=True))
    parser.add_argument("--waves", type=whole, default=6, help="at least waves x concurrency items")
    parser.add_argument("--seconds", type=arg_type("0 or more seconds", least=0), default=20.0,
                        help="items per run: this many seconds of ideal work (capped)")
    parser.add_argument("--max-items", type=whole, default=1500)
    parser.add_argument("--memory-items", type=whole, default=1500)
    parser.add_argument("--loops", nargs="*", default=[],
                        help="also run the headline cells under each of these event loops")
    parser.add_argument("--audio", default=str(DEFAULT_AUDIO), help="folder of MP3/WAV responses")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--items", type=whole, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.concurrency = args.concurrency[0]
        return child(args)

    audio = Path(args.audio)
    if not audio.is_dir():
        parser.error(f"argument --audio: {audio}: no such folder (give --audio DIR with MP3/WAV "
                     f"responses)")
    files = [p for p in audio.iterdir() if p.suffix.lower() in (".mp3", ".wav")]
    if not files:
        parser.error(f"argument --audio: no .mp3/.wav files in {audio}")
    mean_kb = sum(p.stat().st_size for p in files) / len(files) / 1000
    work = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    warm_cache = str(work / "cache.sqlite")
    load = os.getloadavg()
    print(f"{len(files)} response files in {audio} (mean {mean_kb:.0f} kB), {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("judge: loopback server in its own process (uvloop when installed, backlog 1024, "
          "canned verdicts); 'srv ms' = its CPU per request while serving")
    top = max(args.concurrency)

    def count(conc: int, lat: float) -> int:
        return max(args.waves * conc, min(args.max_items, round(args.seconds * conc / lat)))

    cells = [(c, lat) for lat in args.latency for c in args.concurrency]
    headline = [cell for cell in HEADLINE if cell in cells] or cells[:1]
    print(HEADER, flush=True)
    fresh = iter(range(10 ** 6))
    # cold: a fresh cache, every file decoded once for its check (this also fills the warm cache)
    for conc, lat in headline:
        r = run(count(conc, lat), conc, lat, str(work / f"cold{next(fresh)}.sqlite"), audio,
                f"cold-c{conc}-l{lat}")
        print(row("cold", conc, lat, r), flush=True)
    r = run(len(files), min(64, top), args.latency[0], warm_cache, audio, "fill")  # checks in
    imports = r["imports"]
    for conc, lat in cells:
        r = run(count(conc, lat), conc, lat, warm_cache, audio, f"c{conc}-l{lat}")
        print(row("warm", conc, lat, r), flush=True)
    for loop in args.loops:
        for conc, lat in headline:
            r = run(count(conc, lat), conc, lat, warm_cache, audio, f"{loop}-c{conc}-l{lat}", loop)
            print(row("warm", conc, lat, r), flush=True)
    print(f"ideal = concurrency / latency; start = clock start to the first complete request at "
          f"the server; steady = first request in to last answer out, (ideal) = items x latency "
          f"/ concurrency; tail = last answer out to judge() returning. Importing "
          f"adept_eval.judge took {imports:.2f} s (once per process, before the clock).")
    # cached rerun: the same items as the last warm cell of the top concurrency, asked twice of
    # one server (verdicts are cached per server); the second pass has every verdict cached
    conc, lat = top, args.latency[-1]
    r = run(count(conc, lat), conc, lat, warm_cache, audio, f"c{conc}-l{lat}", passes=2)
    print(f"cached rerun of {r['n']} items: {1000 * r['wall'] / r['n']:.2f} ms/item wall, "
          f"{1000 * r['cpu'] / r['n']:.2f} ms/item CPU, {r['cached']} cache hits, "
          f"{r['requests']} requests, {r['decodes']} decodes (load {r['load']:.2f})")
    # memory: many items at the top concurrency, fresh cache (every file decoded once)
    r = run(args.memory_items, top, lat, str(work / "mem.sqlite"), audio, "memory")
    print(f"memory: {r['n']} items at concurrency {top}, latency {lat:g} s, checks cold: peak RSS "
          f"{r['rss_mib']:.0f} MiB, {r['n'] / r['wall']:.1f} items/s "
          f"({r['n'] / r['wall'] / (top / lat):.0%} of ideal), {r['failed']} failed, "
          f"{r['server'].get('connections')} connections (load {r['load']:.2f})")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
