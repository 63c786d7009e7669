"""The percentiles the fidelity benches print: type 7, and no p99 over too few values."""

from __future__ import annotations

from evidence.stats.bootstrap import quantile

MIN_P99 = 200  # values a printed p99 must rest on
PERCENTILES = "type 7 (linear interpolation between closest ranks, numpy's default)"


def pct(values: list[float], q: float) -> float | None:
    """The type-7 quantile; None for a p99 the sample cannot hold (fewer than MIN_P99)."""
    if not values or (q > 0.5 and len(values) < MIN_P99):
        return None
    return quantile(sorted(values), q)


def figure(value: float | None, width: int = 7) -> str:
    return f"{value:{width}.2f}" if value is not None else f"{'—':>{width}}"


def pair(values: list[float]) -> str:
    return f"{figure(pct(values, 0.5))} {figure(pct(values, 0.99))}"
