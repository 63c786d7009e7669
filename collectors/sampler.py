"""One cadence loop for every sampler: drift-free ticks on a monotonic clock.
The same concept at another layer: ``collectors.gpu.sampler``.

Tick k is due at ``start + k·period`` (never ``sleep(period)`` after the work,
which drifts by the work's duration). A tick that starts more than
``late_after_ns`` after it was due is late, but still taken while its slot
(one period from its due time) is open; a tick whose slot passed entirely while
the previous one ran is missed and skipped, so the loop never bunches up to
catch up. Each loop runs in its own thread of the orchestrator process (the
load client is a separate process), and on stop it drains one final sample.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol, TypedDict

from faceoff.errors import FaceoffError
from faceoff.ports import Clock


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Clocks:
    """Injected clocks: intervals on ``perf_counter_ns``, wall time tz-aware UTC."""

    mono_ns: Callable[[], int] = time.perf_counter_ns
    wall: Clock = utc_now


@dataclass(frozen=True)
class Tick:
    """One slot of the schedule; ``final`` marks the drain sample taken at stop."""

    seq: int
    scheduled_ns: int
    actual_ns: int
    period_ns: int
    final: bool = False

    @property
    def deviation_ns(self) -> int:
        return self.actual_ns - self.scheduled_ns


class TickFields(TypedDict):
    seq: int
    final: bool
    period_ns: int
    scheduled_ns: int
    actual_ns: int
    wall_utc: datetime
    latency_ns: int


def tick_fields(tick: Tick, wall: datetime, latency_ns: int) -> TickFields:
    """The SampleBase fields of a sample taken at ``tick``."""
    return {
        "seq": tick.seq,
        "final": tick.final,
        "period_ns": tick.period_ns,
        "scheduled_ns": tick.scheduled_ns,
        "actual_ns": tick.actual_ns,
        "wall_utc": wall,
        "latency_ns": max(0, latency_ns),
    }


class Sampler(Protocol):
    """What a cadence loop drives. ``take`` records failures in its sample; it does not raise."""

    name: str

    def open(self) -> None: ...

    def take(self, tick: Tick) -> None: ...

    def close(self) -> None: ...


@dataclass
class CadenceStats:
    """Live cadence counts of one loop; written only by the loop's thread."""

    period_ns: int
    late_after_ns: int
    ticks: int = 0
    on_time: int = 0
    late: int = 0
    missed: int = 0
    final: int = 0
    max_deviation_ns: int = 0
    sampler_errors: int = 0
    last_error: str | None = None

    def record(self, tick: Tick) -> None:
        if tick.final:
            self.final += 1
            return
        self.ticks += 1
        deviation = tick.deviation_ns
        self.max_deviation_ns = max(self.max_deviation_ns, deviation)
        if deviation > self.late_after_ns:
            self.late += 1
        else:
            self.on_time += 1

    def snapshot(self) -> CadenceStats:
        return replace(self)


def next_seq(seq: int, start_ns: int, now_ns: int, period_ns: int) -> int:
    """The next tick still worth running: the first after ``seq`` whose slot has not passed.

    A tick whose slot is still open is taken now, late (late is not missing); one
    whose whole slot passed is skipped, so the loop never bunches up.
    """
    current_slot = (now_ns - start_ns) // period_ns
    return max(seq + 1, current_slot)


class SamplerLoop:
    """Drives one sampler on a drift-free schedule, in its own thread or inline (``run``)."""

    def __init__(
        self,
        sampler: Sampler,
        *,
        period_ns: int,
        late_after_ns: int,
        mono_ns: Callable[[], int] = time.perf_counter_ns,
        wait: Callable[[float], object] | None = None,
    ) -> None:
        if period_ns <= 0 or not 0 <= late_after_ns < period_ns:
            raise FaceoffError(
                f"bad cadence for {sampler.name}: period {period_ns} ns, late after "
                f"{late_after_ns} ns",
                fix="use a positive period and a lateness slack shorter than it",
            )
        self.sampler = sampler
        self.stats = CadenceStats(period_ns=period_ns, late_after_ns=late_after_ns)
        self._mono_ns = mono_ns
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait
        self._first = threading.Event()
        self._drain = True
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.run, name=f"faceoff-{self.sampler.name}-sampler", daemon=True
        )
        self._thread.start()

    def wait_first(self, timeout_s: float) -> bool:
        """Block until the first tick was taken (its sample may record a failure)."""
        return self._first.wait(timeout_s)

    def request_stop(self, *, drain: bool = True) -> None:
        self._drain = drain
        self._stopping.set()

    def stop(self, *, drain: bool = True, timeout_s: float = 30.0) -> CadenceStats:
        self.request_stop(drain=drain)
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                raise FaceoffError(
                    f"the {self.sampler.name} sampler did not stop within {timeout_s} s",
                    fix="check the lane's endpoint; the sample file keeps every finished tick",
                )
        return self.stats.snapshot()

    def run(self) -> None:
        """The loop itself; returns after the stop request (and the drain sample)."""
        try:
            self.sampler.open()
            self._ticks()
        except Exception as exc:  # recorded; the facade reports a loop that died
            self._record_error(exc)
        finally:
            self._first.set()
            self.sampler.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _record_error(self, exc: Exception) -> None:
        self.stats.sampler_errors += 1
        self.stats.last_error = f"{type(exc).__name__}: {exc}"

    def _ticks(self) -> None:
        period = self.stats.period_ns
        start = self._mono_ns()
        seq = 0
        while not self._stopping.is_set():
            due = start + seq * period
            self._sleep_until(due)
            if self._stopping.is_set():
                break
            self._take(Tick(seq, due, self._mono_ns(), period))
            after = next_seq(seq, start, self._mono_ns(), period)
            self.stats.missed += after - seq - 1
            seq = after
        if self._drain:
            now = self._mono_ns()
            self._take(Tick(seq, now, now, period, final=True))

    def _sleep_until(self, due_ns: int) -> None:
        remaining = due_ns - self._mono_ns()
        while remaining > 0 and not self._stopping.is_set():  # a timed wait may wake early
            self._wait(remaining / 1e9)
            remaining = due_ns - self._mono_ns()

    def _take(self, tick: Tick) -> None:
        try:
            self.sampler.take(tick)
        except Exception as exc:  # a sampler bug must not end the cell's telemetry silently
            self._record_error(exc)
        self.stats.record(tick)
        self._first.set()
