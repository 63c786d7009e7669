"""The cadence loop: drift-free schedule, late and missed ticks, drain, threads."""

from __future__ import annotations

import threading
import time

import pytest

from collectors.sampler import SamplerLoop, Tick, next_seq
from faceoff.errors import FaceoffError

MS = 1_000_000


class FakeClock:
    """Monotonic nanoseconds that move only when waited on or worked through."""

    def __init__(self, start: int = 10_000 * MS) -> None:
        self.now = start

    def mono_ns(self) -> int:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


class ScriptedSampler:
    """Each tick 'works' for the given durations (ns), then asks the loop to stop."""

    name = "scripted"

    def __init__(self, clock: FakeClock, work_ns: list[int], fail_at: int | None = None) -> None:
        self.clock = clock
        self.work_ns = work_ns
        self.fail_at = fail_at
        self.ticks: list[Tick] = []
        self.loop: SamplerLoop | None = None
        self.opened = self.closed = False

    def open(self) -> None:
        self.opened = True

    def take(self, tick: Tick) -> None:
        self.ticks.append(tick)
        if tick.final:
            return
        index = len(self.ticks) - 1
        self.clock.now += self.work_ns[index]
        if index == self.fail_at:
            raise RuntimeError("sampler bug")
        if index == len(self.work_ns) - 1:
            assert self.loop is not None
            self.loop.request_stop()

    def close(self) -> None:
        self.closed = True


def run_scripted(work_ns: list[int], *, period: int = 500 * MS, late: int = 100 * MS, **kw):  # type: ignore[no-untyped-def]
    clock = FakeClock()
    sampler = ScriptedSampler(clock, work_ns, **kw)
    loop = SamplerLoop(
        sampler, period_ns=period, late_after_ns=late, mono_ns=clock.mono_ns, wait=clock.wait
    )
    sampler.loop = loop
    start = clock.now
    loop.run()
    return sampler, loop, start


def test_ticks_are_due_at_start_plus_k_periods_whatever_the_work_takes() -> None:
    sampler, loop, start = run_scripted([30 * MS, 70 * MS, 10 * MS, 90 * MS])
    scheduled = [t for t in sampler.ticks if not t.final]
    assert [t.scheduled_ns - start for t in scheduled] == [k * 500 * MS for k in range(4)]
    assert all(t.actual_ns == t.scheduled_ns for t in scheduled)  # no drift accumulates
    assert loop.stats.ticks == 4 and loop.stats.on_time == 4
    assert loop.stats.late == loop.stats.missed == 0
    assert sampler.opened and sampler.closed


def test_an_overrun_runs_the_next_tick_late_and_skips_only_ticks_whose_slot_passed() -> None:
    # tick 0 works 560 ms: tick 1 (due 500) starts at 560, 60 ms behind (slack 100 ms).
    # tick 1 works 1_100 ms: now 1_660; tick 2's slot (1_000..1_500) passed, so it is missed;
    # tick 3's slot (1_500..2_000) is open, so it is taken late rather than skipped.
    sampler, loop, start = run_scripted([560 * MS, 1_100 * MS, 10 * MS])
    scheduled = [t for t in sampler.ticks if not t.final]
    assert [t.seq for t in scheduled] == [0, 1, 3]
    assert scheduled[1].deviation_ns == 60 * MS
    assert scheduled[2].scheduled_ns - start == 1_500 * MS
    assert scheduled[2].deviation_ns == 160 * MS
    assert loop.stats.on_time == 2 and loop.stats.late == 1 and loop.stats.missed == 1
    assert loop.stats.max_deviation_ns == 160 * MS


def test_a_wake_up_later_than_the_slack_counts_the_tick_late() -> None:
    clock = FakeClock()
    oversleep = iter([0, 150 * MS])  # the second wait wakes 150 ms late (a starved thread)

    def wait(seconds: float) -> None:
        clock.wait(seconds)
        clock.now += next(oversleep, 0)

    sampler = ScriptedSampler(clock, [5 * MS, 5 * MS, 5 * MS])
    loop = SamplerLoop(
        sampler, period_ns=500 * MS, late_after_ns=100 * MS, mono_ns=clock.mono_ns, wait=wait
    )
    sampler.loop = loop
    loop.run()
    scheduled = [t for t in sampler.ticks if not t.final]
    assert [t.deviation_ns for t in scheduled] == [0, 0, 150 * MS]
    assert loop.stats.late == 1 and loop.stats.on_time == 2 and loop.stats.missed == 0


def test_stop_drains_one_final_sample_off_schedule() -> None:
    sampler, loop, _ = run_scripted([5 * MS, 5 * MS])
    final = sampler.ticks[-1]
    assert final.final and final.seq == 2
    assert final.scheduled_ns == final.actual_ns
    assert loop.stats.final == 1 and loop.stats.ticks == 2


def test_a_raising_sampler_is_counted_and_the_loop_goes_on() -> None:
    sampler, loop, _ = run_scripted([5 * MS, 5 * MS, 5 * MS], fail_at=1)
    assert len([t for t in sampler.ticks if not t.final]) == 3
    assert loop.stats.sampler_errors == 1
    assert loop.stats.last_error == "RuntimeError: sampler bug"


@pytest.mark.parametrize(
    ("now_ms", "expected"),
    [(510, 1), (600, 1), (999, 1), (1_000, 2), (1_550, 3), (1_999, 3), (2_100, 4)],
)
def test_next_seq_runs_a_late_tick_while_its_slot_is_open_else_skips_it(
    now_ms: int, expected: int
) -> None:
    assert next_seq(0, 0, now_ms * MS, 500 * MS) == expected


def test_bad_cadence_is_refused() -> None:
    clock = FakeClock()
    with pytest.raises(FaceoffError, match="lateness slack shorter"):
        SamplerLoop(ScriptedSampler(clock, [1]), period_ns=100, late_after_ns=100)


class CountingSampler:
    name = "counting"

    def __init__(self) -> None:
        self.ticks: list[Tick] = []
        self.threads: set[str] = set()

    def open(self) -> None:
        self.threads.add(threading.current_thread().name)

    def take(self, tick: Tick) -> None:
        self.threads.add(threading.current_thread().name)
        self.ticks.append(tick)

    def close(self) -> None:
        pass


def test_real_thread_keeps_the_schedule_and_stops_promptly() -> None:
    sampler = CountingSampler()
    loop = SamplerLoop(sampler, period_ns=50 * MS, late_after_ns=25 * MS)
    loop.start()
    assert loop.wait_first(5.0)
    time.sleep(0.5)
    began = time.perf_counter()
    stats = loop.stop(timeout_s=5.0)
    assert time.perf_counter() - began < 1.0  # the wait is interrupted, not slept out
    scheduled = [t for t in sampler.ticks if not t.final]
    assert len(scheduled) >= 5 and sampler.ticks[-1].final
    first = scheduled[0].scheduled_ns
    assert all(t.scheduled_ns - first == t.seq * 50 * MS for t in scheduled)
    assert all(t.deviation_ns >= 0 for t in scheduled)
    assert sampler.threads == {"faceoff-counting-sampler"}
    assert stats.ticks == len(scheduled)
