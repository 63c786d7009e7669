"""The variance between windows that a window's own interval cannot see. Pure: the stdlib.

A cell window's interval measures the spread of its requests, not the shift of the window
itself (a drift over the night, a neighbour, which arm ran first): that variance lies
between windows. Several windows of one ratio (A/A nights, the cells a criterion judges)
show it as a spread of their log ratios y_i beyond their standard errors s_i. Cochran's
Q = Σ w_i·(y_i − ȳ)², w_i = 1/s_i² and ȳ the w-weighted mean, is χ²(k − 1) when the k
windows share one ratio and nothing lies between them; DerSimonian & Laird's moment
estimate of the variance between them is τ² = max(0, (Q − (k − 1))/(Σw − Σw²/Σw)).

``detected`` tests Q against χ²(k − 1) at ``LEVEL``: with the few windows a plan learns
from (three nights) Q has little power, so it is read at 20 %, not 5 %; a false alarm costs
only passes, a miss a plan whose one window the night's drift decides.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

Estimate = tuple[float, float]  # (log ratio, its standard error)
LEVEL = 0.20


def cochran_q(estimates: Sequence[Estimate]) -> float:
    """Cochran's Q of the estimates; 0 with fewer than 2."""
    usable = [(y, s * s) for y, s in estimates if s > 0]
    if len(usable) < 2:
        return 0.0
    weights = [1 / v for _, v in usable]
    mean = sum(w * y for w, (y, _) in zip(weights, usable, strict=True)) / sum(weights)
    return sum(w * (y - mean) ** 2 for w, (y, _) in zip(weights, usable, strict=True))


def between_variance(estimates: Sequence[Estimate]) -> float:
    """DerSimonian–Laird's τ²: the variance between the windows beyond their errors."""
    weights = [1 / (s * s) for _, s in estimates if s > 0]
    if len(weights) < 2:
        return 0.0
    spread = sum(weights) - sum(w * w for w in weights) / sum(weights)
    return max(0.0, (cochran_q(estimates) - (len(weights) - 1)) / spread)


def detected(estimates: Sequence[Estimate], level: float = LEVEL) -> bool:
    """Whether the windows' spread exceeds their errors: Q above χ²(k − 1)'s 1 − ``level``
    quantile; never with fewer than 2 windows of a positive standard error."""
    k = sum(1 for _, s in estimates if s > 0)
    return k >= 2 and cochran_q(estimates) > chi2_quantile(1 - level, k - 1)


def chi2_quantile(p: float, df: int) -> float:
    """χ² quantile by Wilson–Hilferty (within 1 % from 3 degrees of freedom; for 1 and 2,
    within 5 % about the upper quantiles a test reads)."""
    z = statistics.NormalDist().inv_cdf(p)
    k = 2 / (9 * df)
    return df * max(1 - k + z * math.sqrt(k), 0.05) ** 3
