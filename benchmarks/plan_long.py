"""The plan of a 300K-token cell against a lane whose ``/tokenize`` answers in 100 ms.

    make bench NAME=plan_long [ARGS="--tokens 300000 --requests 2 --rounds 3"]

A simulator (``bench-200`` profile: 400K context) with the ``tokenize_delay_s=0.1``
fault (every ``/tokenize`` sleeps 100 ms before it answers: a lane across a network,
or a busy tokenizer) serves ``build_plan`` for a capacity-edge cell of ``--requests``
scored requests of ``--tokens`` input tokens, over real HTTP on loopback, as the flow
builds it; then the candidate's ``retokenize`` of the same texts. Printed per round
and as medians: wall seconds, ``/tokenize`` round trips (the search's steps and the
tokenizer fingerprint), and the target vs actual tokens. The peer, in the same run:
the same plan against the same simulator without the delay, so that what the 100 ms
adds is the difference, and the floor: the round trips × 100 ms. Target: the plan
built in ≤ 2 s. Then the same as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from dataclasses import dataclass

import aiohttp

from faceoff.formats.attempt.request_plan import RequestPlan
from matrix.cell import Cell
from simulator.launch import running
from workload.plan import build_plan, retokenize
from workload.tokenizer import LaneTokenizer

MODEL = "sim-bench"
DELAY_S = 0.1
TARGET_S = 2.0


@dataclass(frozen=True)
class Timed:
    seconds: float
    calls: int
    plan: RequestPlan


def long_cell(tokens: int, requests: int) -> Cell:
    return Cell.model_validate(
        {
            "id": f"capacity-edge-{tokens // 1000}k",
            "kind": "capacity_edge",
            "input_tokens": tokens,
            "concurrency": 1,
            "requests": requests,
            "sampling": {"max_tokens": 32, "ignore_eos": True},
        }
    )


async def planned(url: str, cell: Cell, reference: RequestPlan | None = None) -> Timed:
    """``build_plan`` (or ``retokenize`` of ``reference``) on the lane, timed and counted."""
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, url, MODEL)
        if reference is not None:
            plan = await retokenize(reference, tokenizer, model=MODEL)
        else:
            plan = await build_plan(
                cell, seed=3, namespace="long", model=MODEL, tokenizer=tokenizer
            )
    return Timed(time.perf_counter() - started, tokenizer.calls, plan)


def rounds_on(delay_s: float, cell: Cell, rounds: int) -> list[tuple[Timed, Timed]]:
    """(build, retokenize) per round, each round a fresh tokenizer (no cache carried)."""
    args = ["--fault", f"tokenize_delay_s={delay_s}"]
    found = []
    with running("bench-200", time_scale=10.0, args=args) as sim:
        for _ in range(rounds):
            built = asyncio.run(planned(sim.url, cell))
            again = asyncio.run(planned(sim.url, cell, built.plan))
            found.append((built, again))
    return found


def medians(runs: list[tuple[Timed, Timed]]) -> dict[str, float]:
    return {
        "build_s": round(statistics.median(b.seconds for b, _ in runs), 3),
        "build_calls": statistics.median(b.calls for b, _ in runs),
        "retokenize_s": round(statistics.median(r.seconds for _, r in runs), 3),
        "retokenize_calls": statistics.median(r.calls for _, r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=300_000)
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cell = long_cell(args.tokens, args.requests)
    table = {}
    for delay in (DELAY_S, 0.0):
        runs = rounds_on(delay, cell, args.rounds)
        for built, again in runs:
            actual = [r.input_tokens for r in built.plan.requests]
            print(
                f"/tokenize +{delay * 1000:.0f} ms: build {built.seconds:.2f} s, {built.calls} "
                f"round trips, target {args.tokens}, actual {actual}; retokenize "
                f"{again.seconds:.2f} s, {again.calls} round trips"
            )
        table[f"delay_{delay * 1000:.0f}ms"] = medians(runs)
    slow, fast = table[f"delay_{DELAY_S * 1000:.0f}ms"], table["delay_0ms"]
    print(
        f"median build: {slow['build_s']:.2f} s with {slow['build_calls']:g} round trips of "
        f"{DELAY_S * 1000:.0f} ms (floor {slow['build_calls'] * DELAY_S:.1f} s; target ≤ "
        f"{TARGET_S:g} s) vs {fast['build_s']:.2f} s without the delay"
    )
    print(json.dumps({"tokens": args.tokens, "requests": args.requests, **table}))


if __name__ == "__main__":
    main()
