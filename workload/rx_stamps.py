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

The stamp is CLOCK_REALTIME; right after the read, the caller's clock and the real-time
clock are read back to back, and the read is dated on the caller's clock as its reading
minus how long the bytes had waited (real time now, minus the stamp). A step of the
real-time clock between the packet and the read would skew that one read; a negative
wait is taken as 0.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h); Python's socket module does not name it
STAMP = struct.Struct("@qq")  # struct timespec: seconds, nanoseconds
STAMP_SPACE = socket.CMSG_SPACE(STAMP.size) if sys.platform == "linux" else 0

Clock = Callable[[], int]
OnRead = Callable[[int | None], None]  # when the read's bytes arrived, on the clock; None: unknown


class StampedSocket:
    """A transport's socket whose ``recv`` brings the kernel's receive stamp along."""

    def __init__(self, sock: socket.socket, clock: Clock, on_read: OnRead) -> None:
        self._sock, self._clock, self._on_read = sock, clock, on_read

    def recv(self, size: int) -> bytes:
        data, ancillary, _flags, _address = self._sock.recvmsg(size, STAMP_SPACE)
        now_ns, waited = self._clock(), waited_ns(ancillary, time.time_ns())
        self._on_read(None if waited is None else now_ns - waited)
        return data

    def __getattr__(self, name: str) -> Any:  # every other use of the socket: the real one
        return getattr(self._sock, name)


def waited_ns(ancillary: list[tuple[int, int, bytes]], now_real_ns: int) -> int | None:
    """How long before ``now_real_ns`` the read's last packet was received; None unstamped."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= STAMP.size:
            seconds, nanoseconds = STAMP.unpack_from(data)
            return max(0, now_real_ns - (int(seconds) * 1_000_000_000 + int(nanoseconds)))
    return None


def stamp_receives(transport: Any, clock: Clock, on_read: OnRead) -> bool:
    """Have ``transport``'s reads report when their bytes arrived, on ``clock``, by the
    kernel's receive stamp; False where it cannot."""
    sock = getattr(transport, "_sock", None)  # asyncio's selector transports (3.11+)
    if sys.platform != "linux" or type(sock) is not socket.socket:
        return False
    if sock.type != socket.SOCK_STREAM:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    transport._sock = StampedSocket(sock, clock, on_read)
    return True
