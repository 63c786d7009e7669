"""Error rates that hold for a campaign, not one test: a one-sided p-value read back from a
ratio interval, Holm's step-down over many, and the error split across candidates. Pure.

The declared rule makes two kinds of claim. *Promote* is an intersection-union test: every
criterion met in every cell it judges, so its false rate is at most that of one test, the
one-sided (1 − confidence)/2 = 2.5 % of a 95 % interval; with C candidates the rule judges
each is held to 2.5 %/C, so the chance that any one of them is wrongly promoted stays 2.5 %.
*Do not promote* is a union: one criterion not met in one cell suffices, so over m cell ×
criterion tests the chance of a wrong one grows with m. Holm's step-down (1979) keeps it at
2.5 %: the tests' p-values sorted, the i-th smallest is rejected at 2.5 %/(m − i + 1) while
every smaller one was.

A p-value is read back from the interval as the interval was made: se = (log high − log
low)/(2·q), q the two-sided critical value of its confidence, Student's t with the
interval's degrees of freedom where it has them (a block bootstrap's blocks less one, a
replicated cell's replicates less one), else the normal's. Holm tests far out in the tail
(2.5 %/m), where a t with few degrees of freedom is much heavier than the normal: read as
a normal, a few dependent blocks would reject there several times too often.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from evidence.stats import student_t

ONE_SIDED = 0.025  # a 95 % interval's error on each side: the rule's per-test rate
NORMAL = NormalDist()


def log_se(low: float, high: float, confidence: float, df: int | None = None) -> float:
    """The standard error of the log ratio a two-sided interval at ``confidence`` implies
    (with ``df`` degrees of freedom: a t interval's; None: a normal one's)."""
    q = NORMAL.inv_cdf(0.5 + confidence / 2) if df is None else student_t.quantile(confidence, df)
    return (math.log(high) - math.log(low)) / (2 * q)


def distance(ratio: float, bound: float, higher_is_better: bool) -> float:
    """How far, in logs, the ratio lies on the better side of the bound (negative: worse)."""
    gap = math.log(ratio) - math.log(bound)
    return gap if higher_is_better else -gap


def worse_p(distance_log: float, se: float, df: int | None = None) -> float:
    """One-sided p-value against "the candidate is no worse than the bound" (with ``df``:
    from Student's t)."""
    if se <= 0:
        return float(distance_log >= 0)
    return _cdf(distance_log / se, df)


def clears(distance_log: float, se: float, alpha: float, df: int | None = None) -> bool:
    """Whether the one-sided test at ``alpha`` shows the candidate on the better side."""
    return se > 0 and 1 - _cdf(distance_log / se, df) <= alpha


def _cdf(t: float, df: int | None) -> float:
    """P(T ≤ t): the normal's, or Student's with ``df`` degrees of freedom."""
    if df is None:
        return NORMAL.cdf(t)
    below_zero = (1 - student_t.two_sided_probability(abs(t), df)) / 2
    return below_zero if t < 0 else 1 - below_zero


def holm(p_values: Sequence[float], alpha: float = ONE_SIDED) -> list[bool]:
    """Holm's step-down rejections, in the order of ``p_values``."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, index in enumerate(order):
        if p_values[index] > alpha / (len(p_values) - rank):
            break
        rejected[index] = True
    return rejected


def per_candidate(candidates: int, alpha: float = ONE_SIDED) -> float:
    """Each candidate's one-sided error, so that over ``candidates`` it stays ``alpha``."""
    return alpha / max(1, candidates)
