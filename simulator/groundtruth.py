"""The ground-truth journal: when the server emitted every chunk of every request.

One JSON line per request, written and flushed when the request ends:

    {"request_id": "chatcmpl-…", "endpoint": "chat", "stream": true, "status": 200,
     "prompt_tokens": 31600, "completion_tokens": 180, "finish_reason": "stop",
     "arrival_ns": …, "arrival_wall_ns": …,
     "chunks": [["role", perf_ns, wall_ns, 0], ["reasoning", perf_ns, wall_ns, 1], …]}

``perf_ns`` is ``time.perf_counter_ns()`` taken just before the chunk was written to
the socket (CLOCK_MONOTONIC, shared by every process on the host, containers
included), ``wall_ns`` is ``time.time_ns()`` at the same moment, and the last field
is how many output tokens the chunk carries. Chunk kinds: role, reasoning, content,
text (completions), usage, done, response (a whole non-streamed body).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any


@dataclass
class RequestTrace:
    request_id: str
    endpoint: str
    stream: bool
    arrival_ns: int
    arrival_wall_ns: int
    chunks: list[tuple[str, int, int, int]] = field(default_factory=list)


class GroundTruth:
    """Appends one line per finished request; a no-op when no path was given."""

    def __init__(
        self,
        path: Path | None,
        *,
        clock: Callable[[], int] = time.perf_counter_ns,
        wall: Callable[[], int] = time.time_ns,
    ) -> None:
        self.clock = clock
        self.wall = wall
        self._handle: IO[str] | None = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            # held open for the server's lifetime; close() ends it
            self._handle = Path(path).open("a", encoding="utf-8")  # noqa: SIM115

    def start(self, request_id: str, endpoint: str, stream: bool, arrival_ns: int) -> RequestTrace:
        wall = self.wall() - (self.clock() - arrival_ns)
        return RequestTrace(request_id, endpoint, stream, arrival_ns, wall)

    def mark(self, trace: RequestTrace, kind: str, tokens: int = 0) -> None:
        """Call immediately before writing the chunk."""
        if self._handle is not None:
            trace.chunks.append((kind, self.clock(), self.wall(), tokens))

    def finish(self, trace: RequestTrace, **outcome: Any) -> None:
        if self._handle is None:
            return
        record = {
            "request_id": trace.request_id,
            "endpoint": trace.endpoint,
            "stream": trace.stream,
            **outcome,
            "arrival_ns": trace.arrival_ns,
            "arrival_wall_ns": trace.arrival_wall_ns,
            "chunks": trace.chunks,
        }
        self._handle.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def read_ground_truth(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a ground-truth journal, by request id (``chatcmpl-…``)."""
    with Path(path).open(encoding="utf-8") as handle:
        return {record["request_id"]: record for record in map(json.loads, handle)}
