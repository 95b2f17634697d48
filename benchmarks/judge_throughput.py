"""Speech-judge throughput against a loopback judge with fixed latency.

Prints items/second at concurrency 1, 4 (VStyle's default), 16 and 64 as a fraction of the ideal
(concurrency / latency), the time of a fully cached rerun, and peak memory (max RSS) while
judging 1,500 items. Everything runs on 127.0.0.1 through the real openai SDK.

    python benchmarks/judge_throughput.py [--latency 0.25] [--items 64]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from adept_eval.judge import JudgeConfig, JudgeItem, judge  # noqa: E402
from adept_eval.testing.judge_server import JudgeServer  # noqa: E402


def make_items(folder: Path, n: int, seconds: float = 1.0) -> list[JudgeItem]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    items = []
    t = np.arange(int(16000 * seconds)) / 16000
    for i in range(n):
        path = folder / f"r{i:05d}.wav"
        if not path.exists():
            f0 = 120 + 80 * rng.random()
            x = 0.2 * np.sin(2 * np.pi * f0 * t) + 0.01 * rng.standard_normal(t.size)
            sf.write(path, x.astype(np.float32), 16000)
        items.append(JudgeItem(str(path), f"Say sentence {i} happily.", "instruction/emotion",
                               item_id=str(i)))
    return items


class ServerProcess:
    """The loopback judge in its own process, so it does not share this one's GIL."""

    def __init__(self, latency: float):
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "adept_eval.testing.judge_server", "--latency", str(latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        self.requests = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.25, help="judge latency, seconds")
    parser.add_argument("--items", type=int, default=64, help="items per throughput run")
    parser.add_argument("--memory-items", type=int, default=1500)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    items = make_items(work / "audio", max(args.items, 256, args.memory_items))

    print(f"loopback judge (separate process), latency {args.latency:.2f} s")
    print(f"{'concurrency':>11} {'items':>6} {'wall':>8} {'items/s':>8} {'ideal':>8} {'of ideal':>9}")
    with ServerProcess(args.latency) as server:
        # warm-up: imports and the HTTP client's first connection are not throughput
        judge(items[-2:], JudgeConfig(model="bench", base_url=server.url, cache_path=""),
              progress=False)
        for conc in (1, 4, 16, 64):
            n = max(args.items, 4 * conc) if conc > 1 else 16  # at least four waves
            cfg = JudgeConfig(model="bench", base_url=server.url, concurrency=conc,
                              cache_path="")
            t = time.perf_counter()
            out = judge(items[:n], cfg, progress=False)
            wall = time.perf_counter() - t
            assert out["n_failed"] == 0
            ideal = min(conc, n) / args.latency
            rate = n / wall
            print(f"{conc:11d} {n:6d} {wall:7.2f}s {rate:8.1f} {ideal:8.1f} {rate / ideal:8.0%}")

    with JudgeServer(latency=args.latency) as server:
        cache = str(work / "cache.sqlite")
        cfg = JudgeConfig(model="bench", base_url=server.url, concurrency=16, cache_path=cache)
        judge(items[: args.items], cfg, progress=False)
        before = server.requests
        t = time.perf_counter()
        out = judge(items[: args.items], cfg, progress=False)
        cached = time.perf_counter() - t
        print(f"cached rerun of {args.items} items: {cached:.2f} s, "
              f"{server.requests - before} requests, {out['n_cached_judgements']} cache hits")

    with ServerProcess(0.02) as server:
        base = rss_mb()
        cfg = JudgeConfig(model="bench", base_url=server.url, concurrency=64, cache_path="")
        t = time.perf_counter()
        out = judge(items[: args.memory_items], cfg, progress=False)
        print(f"{args.memory_items} items (1 s audio each) at concurrency 64: "
              f"{time.perf_counter() - t:.1f} s, {out['n_failed']} failed; peak RSS "
              f"{rss_mb():.0f} MiB (before: {base:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
