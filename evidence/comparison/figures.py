"""A cell's figure for a rule criterion: the candidate/incumbent ratio, its interval, and
whether that interval may decide. Pure.

A figure decides (met or not met) only on an interval that is calibrated: a point ratio
(an energy figure of one window), a zero-width interval, or an interval on fewer requests
than its method is calibrated at (``bootstrap.calibrated``) is *descriptive*: shown, never
decisive, so the criterion stays inconclusive in that cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evidence.comparison.energy import energy_value
from evidence.stats.bootstrap import CALIBRATED_BLOCKS, calibrated, calibrated_requests
from evidence.stats.heterogeneity import between_variance
from evidence.stats.multiplicity import (
    ONE_SIDED,
    clears,
    distance,
    holm,
    log_se,
    per_candidate,
    worse_p,
)
from evidence.stats.sequential import standing
from faceoff.formats.bundle.comparison import ArmCell, CellEntry, CriterionStatus, Ratio
from matrix.rule import ENERGY_METRICS, Criterion
from workload.metrics import higher_is_better

GOODPUT_LABELS = {
    "goodput_rps": "goodput (req/s)",
    "goodput_tps": "goodput (tok/s)",
    "slo_attainment": "SLO attainment",
}
CELL_FIGURE_LABELS = {
    **GOODPUT_LABELS,
    "output_tps": "output throughput (tok/s)",
    "energy_per_token_j": "energy per output token (J)",
    "goodput_per_joule": "goodput per joule (req/J)",
}
GOODPUT_FIELDS = {  # rule metric -> the Goodput field it compares
    "goodput_rps": "requests_per_s",
    "goodput_tps": "output_tps",
    "slo_attainment": "attainment",
}
POINT = "a point ratio of one window, with no interval"
REPLICATED = "between-replicate interval"  # a replicated cell's, over its windows
SPREAD = "with the spread between the criterion's other cells"
# A between-arm ratio of p99s rests on the few slowest requests of each arm, and under
# clustered stalls its bootstrap interval excludes 1 in about 11 % of A/A pairs: it is shown,
# and decides nothing (a p99 criterion stays inconclusive; each arm's own p99 claim stands).
P99 = "a ratio of p99s, whose interval does not hold its level when stalls cluster"
# What a criterion's figures and looks depend on besides the data: its metric, statistic and
# bound. Two criteria with the same key stand alike; two with different keys never share a
# look, whatever their order in the rule.
FigureKey = tuple[str, str, float]


@dataclass(frozen=True)
class Figure:
    """A cell's ratio for a criterion; ``descriptive`` says why it may not decide."""

    ratio: float
    low: float
    high: float
    confidence: float | None
    interval: str = "interval"
    descriptive: str | None = None
    # a fixed design's interval, which the campaign's error control adjusts; a sequential
    # look's was judged at its design's own level
    adjustable: bool = True
    # the interval's degrees of freedom where it is a t one (blocks or replicates less one)
    df: int | None = None

    @property
    def se(self) -> float:
        return log_se(self.low, self.high, self.confidence or 0.95, self.df)


# A cell's status for a criterion, and why it is not what its interval alone says (None).
Standing = tuple[CriterionStatus, str | None]


@dataclass(frozen=True)
class Judged:
    """One criterion's bound and its figure in each unit it judges."""

    bound: float
    higher: bool
    figures: Mapping[str, Figure | None]


def standings(judged: Sequence[Judged], candidates: int) -> list[dict[str, Standing]]:
    """Each criterion's standing per unit, under the campaign's error control
    (``evidence.stats.multiplicity``): met at the one-sided error each of the ``candidates``
    is held to, not met only where Holm's step-down over every adjustable test rejects,
    each test carrying the variance between its criterion's other windows."""
    alpha = per_candidate(candidates)
    found = [
        {unit: _standing(f, j.bound, j.higher, alpha) for unit, f in j.figures.items()}
        for j in judged
    ]
    tests = [
        (i, unit, _worse_p(f, j, spread[unit]), spread[unit] > 0)
        for i, j in enumerate(judged)
        for spread in [between_windows(j)]
        for unit, f in _adjustable(j)
    ]
    if len(tests) < 2:
        return found  # one test: its interval is the test
    rejected = holm([p for _, _, p, _ in tests])
    for (i, unit, _, spread), kept in zip(tests, rejected, strict=True):
        if found[i][unit][0] == "not_met" and not kept:
            said = f"on the worse side of {judged[i].bound:.2f} alone, not after Holm's "
            said += f"adjustment over {len(tests)} tests"
            found[i][unit] = ("inconclusive", said + (f" {SPREAD}" if spread else ""))
    return found


def _adjustable(judged: Judged) -> list[tuple[str, Figure]]:
    return [
        (unit, f)
        for unit, f in judged.figures.items()
        if f is not None and f.descriptive is None and f.adjustable
    ]


