"""The kernel's receive stamp of each socket read (``SO_TIMESTAMPNS``), for the lane socket.

A read stamped by the client's own clock is late by however long the event loop took to
get to the socket: when 32 streams' last chunks arrive within a millisecond, the loop
is busy ending requests and sending the next ones, and the last streams' chunks wait
in their sockets for milliseconds. The kernel stamps every packet as it is received;
asking for it (``SO_TIMESTAMPNS``) and reading with ``recvmsg`` hands that stamp over
with the bytes: the one of the last packet the read took in.

asyncio's socket transport reads with ``recv``; :func:`stamp_receives` swaps the
transport's socket for a :class:`StampedSocket` whose ``recv`` is a ``recvmsg`` and
tells the protocol when the read's bytes arrived. Everything else the transport does
with its socket goes to the real one. Where a transport has no plain TCP socket (TLS,
another event loop) or the option is refused, nothing is swapped and reads keep the
client's own stamps.

The stamp is CLOCK_REALTIME; right after the read, the real-time clock and then the
caller's clock are read, and the read is dated on the caller's clock as its reading
minus how long the bytes had waited (real time, minus the stamp). In that order a pause
between the two readings (a preemption, the GIL handed to another thread) makes the
date late by the pause, never early: the real-time reading is older than the caller's.
A pair whose two real-time readings around the caller's lie more than ``PAIR_SLACK_NS``
apart is read again. A step of the real-time clock between the packet and the read
would skew that one read; a negative wait is taken as 0.

One stamp per read is all TCP gives, and it is the *last* segment's: a segment that
arrives while an earlier one waits unread is merged into it by the kernel, which keeps
the later arrival time. A chunk that waited in the socket until the next one came would
take the next one's time. So the loop's wake-ups are watched too (:class:`WakeSelector`):
as ``select`` returns, each stamped socket that is ready is asked how many bytes it holds
(``FIONREAD``), and the clock is read after. Its next read takes only those bytes, and
where the kernel's stamp is later than that wake-up (a segment came in between and was
merged), the read is dated by the wake-up: an upper bound of when those bytes arrived
that no later segment moves. Bytes that came after the wake-up stay in the socket for
the next read, and their own stamp. Both dates are never earlier than the bytes' arrival.

A loop that sleeps in ``select`` can still be woken late (the host did not run it for
longer than the gap between two chunks): the kernel has merged both by then. The opt-in
``spin`` receive mode (:func:`set_receive`) never sleeps while a request is in flight
(:func:`in_flight`): ``select`` polls with a zero timeout until a socket is ready or the
loop's own timeout passes, so each segment is read, and its wake-up dated, as it lands.
It costs a whole core while requests are in flight; with none, the loop sleeps as usual.

A loop wakes once per pass over its ready callbacks; at C32 a pass parses up to 31 other
streams' chunks, so a segment that lands early in the pass would wait, uncounted, for the
next wake-up, and the next segment would be merged into it first. So a spinning loop also
looks between callbacks (:meth:`WakeSelector.refresh`, called as the loop takes each ready
callback from its queue: :class:`RefreshingReady`): an edge-triggered ``epoll`` of the
stamped sockets says which a segment reached since the last look (about a microsecond
when none did, however many sockets hold unread bytes), and each of those that holds no
wake-up yet gets one, counted and dated as at ``select``. A socket's wake-up stands until
its next read, the earliest first, so a segment is dated within one callback's work of
its arrival, not one pass.
"""

from __future__ import annotations

import array
import collections
import contextlib
import fcntl
import select
import selectors
import socket
import struct
import sys
import termios
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple, get_args

from faceoff.errors import FaceoffError
from matrix.model import ClientReceive

SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h); Python's socket module does not name it
STAMP = struct.Struct("@qq")  # struct timespec: seconds, nanoseconds
STAMP_SPACE = socket.CMSG_SPACE(STAMP.size) if sys.platform == "linux" else 0
PAIR_SLACK_NS = 20_000  # a clock pair read further apart than this is read again
PAIR_TRIES = 3

Clock = Callable[[], int]
Source = Literal["kernel", "wake"]  # the kernel's receive stamp, or the loop's wake-up bound
OnRead = Callable[[int | None, Source], None]  # when the read's bytes arrived; None: unknown
RECEIVE_MODES: tuple[ClientReceive, ...] = get_args(ClientReceive)


class Woke(NamedTuple):
    queued: int  # bytes the socket held as the loop woke
    at_ns: int  # on the clock, read after they were counted


