"""The variance between windows that a window's own interval cannot see. Pure: the stdlib.

A cell window's interval measures the spread of its requests, not the shift of the window
itself (a drift over the night, a neighbour, which arm ran first): that variance lies
between windows. Several windows of one ratio (A/A nights, the cells a criterion judges)
show it as a spread of their log ratios y_i beyond their standard errors s_i. Cochran's
Q = Σ w_i·(y_i − ȳ)², w_i = 1/s_i² and ȳ the w-weighted mean, is χ²(k − 1) when the k
windows share one ratio and nothing lies between them; DerSimonian & Laird's moment
estimate of the variance between them is τ² = max(0, (Q − (k − 1))/(Σw − Σw²/Σw)).
"""

from __future__ import annotations

from collections.abc import Sequence

Estimate = tuple[float, float]  # (log ratio, its standard error)


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
