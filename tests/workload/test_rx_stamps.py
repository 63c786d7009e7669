"""Converting the kernel's real-time receive stamp onto the client's clock."""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from workload.rx_stamps import (
    PAIR_SLACK_NS,
    SO_TIMESTAMPNS,
    STAMP,
    RefreshingReady,
    Source,
    StampedSocket,
    WakeSelector,
    Woke,
    in_flight,
    kernel_arrival,
    queued_bytes,
    set_receive,
)

REAL_AHEAD_NS = 1_765_000_000_000_000_000  # real time minus the client's clock, this host
ARRIVED_NS = 3_000_000  # the packet's arrival on the client's clock


class PausingHost:
    """Both clocks over one true time, which jumps by ``pause_ns`` after the ``pause_after``-th
    reading (a preemption, or the GIL handed to another thread, between two readings)."""

    def __init__(self, pause_after: int, pause_ns: int, *, pauses: int = 1) -> None:
        self.now_ns, self.readings = 5_000_000, 0
        self.pause_after, self.pause_ns, self.pauses = pause_after, pause_ns, pauses

    def _read(self, ahead_ns: int) -> int:
        value = self.now_ns + ahead_ns
        self.readings += 1
        self.now_ns += 100  # a clock reading's own cost
        if self.readings >= self.pause_after and self.pauses:
            self.now_ns += self.pause_ns
            self.pauses -= 1
            self.pause_after = self.readings + 3  # the next try's same reading
        return value

    def clock(self) -> int:
        return self._read(0)

    def real(self) -> int:
        return self._read(REAL_AHEAD_NS)


def stamp(real_ns: int) -> list[tuple[int, int, bytes]]:
    seconds, nanoseconds = divmod(real_ns, 1_000_000_000)
    return [(socket.SOL_SOCKET, SO_TIMESTAMPNS, STAMP.pack(seconds, nanoseconds))]


def arrival(host: PausingHost) -> int | None:
    clock: Callable[[], int] = host.clock
    return kernel_arrival(stamp(ARRIVED_NS + REAL_AHEAD_NS), clock, host.real)


