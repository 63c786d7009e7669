"""Drift of a nightly series: where its level moved and stayed moved (pure).
The same concept at another layer: ``tickets.drift``.

The series is one arm's nightly p50 of one metric on one cell and host, oldest night
first, with each night's interval width where known. Change points come from binary
segmentation with a CUSUM split over a robust estimate of the night-to-night noise, and
must be sustained and wider than the nights' own intervals: a one-night spike, or a shift
narrower than the intervals, is never flagged. The method: docs/history.md, "Drift".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

MIN_NIGHTS = 5
Z = 5.0
MAD_SCALE = 1.4826  # median absolute deviation -> standard deviation, for normal noise
NORMAL_95 = 1.96
FLOOR = 1e-9  # relative to the series' largest value


@dataclass(frozen=True)
class Shift:
    """A change point: the series' level from ``index`` on differs from before it."""

    index: int
    before: float  # median of the segment before the change
    after: float  # median of the segment from the change on
    width: float  # the typical interval width the shift exceeded
    score: float  # the CUSUM split's standardised difference of means

    @property
    def relative(self) -> float:
        """after / before − 1; 0 where the level before was 0."""
        return self.after / self.before - 1 if self.before else 0.0


def noise(values: Sequence[float]) -> float:
    """Robust standard deviation of the night-to-night noise."""
    steps = [abs(b - a) for a, b in pairwise(values)]
    return MAD_SCALE * median(steps) / math.sqrt(2) if steps else 0.0


def typical_width(widths: Sequence[float | None], sigma: float) -> float:
    known = [w for w in widths if w is not None]
    return median(known) if known else 2 * NORMAL_95 * sigma


def shifts(
    values: Sequence[float],
    widths: Sequence[float | None],
    *,
    min_nights: int = MIN_NIGHTS,
    z: float = Z,
) -> list[Shift]:
    """Every change point of the series, in night order."""
    if len(widths) != len(values):
        raise ValueError(f"{len(values)} values but {len(widths)} interval widths")
    # a noiseless series still has a best split: the floor keeps its scores finite
    sigma = max(noise(values), FLOOR * max((abs(v) for v in values), default=0.0), FLOOR)
    width = typical_width(widths, sigma)
    found: list[Shift] = []
    pending = [(0, len(values))]
    while pending:
        start, end = pending.pop()
        shift = _split(values, start, end, sigma=sigma, width=width, k=min_nights, z=z)
        if shift is not None:
            found.append(shift)
            pending += [(start, shift.index), (shift.index, end)]
    return sorted(found, key=lambda s: s.index)


def _split(
    values: Sequence[float], start: int, end: int, *, sigma: float, width: float, k: int, z: float
) -> Shift | None:
    """The best split of values[start:end], when it is a change point."""
    if end - start < 2 * k:
        return None
    best, at = _best_split(values[start:end], k, sigma)
    at += start
    if best <= z:
        return None
    before, after = median(values[start:at]), median(values[at:end])
    middle, up = (before + after) / 2, after > before
    beyond = sum((v > middle) == up for v in values[at:end])  # nights at the new level
    if abs(after - before) <= width or beyond < k:
        return None
    return Shift(index=at, before=before, after=after, width=width, score=best)


def _best_split(segment: Sequence[float], k: int, sigma: float) -> tuple[float, int]:
    """(score, offset) of the split with the largest standardised difference of means;
    running sums keep it linear in the segment's length."""
    total, n = math.fsum(segment), len(segment)
    running = math.fsum(segment[:k])
    best = (-1.0, k)
    for t in range(k, n - k + 1):
        gap = abs(running / t - (total - running) / (n - t))
        score = gap / (sigma * math.sqrt(1 / t + 1 / (n - t)))
        best = max(best, (score, t))
        running += segment[t]  # t < n - k + 1 <= n
    return best
