"""The host-stall monitor: a real process that a real SIGSTOP stalls, and its pure views."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.stall import ClientWatcher, watch
from collectors.stall_log import (
    StallLog,
    client_wait_ns,
    client_wait_share,
    overlap_ns,
    read_stalls,
    summarize_stalls,
)
from collectors.stall_monitor import StallMonitor
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.stalls import CellWindow, ClientWait, MonitorStart, MonitorStop, Stall

MS = 1_000_000
SECOND = 1_000 * MS
DEADLINE_S = 60.0  # generous: a loaded two-core host


def wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Wait on a condition of the monitor's file, with a generous deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {DEADLINE_S} s")
        time.sleep(0.01)


def test_a_stopped_monitor_records_the_stall_with_its_start_and_length(tmp_path: Path) -> None:
    path = tmp_path / "stalls.jsonl"
    monitor = StallMonitor(path, threshold_ns=20 * MS)
    monitor.start()  # returns once the start line is written
    pid = monitor.pid
    assert pid is not None
    try:
        paused_ns = time.perf_counter_ns()
        os.kill(pid, signal.SIGSTOP)  # the kernel will not run it: a stall, as the host makes one
        resume_at = paused_ns + 300 * MS
        while time.perf_counter_ns() < resume_at:
            time.sleep(0.01)
        resumed_ns = time.perf_counter_ns()
        os.kill(pid, signal.SIGCONT)

        def stall_seen() -> bool:
            log = read_stalls(path)
            return log is not None and any(s.end_ns >= resumed_ns for s in log.stalls)

        wait_for(stall_seen, "stall line after SIGCONT")
    finally:
        assert monitor.stop() == 0
    log = read_stalls(path)
    assert log is not None and log.start is not None and log.stop is not None
    assert log.start.started_ns < paused_ns < resumed_ns < log.stop.stopped_ns
    # it was due to wake within a tick of the pause and woke only after the resume
    covered = overlap_ns(log.stalls, paused_ns, resumed_ns)
    assert covered >= resumed_ns - paused_ns - 2 * MS
    assert all(s.length_ns >= 20 * MS for s in log.stalls)
    assert log.stop.stalls == len(log.stalls)
    assert log.stop.ticks > 0


def test_a_monitor_that_cannot_start_is_an_error_naming_the_folder_and_its_exit(
    tmp_path: Path,
) -> None:
    monitor = StallMonitor(tmp_path / "stalls.jsonl", threshold_ns=20 * MS, python="/bin/false")
    with pytest.raises(FaceoffError, match="exited with status 1 before it started") as err:
        monitor.start()  # its exit ends the wait, not the deadline
    assert err.value.where == str(tmp_path)


def test_a_monitor_the_host_does_not_run_is_waited_for_then_named_so(tmp_path: Path) -> None:
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")
    silent.chmod(0o755)
    monitor = StallMonitor(tmp_path / "stalls.jsonl", threshold_ns=20 * MS, python=str(silent))
    with pytest.raises(FaceoffError, match=r"did not start within 0.5 s \(the host did not run"):
        monitor.start(timeout_s=0.5)
    assert monitor.pid is not None
    with pytest.raises(ProcessLookupError):  # stopped and reaped, not left behind
        os.kill(monitor.pid, 0)


class FakeClock:
    """perf_counter_ns that sleeping advances; ``oversleep`` adds a stall to chosen wake-ups."""

    def __init__(self, oversleep_ms: dict[int, int]) -> None:
        self.now = 0
        self.sleeps = 0
        self.oversleep_ms = oversleep_ms

    def mono_ns(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += round(seconds * 1e9) + self.oversleep_ms.get(self.sleeps, 0) * MS


def test_watch_records_wake_ups_late_by_the_threshold_or_more() -> None:
    clock = FakeClock({3: 19, 5: 20, 8: 250})
    seen: list[Stall] = []
    totals = watch(
        seen.append,
        tick_ns=MS,
        threshold_ns=20 * MS,
        stopping=lambda: clock.sleeps >= 10,
        mono_ns=clock.mono_ns,
        sleep=clock.sleep,
    )
    assert [(s.start_ns, s.length_ns) for s in seen] == [(24 * MS, 20 * MS), (47 * MS, 250 * MS)]
    assert (totals.ticks, totals.stalls, totals.stalled_ns) == (10, 2, 270 * MS)


def log_of(*stalls: tuple[int, int], stopped_ms: int | None = 10_000) -> StallLog:
    start = MonitorStart(
        pid=1, cpu=1, tick_ns=MS, threshold_ns=20 * MS, started_ns=0, wall_utc="2026-12-01T00:00Z"
    )
    stop = None
    if stopped_ms is not None:
        stop = MonitorStop(stopped_ns=stopped_ms * MS, ticks=1, stalls=len(stalls), stalled_ns=0)
    return StallLog(
        start=start,
        stalls=tuple(Stall(start_ns=a * MS, length_ns=n * MS) for a, n in stalls),
        stop=stop,
    )


def test_the_summary_counts_the_stalled_part_of_the_window() -> None:
    log = log_of((500, 100), (2_950, 100), (5_000, 40))
    got = summarize_stalls(log, CellWindow(start_ns=1_000 * MS, end_ns=3_000 * MS))
    assert got is not None and got.watched and got.stopped
    assert (got.stalls, got.stalled_ns, got.longest_ns) == (1, 50 * MS, 100 * MS)
    assert got.stalled_share == pytest.approx(0.025)


def test_a_killed_monitor_did_not_watch_past_its_last_line() -> None:
    log = log_of((1_200, 30), stopped_ms=None)
    got = summarize_stalls(log, CellWindow(start_ns=1_000 * MS, end_ns=3_000 * MS))
    assert got is not None and not got.watched and not got.stopped
    assert summarize_stalls(StallLog(start=None), CellWindow(start_ns=0, end_ns=1)) is None


def test_torn_and_foreign_lines_are_counted_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "stalls.jsonl"
    good = log_of((10, 25))
    assert good.start is not None
    lines = [good.start.model_dump_json(), '{"event": "stall", "start_ns": 1}', '{"torn": ']
    path.write_text("\n".join(lines))
    log = read_stalls(path)
    assert log is not None and log.start == good.start
    assert (log.stalls, log.unreadable) == ((), 2)
    assert read_stalls(tmp_path / "absent.jsonl") is None


def reading(at_ms: int, waited_ms: int, pid: int = 7) -> ClientWait:
    return ClientWait(pid=pid, at_ns=at_ms * MS, cpu_ns=0, waited_ns=waited_ms * MS)


def test_the_client_wait_is_taken_between_readings_that_bracket_the_window() -> None:
    # 900 ms of start-up wait before the cell, then 120 ms inside it
    readings = [reading(0, 0), reading(980, 900), reading(2_000, 960), reading(3_020, 1_020)]
    assert client_wait_ns(readings, 1_000 * MS, 3_000 * MS) == 120 * MS
    assert client_wait_ns(readings[1:3], 1_000 * MS, 3_000 * MS) is None  # no reading after
    restarted = [reading(980, 900), reading(3_020, 5, pid=8)]
    assert client_wait_ns(restarted, 1_000 * MS, 3_000 * MS) is None  # another process


def test_the_watcher_finds_the_client_by_its_journal_path_and_reads_its_wait(
    tmp_path: Path,
) -> None:
    marker = str(tmp_path / "journal.jsonl")
    # a stand-in with the client's module name and journal path on its command line
    code = "import sys, time; time.sleep(120)"
    client = subprocess.Popen([sys.executable, "-c", code, "-m", "workload.cell_client", marker])
    other = subprocess.Popen([sys.executable, "-c", code, "workload.cell_client", "elsewhere"])
    seen: list[ClientWait] = []
    watcher = ClientWatcher(marker, seen.append, every_ns=0, scan_every_ns=0)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < 2 and time.monotonic() < deadline:
            watcher(time.perf_counter_ns())
            time.sleep(0.01)
    finally:
        for process in (client, other):
            process.kill()
            process.wait()
    assert len(seen) >= 2 and {r.pid for r in seen} == {client.pid}
    assert seen[-1].waited_ns >= seen[0].waited_ns and seen[-1].at_ns > seen[0].at_ns
    watcher(time.perf_counter_ns())  # it ended: the watcher lets go of it
    assert watcher.pid is None


def test_a_client_read_late_never_waits_more_than_all_of_its_time() -> None:
    """A loaded host reads the client late: readings 10 s apart around a 1 s window. Divided
    by the window alone, the 4 s the client waited in them claimed a 400 % share."""
    readings = [
        ClientWait(pid=3, at_ns=0, cpu_ns=0, waited_ns=0),
        ClientWait(pid=3, at_ns=10 * SECOND, cpu_ns=0, waited_ns=4 * SECOND),
    ]
    assert client_wait_ns(readings, 4 * SECOND, 5 * SECOND) == 4 * SECOND
    assert client_wait_share(readings, 4 * SECOND, 5 * SECOND) == 0.4
    assert client_wait_share(readings[:1], 4 * SECOND, 5 * SECOND) is None  # no bracket
