"""The host-stall monitor: a tiny process beside each scored cell that notices when the host
could not run it, and when.

It sleeps one tick (1 ms) at a time on ``perf_counter_ns`` (CLOCK_MONOTONIC, the
clock the journal's timestamps are on, shared by every process of the host) and
records each wake-up later than the threshold as a stall: when it should have
woken and how long past that it waited for a CPU. It runs as its own process,
pinned to one CPU where it can be (the last the orchestrator may use), so that
neither the client's event loop nor the orchestrator's threads can delay it:
what it sees is the host, not faceoff.

It also watches the cell's client process (found by its journal path on its
command line) and reads the client's own CPU wait from Linux schedstat every
20 ms, so the wait inside the cell window can be told from the wait of the
client's start-up.

``stalls.jsonl`` in the attempt folder holds one ``start`` line, one line per
stall and per client reading (flushed as written, so a killed run keeps them)
and one ``stop`` line with the totals. The lines are ``faceoff.formats.attempt.stalls``
models; ``collectors.stall_log`` reads them back and summarizes them.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from collectors.sampler import utc_now
from faceoff.files import JsonlAppender
from faceoff.formats.attempt.stalls import ClientWait, MonitorStart, MonitorStop, Stall

TICK_NS = 1_000_000
CLIENT_EVERY_NS = 20_000_000  # client schedstat readings
CLIENT_SCAN_EVERY_NS = 100_000_000  # looking for the client in /proc until it is found
CLIENT_MODULE = b"workload.cell_client"
PR_SET_PDEATHSIG = 1


# --- the watch loop (inside the monitor process) ----------------------------------------


@dataclass
class StallTotals:
    """The loop's running totals."""

    ticks: int = 0
    stalls: int = 0
    stalled_ns: int = 0


def watch(
    record: Callable[[Stall], None],
    *,
    tick_ns: int,
    threshold_ns: int,
    stopping: Callable[[], bool],
    chores: Callable[[int], None] = lambda _: None,
    armed: Callable[[], object] = lambda: None,
    mono_ns: Callable[[], int] = time.perf_counter_ns,
    sleep: Callable[[float], object] = time.sleep,
) -> StallTotals:
    """Sleep a tick at a time until ``stopping``; every wake-up late by ≥ threshold is a stall.

    ``chores(now)`` runs after each look at the clock (reading the client); the
    time it and the writing take is the monitor's own, so the next tick is due
    one tick after they end. ``armed()`` is called once the first tick is due: from
    then on, any time the process is kept from running is seen.
    """
    totals = StallTotals()
    due = mono_ns() + tick_ns
    armed()
    while not stopping():
        sleep(tick_ns / 1e9)
        now = mono_ns()
        totals.ticks += 1
        late = now - due
        if late >= threshold_ns:
            record(Stall(start_ns=due, length_ns=late))
            totals.stalls += 1
            totals.stalled_ns += late
        chores(now)
        due = mono_ns() + tick_ns
    return totals


class ClientWatcher:
    """Finds the client by a marker on its command line and reads its schedstat."""

    def __init__(
        self,
        marker: str,
        write: Callable[[ClientWait], None],
        *,
        proc: Path = Path("/proc"),
        every_ns: int = CLIENT_EVERY_NS,
        scan_every_ns: int = CLIENT_SCAN_EVERY_NS,
    ) -> None:
        self.marker = marker.encode()
        self.write = write
        self.proc = proc
        self.every_ns = every_ns
        self.scan_every_ns = scan_every_ns
        self.pid: int | None = None
        self._next_ns = 0

    def __call__(self, now_ns: int) -> None:
        if now_ns < self._next_ns:
            return
        if self.pid is None:
            self.pid = self._find()
            if self.pid is None:
                self._next_ns = now_ns + self.scan_every_ns
                return
        reading = self._read(self.pid, now_ns)
        if reading is None:
            self.pid = None  # it ended; a later client would be found again
        else:
            self.write(reading)
        self._next_ns = now_ns + self.every_ns

    def _find(self) -> int | None:
        for entry in self.proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if self.marker in argv and CLIENT_MODULE in argv:
                return int(entry.name)
        return None

    def _read(self, pid: int, now_ns: int) -> ClientWait | None:
        try:
            fields = (self.proc / str(pid) / "schedstat").read_text().split()
            return ClientWait(
                pid=pid, at_ns=now_ns, cpu_ns=int(fields[0]), waited_ns=int(fields[1])
            )
        except (OSError, IndexError, ValueError):
            return None


def pin_cpu() -> int | None:
    """Pin this process to the last CPU it may use; None on a one-CPU host or without affinity."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return None
        os.sched_setaffinity(0, {allowed[-1]})
        return allowed[-1]
    except (AttributeError, OSError):
        return None


def _die_with(parent: int) -> None:
    """SIGTERM this process when the orchestrator dies, so no monitor outlives its cell."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        raise SystemExit(143)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m collectors.stall", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="the stalls.jsonl to write")
    parser.add_argument("--threshold-ns", type=int, required=True)
    parser.add_argument("--tick-ns", type=int, default=TICK_NS)
    parser.add_argument("--parent", type=int, required=True, help="the orchestrator's pid")
    parser.add_argument(
        "--client-marker", help="a string on the client's command line (its journal path)"
    )
    args = parser.parse_args(argv)
    _die_with(args.parent)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    cpu = pin_cpu()
    with JsonlAppender(args.out, durable=False) as out:
        started = time.perf_counter_ns()
        out.append(
            MonitorStart(
                pid=os.getpid(),
                cpu=cpu,
                tick_ns=args.tick_ns,
                threshold_ns=args.threshold_ns,
                started_ns=started,
                wall_utc=utc_now().isoformat(),
            )
        )
        client = ClientWatcher(args.client_marker, out.append) if args.client_marker else None
        totals = watch(
            out.append,
            tick_ns=args.tick_ns,
            threshold_ns=args.threshold_ns,
            stopping=stop.is_set,
            chores=client or (lambda _: None),
            armed=lambda: print("watching", flush=True),  # the parent waits for this line
        )
        out.append(
            MonitorStop(
                stopped_ns=time.perf_counter_ns(),
                ticks=totals.ticks,
                stalls=totals.stalls,
                stalled_ns=totals.stalled_ns,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
