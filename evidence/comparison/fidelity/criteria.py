"""The rule's fidelity criteria applied to the fidelity entries: one line per criterion. Pure.

A criterion bounds a figure of the candidate against the reference (``matrix.fidelity``:
at most for a divergence or a perplexity ratio, at least for an agreement share). Every
figure is judged on its 95 % interval, so each verdict errs on one side at most 2.5 % of
the time where the interval is calibrated: met when the whole interval is on the good side
of the limit, not met when the whole of it is on the other, inconclusive when it straddles
the limit or when there is no calibrated interval (fewer than ``CALIBRATED_WINDOWS``
windows, or a file written before the figure had one). The
criterion stands as its worst fidelity cell; a cell with no figures is missing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from faceoff.formats.bundle.comparison import CriterionCell, CriterionLine, CriterionStatus
from faceoff.formats.bundle.fidelity_entries import Bounds as BoundsEntry
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from matrix.fidelity import CALIBRATED_WINDOWS, FidelityCriterion

WORST_FIRST: tuple[CriterionStatus, ...] = ("not_met", "missing", "inconclusive", "met")
WORDS = {
    "kld_mean": "mean KLD",
    "kld_p99": "p99 KLD",
    "ppl_ratio": "perplexity ratio",
    "top1_agreement": "same top-1 share",
    "greedy_agreement": "greedy prompts identical",
}
Bounds = tuple[float, float | None, float | None]  # value, low, high: None without an interval


def fidelity_lines(
    criteria: Sequence[FidelityCriterion], entries: Sequence[FidelityEntry], candidate: str
) -> list[CriterionLine]:
    return [line(c, [e for e in entries if judged(c, e, candidate)]) for c in criteria]


def judged(criterion: FidelityCriterion, entry: FidelityEntry, candidate: str) -> bool:
    return entry.arm == candidate and (criterion.cells is None or entry.cell in criterion.cells)


def line(criterion: FidelityCriterion, entries: Sequence[FidelityEntry]) -> CriterionLine:
    cells = [cell_standing(criterion, e) for e in entries]
    worst = min(cells, key=lambda c: WORST_FIRST.index(c.status), default=None)
    sign = "≤" if criterion.at_most else "≥"
    head = f"{WORDS[criterion.metric]} {sign} {criterion.limit:g} against the reference"
    if worst is None:
        said = f"{head}: missing, no fidelity cell scored this candidate"
    else:
        said = f"{head}: {worst.status.replace('_', ' ')} in {worst.cell} ({shown(worst)})"
    return CriterionLine(
        metric=criterion.metric,
        test="limit",
        bound=criterion.limit,
        status=worst.status if worst else "missing",
        deciding_cell=worst.cell if worst else None,
        cells=cells,
        sentence=said,
    )


def cell_standing(criterion: FidelityCriterion, entry: FidelityEntry) -> CriterionCell:
    found = figure(criterion.metric, entry)
    if found is None:
        return CriterionCell(cell=entry.cell, status="missing", ratio=None, low=None, high=None)
    value, low, high = found
    standing: CriterionStatus = (
        "inconclusive"
        if low is None or high is None
        else status(low, high, criterion.limit, at_most=criterion.at_most)
    )
    return CriterionCell(
        cell=entry.cell,
        status=standing,
        ratio=value,
        low=low,
        high=high,
    )


def status(low: float, high: float, limit: float, *, at_most: bool) -> CriterionStatus:
    good, bad = (high <= limit, low > limit) if at_most else (low >= limit, high < limit)
    return "met" if good else "not_met" if bad else "inconclusive"


def figure(metric: str, entry: FidelityEntry) -> Bounds | None:
    f = entry.figures
    if f is None:
        return None
    if metric == "ppl_ratio":
        ln = f.ln_ppl_ratio
        if f.windows < CALIBRATED_WINDOWS:
            return math.exp(ln.value), None, None
        return math.exp(ln.value), math.exp(ln.low), math.exp(ln.high)
    if metric == "greedy_agreement":
        if entry.greedy is None:
            return None
        return entry.greedy.identical_share, *ends(entry.greedy.identical_interval)
    value, interval = {
        "kld_mean": (f.kld_mean.value, f.kld_mean),
        "kld_p99": (f.kld_p99, f.kld_p99_interval),
        "top1_agreement": (f.top1_agreement, f.top1_interval),
    }[metric]
    return value, *ends(interval if f.windows >= CALIBRATED_WINDOWS else None)


def ends(interval: BoundsEntry | None) -> tuple[float | None, float | None]:
    """An interval's ends; none in a file written before the figure had one, or below the
    windows its interval is calibrated at, where the figure alone neither meets nor fails
    a limit."""
    if interval is None:
        return None, None
    return interval.low, interval.high


def shown(cell: CriterionCell) -> str:
    if cell.ratio is None:
        return "no figure"
    if cell.low is None or cell.high is None:
        return f"{cell.ratio:.4g}, descriptive: no calibrated interval"
    if cell.low == cell.high:
        return f"{cell.ratio:.4g}"
    return f"{cell.ratio:.4g} [{cell.low:.4g}, {cell.high:.4g}]"
