"""Converting the kernel's real-time receive stamp onto the client's clock."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from workload.rx_stamps import PAIR_SLACK_NS, SO_TIMESTAMPNS, STAMP, kernel_arrival

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
