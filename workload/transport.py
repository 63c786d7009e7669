"""Socket-level arrival times for aiohttp responses.

A coroutine that reads a stream resumes some time after its bytes arrived: when
32 streams receive a chunk in the same engine step, the event loop wakes their
readers one after the other, and the last one would stamp its chunk a couple of
milliseconds late. So the protocol stamps every socket read *before* parsing it
and records, per response body, "body bytes up to N had arrived by t". The
reader then dates each SSE event by the read that delivered its last byte.

The read itself can be late too: while the loop ends requests and sends the next
ones, other streams' bytes wait in their sockets. Where the socket gives them
(``workload.rx_stamps``), a read is dated by the kernel's receive stamp of its last
packet, which no scheduling delays, or by the loop's wake-up where a later segment was
merged into the bytes the read takes; otherwise by the clock reading taken as the read
returned. Each mark says which (``STAMP_LETTERS``: k, w, r), each event's date carries
its mark's letter, and :class:`Arrivals` reports whether every event of a response was
dated from the socket (``kernel``: k or w) or not (``read``).

A request is dated the same way on the way out: aiohttp's ``on_request_chunk_sent``
trace runs just before it hands the request's bytes to the socket (no await
between), and calls the ``ON_SENT`` callback of the request's ``trace_request_ctx``.

The response takes its body's marks when its headers are parsed, before aiohttp
can release the connection: a short answer that arrives whole in one read is
finished, and its connection back in the pool, before the reader starts.

This subclasses aiohttp's ``ResponseHandler`` and ``ClientResponse`` and sets the
connector's protocol factory; these are aiohttp internals (3.x), so
:func:`check_timed` refuses to run if a future aiohttp no longer lets the stamps
through (tests cover it too).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, cast

import aiohttp
from aiohttp.client_proto import ResponseHandler

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import ArrivalStamps
from workload.rx_stamps import Source, stamp_receives

StampLetter = Literal["k", "w", "r"]
# the kernel's receive stamp, the loop's wake-up (a later segment merged in), the read's clock
STAMP_LETTERS: dict[Source, StampLetter] = {"kernel": "k", "wake": "w"}
READ: StampLetter = "r"


class Mark(NamedTuple):
    received: int  # body bytes received so far
    at_ns: int  # when they had arrived, on the session's clock
    stamp: StampLetter  # how ``at_ns`` was dated


class TimedResponseHandler(ResponseHandler):
    """aiohttp's response protocol, stamping each socket read before it is parsed."""

    def __init__(self, loop: Any, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        super().__init__(loop)
        self.clock = clock
        self.body: object | None = None  # the response body the marks belong to
        self.marks: list[Mark] = []
        self._socket_ns: int | None = None  # the socket's word on the read being handled
        self._socket_stamp: StampLetter = READ

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        stamp_receives(transport, self.clock, self._socket_read)

    def _socket_read(self, arrived_ns: int | None, source: Source) -> None:
        self._socket_ns, self._socket_stamp = arrived_ns, STAMP_LETTERS[source]

    def data_received(self, data: bytes) -> None:
        socket_ns, self._socket_ns = self._socket_ns, None
        stamp = self._socket_stamp if socket_ns is not None else READ
        arrived_ns = socket_ns if socket_ns is not None else self.clock()
        body = self._payload  # after a keep-alive answer: that answer's finished body
        received = _received(body)
        super().data_received(data)
        if body is not None and _received(body) != received:
            self._mark(body, arrived_ns, stamp)
        if self._payload is not body and self._payload is not None:  # the read began an answer
            self._mark(self._payload, arrived_ns, stamp)

    def _mark(self, body: object, arrived_ns: int, stamp: StampLetter) -> None:
        if body is not self.body:  # a new list: a response holding the old one keeps it whole
            self.body, self.marks = body, []
        self.marks.append(Mark(_received(body) or 0, arrived_ns, stamp))


def _received(body: object | None) -> int | None:
    return getattr(body, "total_bytes", None)


class TimedResponse(aiohttp.ClientResponse):
    """A response that keeps its body's arrival marks once its headers are parsed."""

    marks: list[Mark] | None = None

    async def start(self, connection: Any) -> aiohttp.ClientResponse:
        protocol = connection.protocol
        await super().start(connection)
        # No await since the headers were read: the connection cannot have served
        # another answer yet, even if this one is complete and already released.
        if isinstance(protocol, TimedResponseHandler) and protocol.body is self.content:
            self.marks = protocol.marks
        return self


class TimedConnector(aiohttp.TCPConnector):
    """A TCP connector whose connections use :class:`TimedResponseHandler`."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        factory = functools.partial(TimedResponseHandler, loop=self._loop, clock=clock)
        self._factory = cast("functools.partial[ResponseHandler]", factory)


ON_SENT = "on_sent"  # trace_request_ctx key: called with the clock as the bytes are written


def send_trace(clock: Callable[[], int]) -> aiohttp.TraceConfig:
    """Calls a request's ``trace_request_ctx[ON_SENT]`` as its bytes go to the socket."""

    async def chunk_sent(_session: object, context: Any, _params: object) -> None:
        on_sent = (context.trace_request_ctx or {}).get(ON_SENT)
        if on_sent is not None:
            on_sent(clock())

    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(chunk_sent)
    return trace


def timed_session(
    clock: Callable[[], int] = time.perf_counter_ns, **kwargs: Any
) -> aiohttp.ClientSession:
    """A session that dates request writes and response reads (no connection limit)."""
    connector = TimedConnector(clock=clock, limit=0, keepalive_timeout=120)
    return aiohttp.ClientSession(
        connector=connector,
        response_class=TimedResponse,
        trace_configs=[send_trace(clock)],
        **kwargs,
    )


class Arrivals:
    """Dates body offsets of one response from its arrival marks."""

    def __init__(self, marks: list[Mark] | None) -> None:
        self._marks = marks
        self._next = 0
        self._dated = 0
        self._by_socket = 0
        self.stamp: StampLetter = READ  # how the last offset asked about was dated

    @classmethod
    def of(cls, resp: aiohttp.ClientResponse) -> Arrivals:
        return cls(resp.marks if isinstance(resp, TimedResponse) else None)

    @property
    def timed(self) -> bool:
        return self._marks is not None

    @property
    def stamps(self) -> ArrivalStamps | None:
        """``kernel`` when every offset asked about was dated from the socket (the kernel's
        receive stamp, or the loop's wake-up), ``read`` when any was not; None before any
        was asked about."""
        if not self._dated:
            return None
        return "kernel" if self._by_socket == self._dated else "read"

    def at(self, end_offset: int, fallback_ns: int) -> int:
        """When body byte ``end_offset`` (exclusive) had arrived; ``fallback_ns`` if unknown."""
        marks, self._dated, self.stamp = self._marks, self._dated + 1, READ
        if marks is None:
            return fallback_ns
        while self._next < len(marks) and marks[self._next].received < end_offset:
            self._next += 1
        if self._next == len(marks):
            return fallback_ns
        mark = marks[self._next]
        self.stamp = mark.stamp
        self._by_socket += mark.stamp != READ
        return mark.at_ns


def check_timed(arrivals: Arrivals, send_ns: int | None) -> None:
    """Refuse a response that carries no arrival marks, or a request whose write went unseen."""
    if not arrivals.timed or send_ns is None:
        missing = "timed response protocol" if not arrivals.timed else "request write trace"
        raise FaceoffError(
            f"aiohttp {aiohttp.__version__} no longer uses faceoff's {missing}",
            where="workload.transport",
            fix="pin aiohttp to a 3.x release that workload/transport.py supports",
        )
