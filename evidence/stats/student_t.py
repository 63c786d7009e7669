"""Student's t quantiles for whole degrees of freedom. Pure: the stdlib's maths.

The two-sided probability has a closed-form series for whole degrees of freedom, and it
rises with t, so a quantile is found by bisection to float precision; above
``SERIES_LIMIT`` degrees of freedom (the series has ν/2 terms) it comes from the
Cornish–Fisher expansion instead. The formulas: docs/evidence.md, "Statistics".
"""

from __future__ import annotations

import functools
import math
import statistics

SERIES_LIMIT = 300


def two_sided_probability(t: float, df: int) -> float:
    """P(|T| < t) for t ≥ 0 and ``df`` ≥ 1 whole degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be a whole number ≥ 1, not {df}")
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        series = term = math.cos(theta)
        for k in range(3, df - 1, 2):
            term *= cos2 * (k - 1) / k
            series += term
        return 2.0 / math.pi * (theta + (sin * series if df > 1 else 0.0))
    series = term = 1.0
    for k in range(2, df - 1, 2):
        term *= cos2 * (k - 1) / k
        series += term
    return sin * series


@functools.lru_cache(maxsize=256)
def quantile(confidence: float, df: int) -> float:
    """t such that P(|T| < t) = ``confidence``: the two-sided interval's multiplier
    (2.776 for 95 % and 4 degrees of freedom)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} is outside (0, 1)")
    if df > SERIES_LIMIT:
        return _cornish_fisher(statistics.NormalDist().inv_cdf((1.0 + confidence) / 2.0), df)
    low, high = 0.0, 1.0
    while two_sided_probability(high, df) < confidence:
        high *= 2.0
    for _ in range(100):
        middle = (low + high) / 2.0
        if two_sided_probability(middle, df) < confidence:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def _cornish_fisher(z: float, df: int) -> float:
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )
