"""A closed-loop streaming load for the collector benchmarks, in its own process.

    .venv/bin/python -m benchmarks.collector_load URL --concurrency 32 --requests 64
        [--max-tokens 64] [--seconds S]

C streams each send chat completions (streamed, with usage) one after another
until ``--requests`` are done, or until ``--seconds`` have passed when given.
Each prompt starts with a unique nonce so no prefix is shared. Prints one JSON
line: requests ok/failed, summed usage, and the perf_counter_ns of the first
send and the last end (the cell window; CLOCK_MONOTONIC is shared by the
processes of a host, so the orchestrator can use it directly).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp


@dataclass
class Tally:
    ok: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    first_send_ns: int | None = None
    last_end_ns: int | None = None


@dataclass
class Load:
    session: aiohttp.ClientSession
    url: str
    model: str
    max_tokens: int
    requests: int
    deadline: float
    tally: Tally = field(default_factory=Tally)
    tickets: itertools.count[int] = field(default_factory=itertools.count)

    async def stream(self) -> None:
        """One of the C closed-loop streams: the next request as soon as one ends."""
        while next(self.tickets) < self.requests and time.monotonic() < self.deadline:
            await self.one_request()

    async def one_request(self) -> None:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": f"{uuid.uuid4().hex} Tell me about tides."}],
            "max_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        tally = self.tally
        sent = time.perf_counter_ns()
        if tally.first_send_ns is None:
            tally.first_send_ns = sent
        usage = await self._usage(body)
        tally.last_end_ns = time.perf_counter_ns()
        if usage is None:
            tally.failed += 1
            return
        tally.ok += 1
        tally.prompt_tokens += int(usage["prompt_tokens"])
        tally.completion_tokens += int(usage["completion_tokens"])

    async def _usage(self, body: dict[str, Any]) -> dict[str, Any] | None:
        usage = None
        try:
            async with self.session.post(f"{self.url}/v1/chat/completions", json=body) as response:
                response.raise_for_status()
                async for line in response.content:
                    if line.startswith(b"data: {"):
                        usage = json.loads(line[6:]).get("usage") or usage
        except (aiohttp.ClientError, TimeoutError):
            return None
        return usage


async def run(args: argparse.Namespace) -> Tally:
    url = args.url.rstrip("/")
    deadline = time.monotonic() + (args.seconds or float("inf"))
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{url}/v1/models") as response:
            model = (await response.json())["data"][0]["id"]
        load = Load(session, url, model, args.max_tokens, args.requests, deadline)
        await asyncio.gather(*(load.stream() for _ in range(args.concurrency)))
    return load.tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="base URL of the lane, e.g. http://127.0.0.1:8000")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=None, help="stop sending after this")
    args = parser.parse_args(argv)
    tally = asyncio.run(run(args))
    print(json.dumps(asdict(tally)), flush=True)
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
