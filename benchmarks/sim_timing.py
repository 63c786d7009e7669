"""How faithfully the simulator emits tokens on time, and how late clients see them.

    .venv/bin/python -m benchmarks.sim_timing [--concurrency 1 4 32] [--tokens 300]

Runs the ``bench-200`` profile (5 ms decode steps: 200 tok/s per stream at any batch)
with the ground-truth journal on, streams ``--tokens`` tokens per request at each
concurrency, and prints, per level: the client-measured decode rate against the
profile's 200 tok/s, the server's inter-emission gaps against the 5 ms schedule, and
the delivery delay (client arrival − server emit, one monotonic clock) at p50/p99.
The C1 row is the unloaded peer of the others.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from evidence.stats.bootstrap import quantile
from simulator.groundtruth import read_ground_truth
from simulator.launch import running

STEP_MS = 5.0


async def one(session: aiohttp.ClientSession, url: str, tokens: int) -> tuple[str, list[int]]:
    body = {
        "messages": [{"role": "user", "content": "go"}],
        "max_tokens": tokens,
        "ignore_eos": True,
        "stream": True,
    }
    ident, arrivals = "", []
    async with session.post(url, json=body) as response:
        async for line in response.content:
            arrivals.append(time.perf_counter_ns())
            if not ident and line.startswith(b"data: {"):
                ident = json.loads(line[6:])["id"]
    return ident, arrivals


async def level(concurrency: int, tokens: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        truth = Path(folder) / "truth.jsonl"
        with running("bench-200", args=["--ground-truth", str(truth)]) as sim:
            timeout = aiohttp.ClientTimeout(total=300)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                url = sim.url + "/v1/chat/completions"
                results = await asyncio.gather(
                    *(one(session, url, tokens) for _ in range(concurrency))
                )
        records = read_ground_truth(truth)
    return summarise(results, records)


def summarise(results: list[tuple[str, list[int]]], records: dict) -> dict[str, float]:
    rates, gaps, delays = [], [], []
    for ident, arrivals in results:
        chunks = [
            c for c in records[ident]["chunks"] if c[0] in ("role", "content", "usage", "done")
        ]
        emits = [c[1] for c in chunks if c[0] == "content"]
        rates.append((len(emits) - 1) / ((emits[-1] - emits[0]) / 1e9))
        gaps += [(b - a) / 1e6 for a, b in itertools.pairwise(emits)]
        # SSE events and lines pair one to one: "data: …" then a blank separator line
        events = arrivals[0::2]
        delays += [
            (arrival - chunk[1]) / 1e6 for arrival, chunk in zip(events, chunks, strict=False)
        ]
    return {
        "decode tok/s p50": statistics.median(rates),
        "emit gap ms p50": statistics.median(gaps),
        "emit gap ms p99": quantile(sorted(gaps), 0.99),
        "delivery ms p50": statistics.median(delays),
        "delivery ms p99": quantile(sorted(delays), 0.99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 32])
    parser.add_argument("--tokens", type=int, default=300)
    args = parser.parse_args()
    print(f"profile bench-200: {1000 / STEP_MS:.0f} tok/s per stream, {STEP_MS} ms steps")
    for concurrency in args.concurrency:
        row = asyncio.run(level(concurrency, args.tokens))
        ratio = row["decode tok/s p50"] / (1000 / STEP_MS)
        cells = "  ".join(f"{k} {v:8.3f}" for k, v in row.items())
        print(f"C{concurrency:<3} {cells}  decode/profile {ratio:.4f}")


if __name__ == "__main__":
    main()
