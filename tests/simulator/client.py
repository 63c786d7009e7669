"""A minimal streaming client for the simulator's tests: real HTTP, arrival times kept.

Each SSE event is timestamped with ``perf_counter_ns`` when its line arrives, so
tests can compare token timing with the profile and with the server's journal.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass
class Event:
    data: Any  # the parsed JSON, or "[DONE]"
    arrival_ns: int


@dataclass
class Streamed:
    status: int
    sent_ns: int
    events: list[Event] = field(default_factory=list)
    error: Any = None

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events if isinstance(e.data, dict)]

    def deltas(self, key: str) -> list[Event]:
        """Events whose first choice carries non-empty ``key`` (content, reasoning, text)."""
        out = []
        for event in self.events:
            choices = event.data.get("choices") if isinstance(event.data, dict) else None
            if choices:
                part = choices[0].get("delta", choices[0])
                if part.get(key):
                    out.append(event)
        return out

    def text(self, key: str = "content") -> str:
        return "".join(
            e.data["choices"][0].get("delta", e.data["choices"][0])[key] for e in self.deltas(key)
        )

    @property
    def usage(self) -> dict[str, int]:
        return next(c["usage"] for c in self.chunks if c.get("usage"))

    @property
    def finish_reason(self) -> str | None:
        reasons = [c["choices"][0]["finish_reason"] for c in self.chunks if c["choices"]]
        return next((r for r in reasons if r), None)

    def output_times(self, *keys: str) -> list[int]:
        """Arrival times of chunks carrying output (reasoning and/or content)."""
        keys = keys or ("reasoning", "content", "text")
        return sorted({e.arrival_ns for k in keys for e in self.deltas(k)})


async def stream(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> Streamed:
    body = {**body, "stream": True}
    sent = time.perf_counter_ns()
    async with session.post(url, json=body) as response:
        result = Streamed(status=response.status, sent_ns=sent)
        if response.status != 200:
            result.error = await response.json()
            return result
        async for line in response.content:
            now = time.perf_counter_ns()
            text = line.decode().strip()
            if text.startswith("data: "):
                payload = text[6:]
                data = payload if payload == "[DONE]" else json.loads(payload)
                result.events.append(Event(data, now))
    return result


async def post(session: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with session.post(url, json=body) as response:
        return response.status, await response.json(content_type=None)


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as response:
        return response.status, await response.text()


def chat(content: str, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], **extra}
