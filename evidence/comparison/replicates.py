"""Between-replicate ratio intervals: a replicated cell's K windows, compared pair by pair. Pure.

Each replicate pair is measured in its own stretch of the host's history, so a Student t
interval on the logarithms of the K per-replicate p50 ratios (a window figure's ratio, an
energy figure's point ratios) widens with the variance *between* windows, which the block
bootstrap inside one window cannot see. The method:
docs/evidence.md, "Statistics" (Replicates).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from evidence.stats import student_t
from faceoff.formats.bundle.comparison import CellEntry, FigureRatio, Ratio, ReplicatedRatio
from matrix.cell import Cell

CONFIDENCE = 0.95
METHOD = (
    "a replicated cell's between-replicate interval is a Student t interval (K − 1 degrees "
    "of freedom) on the logarithms of its K per-replicate candidate/incumbent p50 ratios (an "
    "energy figure's point ratios); the estimate is their geometric mean"
)


def replicated_ratios(cells: Sequence[Cell], entries: Sequence[CellEntry]) -> list[ReplicatedRatio]:
    """One entry per replicated cell, candidate and metric, in matrix order."""
    by_id = {e.id: e for e in entries}
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        # a sequential cell's passes are looks of its design (evidence.comparison.sequential)
        if cell.replicate is not None and not cell.sequential:
            groups.setdefault(cell.replicate.of, []).append(cell)
    found = []
    for base, replicas in groups.items():
        replicated = [by_id[c.id] for c in replicas if c.id in by_id]
        keys = dict.fromkeys((r.candidate, r.metric) for e in replicated for r in _ratios(e))
        for candidate, metric in keys:
            found.append(_interval(base, candidate, metric, replicas[0], replicated))
    return found


def _ratios(entry: CellEntry) -> list[Ratio | FigureRatio]:
    """The cell's p50 ratios, its window figures' ratios, then its energy point ratios."""
    return [*entry.ratios, *entry.window_ratios, *entry.figure_ratios]


def log_t_interval(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(geometric mean, low, high): the 95 % Student t interval of two or more positive
    ratios, on their logarithms."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    multiplier = student_t.quantile(CONFIDENCE, len(logs) - 1)
    half = multiplier * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def _interval(
    base: str, candidate: str, metric: str, first: Cell, replicated: list[CellEntry]
) -> ReplicatedRatio:
    count = first.replicate.count if first.replicate else 1
    pairs = [
        (e.id, r.ratio)
        for e in replicated
        for r in _ratios(e)
        if r.candidate == candidate and r.metric == metric and r.ratio > 0
    ]
    ratios = [r for _, r in pairs]
    low = high = None
    reason: str | None = f"{len(ratios)} of {count} replicate pairs compared; an interval needs two"
    estimate = ratios[0] if ratios else None
    if len(ratios) >= 2:
        estimate, low, high = log_t_interval(ratios)
        reason = None
    return ReplicatedRatio(
        cell=base,
        candidate=candidate,
        metric=metric,
        replicates=count,
        compared=[i for i, _ in pairs],
        ratios=ratios,
        ratio=estimate,
        low=low,
        high=high,
        confidence=CONFIDENCE,
        reason=reason,
    )
