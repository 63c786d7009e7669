"""A ~300K-token prompt through plan synthesis, the client and the simulator.

    .venv/bin/python -m benchmarks.client_big_prompt [--tokens 300000] [--requests 2]
        [--time-scale 10]

A simulator (`bench-200` profile: 400K context, 8M-token KV pool; prefill slowed to
40K → 20K tok/s over the context) serves a capacity-edge cell. Printed:

- plan synthesis: wall time, /tokenize round trips, target vs actual tokens, body size;
- per request, faceoff (`python -m workload.cell_client`) against a reference client
  (stdlib `http.client`, blocking, the same body bytes, clearly not a benchmark
  tool): "send → admitted" = the server's arrival stamp (taken after it read, parsed
  and tokenized the body) minus the client's send stamp, then the server's own
  arrival → first token, and the client-observed TTFT and E2E.

If "send → admitted" is the same for both clients, the client adds nothing to the
time the server needs to take in the prompt: the client is not the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from faceoff.formats.attempt.request_plan import PlanOptions, RequestPlan
from matrix.cell import Cell
from simulator.groundtruth import read_ground_truth
from simulator.launch import running
from workload.journal import read_journal
from workload.plan import build_plan
from workload.request import Body
from workload.runner import open_session
from workload.stream import SseFramer, StreamState
from workload.tokenizer import LaneTokenizer

REPO = Path(__file__).resolve().parents[1]
MODEL = "sim-bench"


def sim_args(truth: Path) -> list[str]:
    # bench-200 prefills at a flat 200K tok/s; a slower, context-dependent curve is closer
    # to a real engine at 300K and makes the server, not the client, the slow side.
    curve = "timing.prefill_rate=[[0, 40000], [400000, 20000]]"
    return ["--set", curve, "--ground-truth", str(truth)]


async def make_plan(url: str, tokens: int, requests: int) -> tuple[RequestPlan, int, float]:
    cell = Cell.model_validate(
        {
            "id": "capacity-edge-300k",
            "kind": "capacity_edge",
            "input_tokens": tokens,
            "concurrency": 1,
            "requests": requests,
            "sampling": {"max_tokens": 32, "ignore_eos": True},
        }
    )
    started = time.perf_counter()
    async with open_session(clock=time.perf_counter_ns) as session:
        tokenizer = LaneTokenizer(session, url, MODEL)
        plan = await build_plan(
            cell, seed=3, namespace="big", model=MODEL, tokenizer=tokenizer, options=PlanOptions()
        )
    return plan, tokenizer.calls, time.perf_counter() - started


def reference_send(url: str, body: bytes) -> dict[str, Any]:
    """The same request through stdlib http.client: send stamp, SSE read, ids."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.netloc, timeout=600)  # "host:port"
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    send_ns = time.perf_counter_ns()
    conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
    resp = conn.getresponse()
    framer, state = SseFramer(), StreamState()
    while data := resp.read1(1 << 20):
        t_ns = time.perf_counter_ns()
        for payload, _end in framer.feed(data):
            state.observe(payload, t_ns)
    conn.close()
    return {
        "id": state.response_id,
        "send_ns": send_ns,
        "first": state.first_output_ns,
        "last": state.last_token_ns,
    }


def row(who: str, send_ns: int, first: int, last: int, truth: dict[str, Any]) -> tuple[str, float]:
    """The printed row and send→admitted in ms."""
    admitted = (truth["arrival_ns"] - send_ns) / 1e6
    served_first = next(p for k, p, _w, _n in truth["chunks"] if k in ("reasoning", "content"))
    prefill = (served_first - truth["arrival_ns"]) / 1e6
    text = (
        f"{who:11} {truth['prompt_tokens']:>8} {admitted:>11.1f} {prefill:>10.1f} "
        f"{(first - send_ns) / 1e6:>10.1f} {(last - send_ns) / 1e6:>10.1f}"
    )
    return text, admitted


def run_faceoff(url: str, plan: RequestPlan, work: Path) -> tuple[dict[str, Any], Path]:
    plan.write(work / "requests.json")
    command = [sys.executable, "-m", "workload.cell_client", "--plan", str(work / "requests.json")]
    command += ["--base-url", url, "--journal", str(work / "journal.jsonl")]
    done = subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])["summary"], work / "journal.jsonl"


def run_reference(url: str, plan: RequestPlan) -> list[dict[str, Any]]:
    """The same bodies with another nonce (so the prefix cache stays cold)."""
    return [
        reference_send(url, Body.of(r).wire(plan.model).replace(r.nonce.encode(), b"f" * 16, 1))
        for r in plan.requests
    ]


def report(journal: Path, references: list[dict[str, Any]], truth_path: Path) -> None:
    truth = read_ground_truth(truth_path)
    print(
        f"{'client':11} {'prompt':>8} {'send→adm ms':>11} {'prefill ms':>10} "
        f"{'TTFT ms':>10} {'E2E ms':>10}"
    )
    admitted: dict[str, list[float]] = {"faceoff": [], "http.client": []}
    for o in read_journal(journal).outcomes:
        times = (o.send_ns or 0, o.first_output_ns or 0, o.last_token_ns or 0)
        text, ms = row("faceoff", *times, truth[o.response_id or ""])
        admitted["faceoff"].append(ms)
        print(text)
    for ref in references:
        text, ms = row("http.client", ref["send_ns"], ref["first"], ref["last"], truth[ref["id"]])
        admitted["http.client"].append(ms)
        print(text)
    medians = {who: statistics.median(v) for who, v in admitted.items()}
    print(
        "median send→admitted ms: "
        + ", ".join(f"{who} {m:.1f}" for who, m in medians.items())
        + f"; faceoff / http.client = {medians['faceoff'] / medians['http.client']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=300_000)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--time-scale", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faceoff-big-") as tmp:
        work = Path(tmp)
        with running(
            "bench-200", time_scale=args.time_scale, args=sim_args(work / "truth.jsonl")
        ) as sim:
            plan, calls, seconds = asyncio.run(make_plan(sim.url, args.tokens, args.requests))
            print(
                f"plan: {len(plan.requests)} requests, target {args.tokens}, actual "
                f"{[r.input_tokens for r in plan.requests]}, {calls} /tokenize round trips "
                f"(fingerprint included), {seconds:.2f} s, body "
                f"{statistics.mean(r.wire_bytes for r in plan.requests) / 1e6:.2f} MB"
            )
            summary, journal = run_faceoff(sim.url, plan, work)
            references = run_reference(sim.url, plan)
        print(f"faceoff client summary: {summary}")
        report(journal, references, work / "truth.jsonl")
    print(f"time scale {args.time_scale:g}: server durations are simulated ÷ {args.time_scale:g}")


if __name__ == "__main__":
    main()
