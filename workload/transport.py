"""Socket-level arrival times for aiohttp responses.

A coroutine that reads a stream resumes some time after its bytes arrived: when
32 streams receive a chunk in the same engine step, the event loop wakes their
readers one after the other, and the last one would stamp its chunk a couple of
milliseconds late. So the protocol stamps every socket read *before* parsing it
and records, per response body, "body bytes up to N had arrived by t". The
reader then dates each SSE event by the read that delivered its last byte.

This subclasses aiohttp's ``ResponseHandler`` and sets the connector's protocol
factory; both are aiohttp internals (3.x), so :func:`check_timed` refuses to run
if a future aiohttp no longer lets the stamps through (tests cover it too).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, cast

import aiohttp
from aiohttp.client_proto import ResponseHandler

from faceoff.errors import FaceoffError


class TimedResponseHandler(ResponseHandler):
    """aiohttp's response protocol, stamping each socket read before it is parsed."""

    def __init__(self, loop: Any, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        super().__init__(loop)
        self.clock = clock
        self.body: object | None = None  # the response body the marks belong to
        self.marks: list[tuple[int, int]] = []  # (body bytes received so far, perf_counter_ns)

    def data_received(self, data: bytes) -> None:
        arrived_ns = self.clock()
        before = self._payload
        super().data_received(data)
        body = before if before is not None else self._payload
        if body is None:
            return
        if body is not self.body:
            self.body, self.marks = body, []
        self.marks.append((body.total_bytes, arrived_ns))


class TimedConnector(aiohttp.TCPConnector):
    """A TCP connector whose connections use :class:`TimedResponseHandler`."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        factory = functools.partial(TimedResponseHandler, loop=self._loop, clock=clock)
        self._factory = cast("functools.partial[ResponseHandler]", factory)


class Arrivals:
    """Dates body offsets of one response from its protocol's marks."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        connection = resp.connection
        protocol = connection.protocol if connection is not None else None
        self._protocol = protocol if isinstance(protocol, TimedResponseHandler) else None
        self._body = resp.content
        self._next = 0

    @property
    def timed(self) -> bool:
        return self._protocol is not None

    def at(self, end_offset: int, fallback_ns: int) -> int:
        """When body byte ``end_offset`` (exclusive) had arrived; ``fallback_ns`` if unknown."""
        if self._protocol is None or self._protocol.body is not self._body:
            return fallback_ns
        marks = self._protocol.marks
        while self._next < len(marks) and marks[self._next][0] < end_offset:
            self._next += 1
        return marks[self._next][1] if self._next < len(marks) else fallback_ns


def check_timed(arrivals: Arrivals) -> None:
    if not arrivals.timed:
        raise FaceoffError(
            f"aiohttp {aiohttp.__version__} no longer uses faceoff's timed response protocol",
            where="workload.transport",
            fix="pin aiohttp to a 3.x release that workload/transport.py supports",
        )
