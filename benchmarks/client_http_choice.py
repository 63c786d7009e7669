"""aiohttp or httpx for the streaming client: chunk timing error and CPU per chunk.

    .venv/bin/python -m benchmarks.client_http_choice [--streams 1,4,32] [--tokens 300]
        [--rate 200] [--repeats 3]

A small aiohttp SSE server (its own process) streams `--tokens` chat-completion
chunks per request; like an engine step, one tick every 1/`--rate` s writes a chunk
to every running stream, and the perf_counter_ns right after each write is kept.
Each client runs in its own process, as the cell client does, with C concurrent
streams, and feeds the same SSE parser (workload.stream), so the difference is the
library:

- aiohttp+socket: aiohttp with workload.transport's socket-read stamps (faceoff);
- aiohttp: plain aiohttp, stamped when the reading coroutine gets the bytes;
- httpx: httpx `aiter_raw`, stamped the same way.

CLOCK_MONOTONIC is shared by the processes of one host, so arrival − emit is the
client's timing error (plus loopback latency). Printed: per client and C, p50/p99
of that error and the client's CPU µs per chunk (process time over the run).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

import aiohttp
import httpx
from aiohttp import web

from evidence.stats.bootstrap import quantile
from workload.stream import SseFramer, StreamState
from workload.transport import Arrivals, timed_session

CHUNK = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m",'
    b'"choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}\n\n'
)
FINAL = (
    'data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":10,'
    '"completion_tokens":%d}}\n\ndata: [DONE]\n\n'
)


def serve(port: int, rate: int) -> None:
    """The SSE server: like an engine, one step emits a chunk to every running stream."""
    emits: dict[str, list[int]] = {}
    step = asyncio.Condition()

    async def ticker(app: web.Application) -> Any:
        async def run() -> None:
            start, k = time.perf_counter_ns(), 0
            while True:
                k += 1
                await asyncio.sleep(
                    max(0.0, (start + k * 1e9 / rate - time.perf_counter_ns()) / 1e9)
                )
                async with step:
                    step.notify_all()

        task = asyncio.create_task(run())
        yield
        task.cancel()

    async def stream(request: web.Request) -> web.StreamResponse:
        spec = await request.json()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        times = emits.setdefault(str(spec["id"]), [])
        for _ in range(spec["tokens"]):
            async with step:
                await step.wait()
            await resp.write(CHUNK)
            times.append(time.perf_counter_ns())
        await resp.write((FINAL % spec["tokens"]).encode())
        await resp.write_eof()
        return resp

    async def dump(request: web.Request) -> web.Response:
        text = json.dumps(emits)
        emits.clear()
        return web.Response(text=text)

    app = web.Application()
    app.cleanup_ctx.append(ticker)
    app.router.add_post("/stream", stream)
    app.router.add_post("/dump", dump)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _plain_session(**kwargs: Any) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), **kwargs)


async def _aiohttp_streams(
    url: str, specs: list[dict[str, Any]], socket_times: bool
) -> dict[str, list[int]]:
    arrivals: dict[str, list[int]] = {}
    session_of = timed_session if socket_times else _plain_session
    async with session_of(read_bufsize=1 << 20) as session:

        async def one(spec: dict[str, Any]) -> None:
            state, framer = StreamState(), SseFramer()
            async with session.post(url, json=spec) as resp:
                marks = Arrivals(resp)
                while data := await resp.content.readany():
                    t_ns = time.perf_counter_ns()
                    for payload, end in framer.feed(data):
                        state.observe(payload, marks.at(end, t_ns))
            arrivals[str(spec["id"])] = state.chunk_ns

        await asyncio.gather(*(one(s) for s in specs))
    return arrivals


async def _httpx_streams(url: str, specs: list[dict[str, Any]]) -> dict[str, list[int]]:
    arrivals: dict[str, list[int]] = {}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=None, limits=limits) as client:

        async def one(spec: dict[str, Any]) -> None:
            state, framer = StreamState(), SseFramer()
            async with client.stream("POST", url, json=spec) as resp:
                async for data in resp.aiter_raw():
                    t_ns = time.perf_counter_ns()
                    for payload, _end in framer.feed(data):
                        state.observe(payload, t_ns)
            arrivals[str(spec["id"])] = state.chunk_ns

        await asyncio.gather(*(one(s) for s in specs))
    return arrivals


def client(library: str, url: str, streams: int, tokens: int, rate: int) -> None:
    """One client run in this process; prints arrivals and CPU time as JSON."""
    specs = [
        {"tokens": tokens, "rate": rate, "id": f"{library}-{streams}-{i}"} for i in range(streams)
    ]
    runs = {
        "aiohttp": lambda: _aiohttp_streams(url, specs, socket_times=False),
        "aiohttp+socket": lambda: _aiohttp_streams(url, specs, socket_times=True),
        "httpx": lambda: _httpx_streams(url, specs),
    }
    gc.collect()
    gc.freeze()  # as workload.cell_client does: no full collection pauses mid-stream
    cpu = time.process_time()
    arrivals = asyncio.run(runs[library]())
    print(json.dumps({"arrivals": arrivals, "cpu_s": time.process_time() - cpu}))


def measure(library: str, base: str, streams: int, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, "-m", "benchmarks.client_http_choice", "--client", library]
    cmd += ["--url", base + "/stream", "--streams", str(streams)]
    cmd += ["--tokens", str(args.tokens), "--rate", str(args.rate)]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    with urllib.request.urlopen(urllib.request.Request(base + "/dump", method="POST")) as resp:
        emits = json.loads(resp.read())
    errors_ms = [
        (arrive - emit) / 1e6
        for key, arrived in out["arrivals"].items()
        for arrive, emit in zip(arrived, emits[key], strict=True)
    ]
    return {
        "p50_ms": statistics.median(errors_ms),
        "p99_ms": quantile(sorted(errors_ms), 0.99),
        "cpu_us_per_chunk": out["cpu_s"] * 1e6 / len(errors_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", type=int)
    parser.add_argument("--client")
    parser.add_argument("--url")
    parser.add_argument("--streams", default="1,4,32")
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--port", type=int, default=18931)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.rate)
    elif args.client:
        client(args.client, args.url, int(args.streams), args.tokens, args.rate)
    else:
        compare(args)


def compare(args: argparse.Namespace) -> None:
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "benchmarks.client_http_choice"),
            *("--serve", str(args.port), "--rate", str(args.rate)),
        ],
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        time.sleep(2.0)
        print(f"{'C':>4} {'library':15} {'p50 err ms':>11} {'p99 err ms':>11} {'CPU µs/chunk':>13}")
        for streams in (int(s) for s in args.streams.split(",")):
            for library in ("aiohttp+socket", "aiohttp", "httpx"):
                runs = [measure(library, base, streams, args) for _ in range(args.repeats)]
                row = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                print(
                    f"{streams:>4} {library:15} {row['p50_ms']:>11.3f} {row['p99_ms']:>11.3f} "
                    f"{row['cpu_us_per_chunk']:>13.1f}",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait()
    print(
        f"(medians of {args.repeats} runs; {args.tokens} chunks per stream at {args.rate}/s; "
        f"host cores: {os.cpu_count()})"
    )


if __name__ == "__main__":
    main()
