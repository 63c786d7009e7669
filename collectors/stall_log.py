"""``stalls.jsonl`` read back, and the pure view of it over a cell window.

``read_stalls`` parses what the host-stall monitor (``collectors.stall``) wrote;
``summarize_stalls`` is the view the telemetry summary and the ``host_stall`` rule read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from faceoff.files import read_jsonl
from faceoff.formats.attempt.stalls import (
    CellWindow,
    ClientWait,
    MonitorStart,
    MonitorStop,
    Stall,
    StallLine,
)
from faceoff.formats.attempt.telemetry import StallSummary

_LINE: TypeAdapter[StallLine] = TypeAdapter(StallLine)


@dataclass(frozen=True)
class StallLog:
    """``stalls.jsonl`` parsed: the monitor's start, its stalls, its stop (None if killed)."""

    start: MonitorStart | None
    stalls: tuple[Stall, ...] = ()
    stop: MonitorStop | None = None
    unreadable: int = 0
    client: tuple[ClientWait, ...] = ()

    def watched_until(self, fallback_ns: int) -> int:
        """Where the watch ended: its stop, else its last stall, else ``fallback_ns``."""
        if self.stop is not None:
            return self.stop.stopped_ns
        return max([s.end_ns for s in self.stalls], default=fallback_ns)


def read_stalls(path: Path) -> StallLog | None:
    """The monitor's file, or None when no monitor ran (no file)."""
    if not Path(path).exists():
        return None
    contents = read_jsonl(path)
    unreadable = len(contents.bad_lines) + (1 if contents.torn_tail else 0)
    lines = []
    for record in contents.records:
        try:
            lines.append(_LINE.validate_python(record))
        except ValidationError:
            unreadable += 1
    starts = [x for x in lines if isinstance(x, MonitorStart)]
    stops = [x for x in lines if isinstance(x, MonitorStop)]
    return StallLog(
        start=starts[0] if starts else None,
        stalls=tuple(x for x in lines if isinstance(x, Stall)),
        stop=stops[-1] if stops else None,
        unreadable=unreadable,
        client=tuple(x for x in lines if isinstance(x, ClientWait)),
    )


def overlap_ns(stalls: Sequence[Stall], start_ns: int, end_ns: int) -> int:
    """How much of ``[start_ns, end_ns]`` the stalls cover."""
    return sum(max(0, min(s.end_ns, end_ns) - max(s.start_ns, start_ns)) for s in stalls)


def _bracket(
    readings: Sequence[ClientWait], start_ns: int, end_ns: int
) -> tuple[ClientWait, ClientWait] | None:
    """The client's last reading at or before the start and its first at or after the end;
    None unless readings of one process bracket the span."""
    ordered = sorted(readings, key=lambda r: r.at_ns)
    before = [r for r in ordered if r.at_ns <= start_ns]
    after = [r for r in ordered if r.at_ns >= end_ns]
    if not before or not after or before[-1].pid != after[0].pid:
        return None
    return before[-1], after[0]


def client_wait_ns(readings: Sequence[ClientWait], start_ns: int, end_ns: int) -> int | None:
    """The client's CPU wait over ``[start_ns, end_ns]``, read between the readings that
    bracket it; None unless readings bracket the span."""
    bracket = _bracket(readings, start_ns, end_ns)
    return None if bracket is None else bracket[1].waited_ns - bracket[0].waited_ns


def client_wait_share(readings: Sequence[ClientWait], start_ns: int, end_ns: int) -> float | None:
    """That wait as a share of the time between the bracketing readings. A loaded host reads
    the client late, so the bracket can be much wider than the span: its wait divided by the
    span alone claimed a client that waited more than 100 % of the time."""
    bracket = _bracket(readings, start_ns, end_ns)
    if bracket is None:
        return None
    before, after = bracket
    span = after.at_ns - before.at_ns
    return (after.waited_ns - before.waited_ns) / span if span > 0 else None


def summarize_stalls(log: StallLog, window: CellWindow) -> StallSummary | None:
    """The stalls of one cell window; None when the monitor never started."""
    if log.start is None:
        return None
    inside = [s for s in log.stalls if s.end_ns > window.start_ns and s.start_ns < window.end_ns]
    stalled = overlap_ns(inside, window.start_ns, window.end_ns)
    span = window.end_ns - window.start_ns
    waited = client_wait_ns(log.client, window.start_ns, window.end_ns)
    return StallSummary(
        threshold_ns=log.start.threshold_ns,
        cpu=log.start.cpu,
        watched=log.start.started_ns <= window.start_ns
        and log.watched_until(window.start_ns) >= window.end_ns,
        stopped=log.stop is not None,
        stalls=len(inside),
        stalled_ns=stalled,
        longest_ns=max([s.length_ns for s in inside], default=0),
        stalled_share=stalled / span if span > 0 else 0.0,
        client_wait_ns=waited,
        client_wait_share=client_wait_share(log.client, window.start_ns, window.end_ns),
        unreadable_lines=log.unreadable,
    )