def between_windows(judged: Judged) -> dict[str, float]:
    """Per unit, the variance between the criterion's other single-window cells beyond their
    intervals (``heterogeneity.between_variance`` of their log ratios). A window's interval
    cannot see its own shift (a drift, a neighbour, the arm order), and the spread of the
    windows does; the unit's own ratio is left out, or a cell truly far worse would widen
    its own test. A replicated cell's interval has it already (its replicates are windows)."""
    single = [(u, f) for u, f in _adjustable(judged) if f.interval != REPLICATED]
    return {
        unit: between_variance([(math.log(f.ratio), f.se) for u, f in single if u != unit])
        for unit, _ in _adjustable(judged)
    }


def _worse_p(found: Figure, judged: Judged, between: float) -> float:
    """The p-value of "no worse than the bound", a single window's error widened by the
    variance ``between`` the criterion's windows."""
    spread = 0.0 if found.interval == REPLICATED else between
    se = math.sqrt(found.se**2 + spread)
    return worse_p(distance(found.ratio, judged.bound, judged.higher), se, found.df)


def _standing(found: Figure | None, bound: float, higher: bool, alpha: float) -> Standing:
    if found is None:
        return "missing", None
    if found.descriptive is not None:
        return "inconclusive", f"descriptive only: {found.descriptive}"  # shown, never decisive
    status = standing(found.low, found.high, bound, higher)
    gap = distance(found.ratio, bound, higher)
    split = found.adjustable and alpha < ONE_SIDED
    if status == "met" and split and not clears(gap, found.se, alpha, found.df):
        return "inconclusive", (
            f"met at 95 % alone, not at the one-sided {alpha:.2%} each candidate is held to"
        )
    return status, None


def bound_of(criterion: Criterion) -> float:
    """The ratio the candidate must clear, oriented by the metric's better direction."""
    higher = higher_is_better(criterion.metric)
    if criterion.non_inferiority is not None:
        return 1 - criterion.non_inferiority if higher else 1 + criterion.non_inferiority
    target = criterion.superiority or 0.0
    return 1 + target if higher else 1 - target


def figure_key(criterion: Criterion) -> FigureKey:
    return criterion.metric, criterion.statistic, bound_of(criterion)


def figure(cell: CellEntry, metric: str, candidate: str, statistic: str = "p50") -> Figure | None:
    """The candidate/incumbent ratio of ``metric``'s ``statistic`` in the cell, or None where
    there is none: a window figure's time-block interval, an energy figure's point ratio."""
    found = ratio_of(cell, metric, candidate, statistic)
    if found is not None:
        words = "time-block interval" if metric in CELL_FIGURE_LABELS else "interval"
        return of_ratio(found, cell.concurrency, words)
    return cell_figure(cell, metric, candidate) if metric in CELL_FIGURE_LABELS else None


def ratio_of(cell: CellEntry, metric: str, candidate: str, statistic: str = "p50") -> Ratio | None:
    """The cell's ratio with an interval for the candidate, metric and statistic, if any."""
    ratios = cell.ratios if statistic == "p50" else cell.tail_ratios
    if metric in CELL_FIGURE_LABELS:
        ratios = cell.window_ratios
    return next(
        (
            r
            for r in ratios
            if r.candidate == candidate and r.metric == metric and r.statistic == statistic
        ),
        None,
    )


def of_ratio(found: Ratio, concurrency: int, words: str = "interval") -> Figure:
    n = min(found.n_incumbent, found.n_candidate)
    reason = interval_reason(found.low, found.high) or (P99 if found.statistic == "p99" else None)
    if reason is None and not calibrated(n, concurrency):
        reason = uncalibrated(n, concurrency)
    blocks = min(found.blocks_incumbent, found.blocks_candidate)
    return Figure(found.ratio, found.low, found.high, found.confidence, words, reason,
                  df=blocks - 1 if blocks > 1 else None)  # fmt: skip


def interval_reason(low: float, high: float) -> str | None:
    """Why an interval cannot decide whatever it rests on: it has no width."""
    return "a zero-width interval (no spread to judge)" if low >= high else None


def uncalibrated(n: int, concurrency: int) -> str:
    return (
        f"{n} requests per arm, fewer than the {calibrated_requests(concurrency)} "
        f"({CALIBRATED_BLOCKS} whole blocks) its interval is calibrated at"
    )


def cell_figure(cell: CellEntry, metric: str, candidate: str) -> Figure | None:
    """The point ratio of one value per arm: a goodput figure, the aggregate output
    throughput (Σ completion tokens over the cell window) or an energy figure; descriptive."""
    arm = next(a for a in cell.arms if a.arm == candidate)
    base, top = _cell_value(cell.arms[0], metric), _cell_value(arm, metric)
    if base is None or top is None or base <= 0:
        return None  # a ratio to nothing says nothing
    return Figure(top / base, top / base, top / base, None, descriptive=POINT)


def _cell_value(arm: ArmCell, metric: str) -> float | None:
    if metric == "output_tps":
        return arm.aggregate_output_tps
    if metric in ENERGY_METRICS:
        return energy_value(arm, metric)
    value: float | None = getattr(arm.goodput, GOODPUT_FIELDS[metric]) if arm.goodput else None
    return value