class WakeSelector:
    """The event loop's selector, noting at each wake-up how many bytes every ready stamped
    socket holds, and when. Everything else goes to the real selector."""

    def __init__(self, selector: selectors.BaseSelector, clock: Clock) -> None:
        self._selector, self.clock = selector, clock
        self.stamped: set[int] = set()  # file descriptors of StampedSockets
        self.woke: dict[int, Woke] = {}  # by file descriptor, until that socket's next read
        self.spin = False  # poll instead of sleeping while a request is in flight
        self.in_flight = 0  # requests between send and end (:func:`in_flight`)
        self._arrivals: select.epoll | None = None  # spinning: stamped sockets, edge-triggered

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self.spin and self.in_flight and timeout != 0:
            ready = spin_select(self._selector, timeout, self.clock)
        else:
            ready = self._selector.select(timeout)
        stamped, reading = self.stamped, selectors.EVENT_READ
        self._note([key.fd for key, events in ready if events & reading and key.fd in stamped])
        return ready

    def refresh(self) -> None:
        """While spinning: a wake-up for each stamped socket a segment reached since the last
        look (``select`` or this), where it holds none yet."""
        if self._arrivals is not None and (events := self._arrivals.poll(0)):
            self._note([fd for fd, _ in events])

    def _note(self, fds: list[int]) -> None:
        """A wake-up for each of ``fds`` that holds bytes and no wake-up yet: an earlier one
        counted fewer bytes, and bounds them earlier."""
        woke = self.woke
        fresh = [fd for fd in fds if fd not in woke]
        if not fresh:  # no clock reading for a wake-up that dates nothing
            return
        counts = [queued_bytes(fd) for fd in fresh]
        at_ns = self.clock()
        for fd, queued in zip(fresh, counts, strict=True):
            if queued:  # none: an end of stream, or bytes a read already took
                woke[fd] = Woke(queued, at_ns)

    def set_spin(self, spin: bool) -> None:
        """Spin (poll, and look between callbacks) while requests are in flight, or sleep."""
        if spin and self._arrivals is None and sys.platform == "linux":  # no stamps elsewhere
            self._arrivals = select.epoll()
            for fd in self.stamped:
                self._arrivals.register(fd, select.EPOLLIN | select.EPOLLET)
        elif not spin and self._arrivals is not None:
            self._arrivals.close()
            self._arrivals = None
        self.spin = spin

    def stamp(self, fd: int) -> None:
        """Watch socket ``fd``'s wake-ups (a StampedSocket's)."""
        self.stamped.add(fd)
        if self._arrivals is not None:
            self._arrivals.register(fd, select.EPOLLIN | select.EPOLLET)

    def unstamp(self, fd: int) -> None:
        """Forget socket ``fd`` before it closes: its number may come back for another."""
        self.stamped.discard(fd)
        self.woke.pop(fd, None)
        if self._arrivals is not None:
            with contextlib.suppress(OSError):  # closed already, by another way than ours
                self._arrivals.unregister(fd)

    def close(self) -> None:
        self.set_spin(False)
        self._selector.close()

    def __getattr__(self, name: str) -> Any:  # register, unregister, modify, get_map, …
        return getattr(self._selector, name)


class RefreshingReady(collections.deque[Any]):
    """A loop's queue of ready callbacks that refreshes its wake-ups before handing out each
    one: asyncio's selector loop takes them one at a time (``popleft``) from this deque
    (``BaseEventLoop._ready``), so the loop looks between any two of its callbacks."""

    def __init__(self, ready: collections.deque[Any], wakes: WakeSelector) -> None:
        super().__init__(ready)
        self.wakes = wakes

    def popleft(self) -> Any:
        self.wakes.refresh()
        return super().popleft()


def spin_select(
    selector: selectors.BaseSelector, timeout: float | None, clock: Clock
) -> list[tuple[selectors.SelectorKey, int]]:
    """``selector.select(timeout)`` without sleeping: zero-timeout polls until a file is
    ready or ``timeout`` seconds (on ``clock``, in ns) have passed. Each poll is a system
    call, which lets the journal's writer thread take the GIL between polls."""
    until = None if timeout is None else clock() + int(timeout * 1e9)
    while not (ready := selector.select(0)):
        if until is not None and clock() >= until:
            break
    return ready


@contextmanager
def in_flight(loop: Any) -> Iterator[None]:
    """A request in flight on ``loop`` for the block's duration: a spinning loop polls only
    while one is."""
    wakes = getattr(loop, "_selector", None)
    if not isinstance(wakes, WakeSelector):
        yield
        return
    wakes.in_flight += 1
    try:
        yield
    finally:
        wakes.in_flight -= 1


