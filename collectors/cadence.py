"""Cadence accounting over a cell's samples (pure): ticks, lateness, coverage, gaps.

A cell's ticks are the ones scheduled inside its window ``[start_ns, end_ns]``
(a cell shorter than one period is judged on the tick that covers its start).
A tick is on time when its sample started within ``late_after_ns`` of its
schedule, late when later, and missed when no sample exists for it. A family
is carried at a tick when the tick's sample carries it, on time or late: a late
sample was taken and is counted (its lateness reported beside the coverage); a
tick is a miss only when no sample was taken for it or its sample failed or
lacked the family. Late is not missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from faceoff.formats.attempt.collector_samples import SampleBase
from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.telemetry import CadenceSummary, FamilyCoverage

S = TypeVar("S", bound=SampleBase)


def anchor_ns(samples: Sequence[SampleBase]) -> int | None:
    """The schedule's start (tick 0), as the samples recorded it."""
    for sample in samples:
        if not sample.final:
            return sample.scheduled_ns - sample.seq * sample.period_ns
    return None


def window_seqs(anchor: int, period_ns: int, window: CellWindow) -> range:
    first = -(-(window.start_ns - anchor) // period_ns)
    last = (window.end_ns - anchor) // period_ns
    if last < first:  # a window inside one period: the tick covering its start
        return range(first - 1, first)
    return range(first, last + 1)


def on_schedule(samples: Sequence[S]) -> dict[int, S]:
    """Tick samples by sequence number (the drain sample is not on the schedule)."""
    by_seq: dict[int, S] = {}
    for sample in samples:
        if not sample.final:
            by_seq.setdefault(sample.seq, sample)
    return by_seq


@dataclass(frozen=True)
class CellTicks(Generic[S]):
    """One source's samples placed on its schedule over a cell window, worked out once."""

    samples: Sequence[S]
    seqs: range  # the cell's ticks
    by_seq: Mapping[int, S]  # tick samples by sequence number
    period_ns: int
    late_after_ns: int

    def cell_samples(self) -> list[S]:
        """The samples of the cell's ticks, plus the drain: what peaks and maxima are taken over."""
        return [s for s in self.samples if s.final or s.seq in self.seqs]


def cell_ticks(
    samples: Sequence[S], window: CellWindow, period_ns: int, late_after_ns: int
) -> CellTicks[S]:
    period = samples[0].period_ns if samples else period_ns
    seqs = window_seqs(_anchor_or_start(samples, window), period, window)
    return CellTicks(samples, seqs, on_schedule(samples), period, late_after_ns)


def cadence_summary(ticks: CellTicks[S]) -> CadenceSummary:
    present = [ticks.by_seq[k] for k in ticks.seqs if k in ticks.by_seq]
    deviations = sorted(s.deviation_ns for s in present)
    late = sum(1 for d in deviations if d > ticks.late_after_ns)
    return CadenceSummary(
        period_ns=ticks.period_ns,
        late_after_ns=ticks.late_after_ns,
        ticks=len(ticks.seqs),
        on_time=len(present) - late,
        late=late,
        missed=len(ticks.seqs) - len(present),
        samples=len(ticks.samples),
        deviation_p50_ns=nearest_rank(deviations, 50),
        deviation_p99_ns=nearest_rank(deviations, 99),
        deviation_max_ns=deviations[-1] if deviations else None,
    )


def family_coverage(ticks: CellTicks[S], carries: Callable[[S], bool]) -> FamilyCoverage:
    samples = [ticks.by_seq.get(k) for k in ticks.seqs]
    hits = [s is not None and carries(s) for s in samples]
    lateness = [s.deviation_ns for s, hit in zip(samples, hits, strict=True) if s and hit]
    return FamilyCoverage(
        carried=len(lateness),
        coverage=len(lateness) / len(ticks.seqs) if ticks.seqs else 0.0,
        max_consecutive_misses=longest_false_run(hits),
        late=sum(1 for d in lateness if d > ticks.late_after_ns),
        max_lateness_ns=max([0, *lateness]),
    )


def _anchor_or_start(samples: Sequence[SampleBase], window: CellWindow) -> int:
    # Without a single sample the schedule is unknown; assume it began with the cell.
    anchor = anchor_ns(samples)
    return window.start_ns if anchor is None else anchor


def longest_false_run(flags: Sequence[bool]) -> int:
    longest = run = 0
    for flag in flags:
        run = 0 if flag else run + 1
        longest = max(longest, run)
    return longest


def nearest_rank(ordered: Sequence[int], percent: float) -> int | None:
    """Nearest-rank percentile of an ascending sequence."""
    if not ordered:
        return None
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]


def journal_window(outcomes: Iterable[RequestOutcome]) -> CellWindow | None:
    """The window a cell's telemetry is judged over: first send to last end, every phase.

    Warmups are inside it on purpose: the engine counters then start before the
    cell's first request and end after its last, so every token the lane served
    for the cell is in the deltas and in the journal.
    """
    sent = [o for o in outcomes if o.send_ns is not None]
    if not sent:
        return None
    first = min(o.send_ns for o in sent if o.send_ns is not None)
    return CellWindow(start_ns=first, end_ns=max(o.end_ns for o in sent))
