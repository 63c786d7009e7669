"""The calibrated profiles against the published two-GPU comparison.

    .venv/bin/python -m benchmarks.sim_calibration            # virtual clock only (~5 s)
    .venv/bin/python -m benchmarks.sim_calibration --http     # plus the C1 cell over HTTP

Each published cell (same request counts and concurrency; outputs drawn like the
simulator draws them at maximum reasoning effort) is played on the virtual clock
through the same scheduler and cost model the server runs, and the p50s are printed
next to the published ones with their ratio. ``--http`` also runs the ~31.6K C1 cell
against a live server at time scale 5 and reports the client-measured figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from dataclasses import dataclass

import aiohttp

from simulator.launch import running
from simulator.output import draw_length
from simulator.profile import load_profile
from simulator.virtual import Job, Run, closed_loop

PROFILES = ("exl3-r11", "nvfp4-r2")


@dataclass(frozen=True)
class Cell:
    label: str
    prompt_tokens: int
    concurrency: int
    requests: int
    published: dict[str, tuple[float, float]]  # measure -> (exl3, nvfp4)


CELLS = (
    Cell(
        "~31.6K C1",
        31_600,
        1,
        8,
        {
            "effective prefill tok/s": (5011, 9002),
            "first output s": (6.31, 3.51),
            "visible TTFT s": (7.72, 4.12),
            "decode tok/s": (77.38, 201.49),
            "end-to-end s": (8.59, 4.43),
        },
    ),
    Cell("~31.6K C2", 31_600, 2, 8, {"visible TTFT s": (8.94, 9.54)}),
    Cell(
        "~252.3K C4",
        252_300,
        4,
        4,
        {
            "visible TTFT s": (195.38, 69.18),
            "aggregate output tok/s": (4.83, 6.21),
            "peak running": (4, 2),
            "peak KV usage %": (75.30, 26.54),
        },
    ),
)


def jobs(cell: Cell, seed: int = 42) -> list[Job]:
    spec = load_profile(PROFILES[0]).output
    out = []
    for index in range(cell.requests):
        rng = random.Random(seed + index)
        reasoning = draw_length(rng, spec.reasoning_median("max"), spec.length_sigma)
        visible = draw_length(rng, spec.visible_tokens_median, spec.length_sigma)
        out.append(Job(cell.prompt_tokens, reasoning + visible, reasoning))
    return out


def measures(cell: Cell, run: Run) -> dict[str, float]:
    t = run.timings
    p50 = statistics.median
    first = p50(x.ttfo for x in t)
    return {
        "effective prefill tok/s": cell.prompt_tokens / first,
        "first output s": first,
        "visible TTFT s": p50(x.ttft for x in t),
        "decode tok/s": p50(x.decode_rate for x in t),
        "end-to-end s": p50(x.e2e for x in t),
        "aggregate output tok/s": sum(x.tokens for x in t) / run.elapsed,
        "peak running": run.peak_running,
        "peak KV usage %": 100 * run.peak_kv_usage,
    }


def report_virtual() -> None:
    print(
        f"{'cell':<12} {'measure':<24} {'arm':<9} {'published':>10} {'simulated':>10} {'ratio':>6}"
    )
    for cell in CELLS:
        runs = {
            name: closed_loop(load_profile(name), jobs(cell), cell.concurrency) for name in PROFILES
        }
        for measure, published in cell.published.items():
            for arm, (name, run) in enumerate(runs.items()):
                simulated = measures(cell, run)[measure]
                ratio = simulated / published[arm]
                print(
                    f"{cell.label:<12} {measure:<24} {name:<9} {published[arm]:>10.2f} "
                    f"{simulated:>10.2f} {ratio:>6.2f}"
                )


async def http_c1(name: str, scale: float) -> dict[str, float]:
    cell = CELLS[0]
    body_text = uuid.uuid4().hex[:8] + " abc" * (cell.prompt_tokens - 40)
    args = ["--set", "timing.startup_s=0"]
    out: dict[str, list[float]] = {"effective prefill tok/s": [], "decode tok/s": []}
    timeout = aiohttp.ClientTimeout(total=600)
    with running(name, time_scale=scale, args=args) as sim:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            url = sim.url + "/v1/chat/completions"
            await one(session, url, "warm-up", 0)
            for seed in range(3):
                prompt_tokens, first, last, tokens = await one(session, url, body_text, seed)
                out["effective prefill tok/s"].append(prompt_tokens / first / scale)
                out["decode tok/s"].append((tokens - 1) / (last - first) / scale)
    return {k: statistics.median(v) for k, v in out.items()}


async def one(session: aiohttp.ClientSession, url: str, text: str, seed: int) -> tuple:
    body = {
        "messages": [{"role": "user", "content": f"{seed} {text}"}],
        "seed": seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    sent, first, last, usage = time.perf_counter(), None, None, None
    async with session.post(url, json=body) as response:
        async for line in response.content:
            now = time.perf_counter()
            if b'"usage"' in line and b'"choices":[]' in line:
                usage = line
            elif b'"delta":{"reasoning"' in line or b'"delta":{"content":"' in line:
                first, last = first or now, now
    if usage is None or first is None or last is None:
        raise RuntimeError(f"the stream from {url} ended without output or usage")
    counts = json.loads(usage.decode()[6:])["usage"]
    return counts["prompt_tokens"], first - sent, last - sent, counts["completion_tokens"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="also measure C1 over HTTP")
    parser.add_argument("--time-scale", type=float, default=5.0)
    args = parser.parse_args()
    report_virtual()
    if args.http:
        print(f"\n~31.6K C1 over HTTP at time scale {args.time_scale} (client-measured, p50 of 3)")
        for index, name in enumerate(PROFILES):
            for measure, value in asyncio.run(http_c1(name, args.time_scale)).items():
                published = CELLS[0].published[measure][index]
                print(
                    f"{name:<9} {measure:<24} published {published:>8.2f} http {value:>8.2f} "
                    f"ratio {value / published:.3f}"
                )


if __name__ == "__main__":
    main()