@pytest.mark.parametrize("pause_after", [1, 2, 3])
@pytest.mark.parametrize("pause_ns", [9_400, PAIR_SLACK_NS // 2, 5_000_000])
def test_a_pause_between_the_clock_readings_never_dates_a_read_early(
    pause_after: int, pause_ns: int
) -> None:
    """Wherever the pause falls, the date is at or after the arrival: the client's clock is
    read after the real-time reading the wait is measured from."""
    dated = arrival(PausingHost(pause_after, pause_ns, pauses=3))
    assert dated is not None and dated >= ARRIVED_NS


def test_a_pair_split_by_a_long_pause_is_read_again() -> None:
    """A pause wider than the slack between the readings: the next, unpaused pair is used, and
    the read is dated within a clock reading's cost of its arrival."""
    dated = arrival(PausingHost(pause_after=1, pause_ns=5_000_000))
    assert dated is not None and ARRIVED_NS <= dated <= ARRIVED_NS + 1_000


def test_a_read_without_a_stamp_is_undated() -> None:
    host = PausingHost(pause_after=0, pause_ns=0)
    assert kernel_arrival([], host.clock, host.real) is None


@contextmanager
def loopback_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the server's end, the client's end) of a TCP connection over loopback."""
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()) as client,
    ):
        server, _ = listener.accept()
        with server:
            server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            client.setblocking(False)
            yield server, client


def wait_queued(fd: int, size: int) -> None:
    """Until the socket holds ``size`` bytes (the kernel delivers loopback writes at once)."""
    deadline = time.monotonic() + 30
    while queued_bytes(fd) < size:
        assert time.monotonic() < deadline, f"{size} bytes never arrived"


@pytest.mark.usefixtures("kernel_stamping")
@pytest.mark.parametrize("spin", [False, True])
def test_two_chunks_in_one_read_window_are_each_dated_before_the_next_write(spin: bool) -> None:
    """The loop wakes for the first chunk, the second arrives before the read (the kernel
    merges it into the first, with its later stamp): the read takes only the first chunk,
    dated at or before the second's write, and the second keeps its own later date; the
    same when the loop spins with a request in flight."""
    one, two = b"data: one\n\n", b"data: two\n\n"
    clock = time.perf_counter_ns
    dates: list[tuple[int | None, Source]] = []
    with loopback_pair() as (server, client), selectors.DefaultSelector() as inner:
        wakes = WakeSelector(inner, clock)
        wakes.set_spin(spin)
        wakes.in_flight = int(spin)
        wakes.register(client, selectors.EVENT_READ)
        wakes.stamp(client.fileno())
        stamped = StampedSocket(client, clock, lambda at, source: dates.append((at, source)), wakes)
        written_one = clock()  # just before each write, as the simulator stamps
        server.sendall(one)
        assert wakes.select(30), "the first chunk never woke the loop"
        written_two = clock()
        server.sendall(two)
        wait_queued(client.fileno(), len(one + two))  # both wait unread: one read window
        assert stamped.recv(1 << 16) == one
        assert wakes.select(30), "the second chunk was not left for the next read"
        assert stamped.recv(1 << 16) == two
    (first, _), (second, _) = dates
    assert first is not None and second is not None
    assert written_one <= first <= written_two  # never the later segment's time
    assert written_two <= second


@pytest.mark.usefixtures("kernel_stamping")
def test_a_read_the_loop_did_not_wake_for_keeps_the_kernels_stamp() -> None:
    """Without a wake-up on record (the loop never selected), the read takes what is there,
    dated by the kernel's stamp of its last segment."""
    clock = time.perf_counter_ns
    dates: list[tuple[int | None, Source]] = []
    with loopback_pair() as (server, client):
        stamped = StampedSocket(client, clock, lambda at, source: dates.append((at, source)))
        written = clock()
        server.sendall(b"data: one\n\n")
        wait_queued(client.fileno(), 1)
        assert stamped.recv(1 << 16) == b"data: one\n\n"
        read = clock()
    [(at, source)] = dates
    assert source == "kernel" and at is not None and written <= at <= read


class CountingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The platform's selector, noting the timeout of every ``select``."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self.timeouts.append(timeout)
        return super().select(timeout)


@pytest.mark.usefixtures("kernel_stamping")
def test_a_spinning_loop_polls_only_while_a_request_is_in_flight() -> None:
    """With a request in flight the selector is only ever polled (timeout 0) until the chunk
    lands, and the chunk is dated at or after its write; with none, the loop sleeps in one
    ``select`` with its own timeout."""
    clock = time.perf_counter_ns
    dates: list[tuple[int | None, Source]] = []
    inner = CountingSelector()
    loop = asyncio.SelectorEventLoop(inner)
    with loopback_pair() as (server, client), contextlib.closing(loop):
        set_receive(loop, clock, "spin")
        wakes = loop._selector
        assert isinstance(wakes, WakeSelector)
        wakes.register(client, selectors.EVENT_READ)
        wakes.stamp(client.fileno())
        stamped = StampedSocket(client, clock, lambda at, source: dates.append((at, source)), wakes)
        assert wakes.select(0.001) == [] and inner.timeouts[-1] == 0.001  # idle: it sleeps
        inner.timeouts.clear()
        with in_flight(loop):
            written = clock()
            server.sendall(b"data: one\n\n")
            assert wakes.select(30), "the chunk never arrived"
            assert stamped.recv(1 << 16) == b"data: one\n\n"
        assert set(inner.timeouts) == {0} and wakes.in_flight == 0
        wakes.unregister(client)
    [(at, _)] = dates
    assert at is not None and written <= at


@pytest.mark.usefixtures("kernel_stamping")
def test_a_wake_up_noted_between_reads_bounds_the_later_read() -> None:
    """A spinning loop looks between its callbacks: the first chunk, noted there before the
    second arrived, is read alone and dated at or before the second's write, however late
    the next ``select``; a second look, and that ``select``, keep the earlier wake-up."""
    one, two = b"data: one\n\n", b"data: two\n\n"
    clock = time.perf_counter_ns
    dates: list[tuple[int | None, Source]] = []
    with loopback_pair() as (server, client), selectors.DefaultSelector() as inner:
        wakes = WakeSelector(inner, clock)
        wakes.set_spin(True)
        wakes.register(client, selectors.EVENT_READ)
        wakes.stamp(client.fileno())
        stamped = StampedSocket(client, clock, lambda at, source: dates.append((at, source)), wakes)
        written_one = clock()
        server.sendall(one)
        wait_queued(client.fileno(), len(one))
        wakes.refresh()  # between two callbacks: no select since the chunk landed
        noted = wakes.woke[client.fileno()]
        written_two = clock()
        server.sendall(two)
        wait_queued(client.fileno(), len(one + two))
        wakes.refresh()
        assert wakes.select(30), "the chunks never woke the loop"
        assert wakes.woke[client.fileno()] == noted == (len(one), noted.at_ns)
        assert stamped.recv(1 << 16) == one
        assert wakes.select(30), "the second chunk was not left for the next read"
        assert stamped.recv(1 << 16) == two
    (first, _), (second, _) = dates
    assert first is not None and second is not None
    assert written_one <= first <= noted.at_ns <= written_two <= second


@pytest.mark.usefixtures("kernel_stamping")
def test_a_spinning_loop_looks_before_each_callback() -> None:
    """The spin mode's loop refreshes its wake-ups as it takes each ready callback: a chunk
    that landed since the last ``select`` has its wake-up when the next callback runs, and
    a closed socket's is forgotten."""
    clock = time.perf_counter_ns
    loop = asyncio.SelectorEventLoop()
    with loopback_pair() as (server, client), contextlib.closing(loop):
        set_receive(loop, clock, "spin")
        wakes = loop._selector
        assert isinstance(wakes, WakeSelector) and isinstance(loop._ready, RefreshingReady)
        fd = client.fileno()
        stamped = StampedSocket(client, clock, lambda *_: None, wakes)
        wakes.stamp(fd)
        server.sendall(b"data: one\n\n")
        wait_queued(fd, 1)
        assert fd not in wakes.woke

        async def seen() -> Woke | None:
            return wakes.woke.get(fd)

        noted = loop.run_until_complete(seen())
        assert noted is not None and noted.queued == len(b"data: one\n\n")
        stamped.close()
        assert fd not in wakes.woke and fd not in wakes.stamped