def set_receive(loop: Any, clock: Clock, receive: ClientReceive) -> None:
    """Have ``loop`` sleep (the default) or spin while requests are in flight; its stamped
    sockets' reads then date on ``clock``."""
    wakes = watch_wakes(loop, clock)
    ready = getattr(loop, "_ready", None)  # asyncio's queue of ready callbacks
    if wakes is None or wakes.clock is not clock or not isinstance(ready, collections.deque):
        if receive == "sleep":
            return
        raise FaceoffError(
            "the spin receive mode needs asyncio's selector event loop, on the run's clock",
            where="workload.rx_stamps",
            fix="run the client with asyncio's default loop, or set client_receive = 'sleep'",
        )
    wakes.set_spin(receive == "spin")
    if receive == "spin" and not isinstance(ready, RefreshingReady):
        loop._ready = RefreshingReady(ready, wakes)  # a sleeping loop's refresh does nothing


def queued_bytes(fd: int) -> int:
    """Bytes waiting to be read on socket ``fd`` (``FIONREAD``); 0 where it cannot say."""
    count = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, count)
    except OSError:
        return 0
    return count[0]


class StampedSocket:
    """A transport's socket whose ``recv`` brings the kernel's receive stamp along."""

    def __init__(
        self,
        sock: socket.socket,
        clock: Clock,
        on_read: OnRead,
        wakes: WakeSelector | None = None,
        real: Clock = time.time_ns,
    ) -> None:
        self._sock, self._clock, self._on_read = sock, clock, on_read
        self._wakes, self._real, self._fd = wakes, real, sock.fileno()

    def recv(self, size: int) -> bytes:
        woke = self._wakes.woke.pop(self._fd, None) if self._wakes is not None else None
        if woke is not None and 0 < woke.queued < size:
            size = woke.queued  # leave what came after the wake-up for the next read
        data, ancillary, _flags, _address = self._sock.recvmsg(size, STAMP_SPACE)
        kernel_ns = kernel_arrival(ancillary, self._clock, self._real)
        if woke is not None and (kernel_ns is None or woke.at_ns < kernel_ns):
            self._on_read(woke.at_ns, "wake")
        else:
            self._on_read(kernel_ns, "kernel")
        return data

    def close(self) -> None:
        if self._wakes is not None:
            self._wakes.unstamp(self._fd)
        self._sock.close()

    def __getattr__(self, name: str) -> Any:  # every other use of the socket: the real one
        return getattr(self._sock, name)


def kernel_arrival(
    ancillary: list[tuple[int, int, bytes]], clock: Clock, real: Clock = time.time_ns
) -> int | None:
    """When the read's last packet was received, on ``clock``; None unstamped."""
    real_ns, now_ns = clock_pair(clock, real)
    waited = waited_ns(ancillary, real_ns)
    return None if waited is None else now_ns - waited


def clock_pair(clock: Clock, real: Clock = time.time_ns) -> tuple[int, int]:
    """(real time, ``clock``) read back to back, real time first, so that a pause between
    them makes a converted stamp late, never early; the tightest of a few tries where a
    pause came between."""
    best = (0, 0, -1)  # before, now, spread
    for _ in range(PAIR_TRIES):
        before, now, after = real(), clock(), real()
        if best[2] < 0 or after - before < best[2]:
            best = (before, now, after - before)
        if after - before <= PAIR_SLACK_NS:
            break
    return best[0], best[1]


def waited_ns(ancillary: list[tuple[int, int, bytes]], now_real_ns: int) -> int | None:
    """How long before ``now_real_ns`` the read's last packet was received; None unstamped."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= STAMP.size:
            seconds, nanoseconds = STAMP.unpack_from(data)
            return max(0, now_real_ns - (int(seconds) * 1_000_000_000 + int(nanoseconds)))
    return None


def stamp_receives(transport: Any, clock: Clock, on_read: OnRead) -> bool:
    """Have ``transport``'s reads report when their bytes arrived, on ``clock``, by the
    kernel's receive stamp and its loop's wake-ups; False where it cannot."""
    sock = getattr(transport, "_sock", None)  # asyncio's selector transports (3.11+)
    if sys.platform != "linux" or type(sock) is not socket.socket:
        return False
    if sock.type != socket.SOCK_STREAM:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    wakes = watch_wakes(getattr(transport, "_loop", None), clock)
    if wakes is not None and wakes.clock is clock:  # a loop's wake-ups are on one clock
        wakes.stamp(sock.fileno())
    else:
        wakes = None
    transport._sock = StampedSocket(sock, clock, on_read, wakes)
    return True


def watch_wakes(loop: Any, clock: Clock) -> WakeSelector | None:
    """The loop's :class:`WakeSelector`, put in place on first use; None for a loop without a
    standard-library selector (uvloop, the proactor)."""
    selector = getattr(loop, "_selector", None)  # asyncio's selector event loop
    if isinstance(selector, WakeSelector):
        return selector
    if not isinstance(selector, selectors.BaseSelector):
        return None
    wakes = WakeSelector(selector, clock)
    loop._selector = wakes
    return wakes
