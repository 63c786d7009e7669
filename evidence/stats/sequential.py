"""A sequential look: the passes so far of one cell, combined and judged against a bound. Pure.
The same concept at another layer: ``evidence.comparison.sequential``,
``evidence.views.card.sequential``.

Each pass j of a cell gives the log of its candidate/incumbent ratio, x_j, and a standard
error s_j with d_j degrees of freedom, read back from its block-bootstrap interval (the
expanded percentile interval is a Student t interval in effect: half-width t(b − 1)·s
for b blocks, so s_j = half-width / t(b_j − 1) and d_j = b_j − 1).

At look k the passes are combined with equal weights (each pass planned the same
requests): x̄ = mean x_j, and its variance (Σ s_j² + k·τ²)/k², where τ² is the
DerSimonian–Laird estimate of the variance *between* passes beyond what each pass's own
interval explains (DerSimonian & Laird 1986): zero when the passes agree as well as their
intervals say, larger when the night drifted between windows, so a drift widens the
interval instead of passing for a difference. Its degrees of freedom are Welch–
Satterthwaite's, τ²'s part counting k − 1.

The look judges with the interval the design allows at look k (``spending.Design``): its
z boundary c_k is turned into the Student t critical value of the same one-sided level
with the look's degrees of freedom (the significance-level approach for an estimated
variance, Jennison & Turnbull 2000, §14.2), and the interval x̄ ± t·se, on the ratio
scale, is met, not met or inconclusive against the bound exactly as a fixed design's
interval is (``evidence.comparison.ruling``). An inconclusive look stops for futility when
its interval at the wedge's level (``evidence.stats.futility``) still holds the bound.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evidence.stats import student_t
from evidence.stats.futility import Futility
from evidence.stats.heterogeneity import between_variance
from evidence.stats.spending import Design

LookStatus = Literal["met", "not_met", "inconclusive"]
MAX_LOG_HALF = 20.0


@dataclass(frozen=True)
class PassEstimate:
    """One pass's log ratio with its standard error and degrees of freedom."""

    log_ratio: float
    se: float
    df: int

    @classmethod
    def of_interval(
        cls, ratio: float, low: float, high: float, confidence: float, blocks: int
    ) -> PassEstimate:
        """From a ratio's block-bootstrap interval on ``blocks`` blocks (the fewer arm's)."""
        df = max(1, blocks - 1)
        half = (math.log(high) - math.log(low)) / 2
        return cls(math.log(ratio), half / student_t.quantile(confidence, df), df)


@dataclass(frozen=True)
class Look:
    """The passes so far combined, and how their interval at the look's level stands."""

    look: int  # how many passes it combines
    ratio: float
    low: float
    high: float
    confidence: float  # the nominal two-sided confidence of this look's interval
    se: float  # of the combined log ratio
    df: int
    between: float  # τ²: variance between passes beyond their own intervals
    status: LookStatus


def combine(passes: Sequence[PassEstimate]) -> tuple[float, float, int, float]:
    """(mean log ratio, its standard error, degrees of freedom, τ²) of equal-weight passes."""
    k = len(passes)
    mean = statistics.fmean(p.log_ratio for p in passes)
    between = _between(passes)
    total = sum(p.se**2 for p in passes) + k * between
    parts = sum(p.se**4 / p.df for p in passes)
    if between > 0:
        parts += (k * between) ** 2 / (k - 1)
    df = max(1, math.floor(total**2 / parts)) if parts > 0 else 10**6
    return mean, math.sqrt(total) / k, df, between


def look_at(
    passes: Sequence[PassEstimate], design: Design, bound: float, higher_is_better: bool
) -> Look:
    """Look ``len(passes)`` of ``design``: the combined interval at its nominal level, judged
    against the ratio ``bound`` (better above it for a rate, below it for a time)."""
    k = len(passes)
    mean, se, df, between = combine(passes)
    confidence = design.nominal_confidence(min(k, design.looks))
    # an early look of many, on few blocks, has a multiplier in the thousands: held at a
    # factor of e^20 either way, an interval that holds no bound all the same
    half = min(student_t.quantile(confidence, df) * se, MAX_LOG_HALF) if se > 0 else 0.0
    low, high = math.exp(mean - half), math.exp(mean + half)
    return Look(k, math.exp(mean), low, high, confidence, se, df, between,
                standing(low, high, bound, higher_is_better))  # fmt: skip


def futile(look: Look, futility: Futility, bound: float) -> bool:
    """Whether an undecided look stops for futility: its interval at the wedge's level (the
    z half-width f_k as a Student t critical value, as the look's own) still holds the bound."""
    level = futility.level(look.look)
    if look.status != "inconclusive" or level is None or look.se <= 0:
        return False
    distance = abs(math.log(look.ratio) - math.log(bound))
    return distance < student_t.quantile(level, look.df) * look.se


def standing(low: float, high: float, bound: float, higher_is_better: bool) -> LookStatus:
    """Met when the interval lies wholly on the better side of the bound, not met when wholly
    on the worse side, inconclusive when it straddles it."""
    worse_end, better_end = (low, high) if higher_is_better else (-high, -low)
    edge = bound if higher_is_better else -bound
    if worse_end >= edge:
        return "met"
    return "not_met" if better_end < edge else "inconclusive"


def _between(passes: Sequence[PassEstimate]) -> float:
    """DerSimonian–Laird τ² of the passes (``heterogeneity.between_variance``); 0 when a
    pass has no standard error."""
    if any(p.se <= 0 for p in passes):
        return 0.0
    return between_variance([(p.log_ratio, p.se) for p in passes])
