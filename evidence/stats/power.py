"""What a planned cell can decide: interval widths, detectable differences, requests needed,
and how many requests a tail percentile needs before it can be claimed. Pure.
The same concept at another layer: ``flows.campaign.preflight.power``, ``flows.cli.power``.

A cell's ratio interval rests on its requests per arm, n, grouped in b blocks
(``bootstrap.block_size``); with a known variance s² of the log ratio per request
(``known_variance``), its standard error is s/√n and its half-width on the log scale
t(b − 1)·s/√n (the expanded percentile interval is a Student t interval in effect). A
criterion is decided when the interval clears its bound; for the interval to clear it
with probability ``power`` when the truth lies a distance δ (log scale) from the bound,

    δ ≥ (t(b − 1) + z_power)·s/√n,

the smallest difference the cell can detect. The requests needed to decide a bound are
the smallest n for which the distance from a ratio of 1 (no true difference: the
candidate as good as the incumbent) to the bound is detectable; a sequential design
(``spending``, with its futility stop, ``futility``) needs the drift per pass at which its
met side is crossed with that power before the futility stop ends it.

A tail percentile is claimed from order statistics: with n requests, the k-th largest is
an upper bound on the q-quantile at confidence c when P(Binomial(n, 1 − q) ≤ k − 1) ≤
1 − c. A claim needs at least a second-largest bound (one request may exceed the
percentile unremarked), which is MLPerf LoadGen's floor: 662 requests for a p99 at 99 %
(Reddi et al., "MLPerf Inference Benchmark", 2020; loadgen/early_stopping.cc), 473 at 95 %.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from evidence.stats import futility, student_t
from evidence.stats.bootstrap import block_size, calibrated_requests
from evidence.stats.spending import Design

NORMAL = statistics.NormalDist()
POWER = futility.POWER

MAX_SEARCH = 10**7  # requests beyond this are reported as this: never decidable in practice
MOST_PASSES = 16  # passes a replicated plan proposes at most (a night holds few windows)
PASS_SLACK = 1.25  # a plan takes fewer passes for at most a quarter more requests
TAIL_EXCEEDANCES = 1  # requests above the bound's order statistic a claim allows


def blocks_of(n: int, concurrency: int) -> int:
    """How many blocks the bootstrap will draw for ``n`` requests at ``concurrency``."""
    return max(1, math.ceil(n / block_size(n, concurrency)))


def half_width(variance: float, n: int, concurrency: int, confidence: float) -> float:
    """Expected half-width of the log-ratio interval of ``n`` requests per arm."""
    return _multiplier(n, concurrency, confidence) * math.sqrt(variance / n)


def detectable(
    variance: float, n: int, concurrency: int, confidence: float, power: float = POWER
) -> float:
    """The smallest log distance from a bound that ``n`` requests decide with ``power``."""
    z = NORMAL.inv_cdf(power)
    return (_multiplier(n, concurrency, confidence) + z) * math.sqrt(variance / n)


def requests_needed(
    variance: float, distance: float, concurrency: int, confidence: float, power: float = POWER
) -> int:
    """The fewest requests per arm whose detectable difference is at most ``distance``."""
    if distance <= 0:
        return MAX_SEARCH
    return _least(lambda n: detectable(variance, n, concurrency, confidence, power) <= distance)


def passes_needed(
    variance: float,
    distance: float,
    concurrency: int,
    *,
    confidence: float,
    power: float = POWER,
) -> tuple[int, int]:
    """(passes, requests per arm per pass) of a replicated design that decides ``distance``:
    the passes' between-replicate interval, t(K − 1) about the mean of K pass log ratios,
    each of variance s²/n. K is even, so that arm order alternates ABBA and a drift over the
    night cancels in the mean (one pass's ratio carries it whole), and the interval sees
    whatever varies between passes; n is at least the calibrated requests. More passes need
    fewer requests in all (a smaller t), but each pass costs its set-up and warmups: the
    fewest passes whose requests are within ``PASS_SLACK`` of the fewest any design up to
    ``MOST_PASSES`` needs."""
    if distance <= 0:
        return MOST_PASSES, MAX_SEARCH
    least, z, designs = calibrated_requests(concurrency), NORMAL.inv_cdf(power), []
    for k in range(2, MOST_PASSES + 1, 2):
        share = k * (distance / (student_t.quantile(confidence, k - 1) + z)) ** 2
        designs.append((k, max(math.ceil(variance / share), least)))
    fewest = min(k * n for k, n in designs)
    return next((k, n) for k, n in designs if k * n <= PASS_SLACK * fewest)


def sequential_drift(design: Design, power: float = POWER) -> float:
    """The true distance from a bound, in one pass's standard errors, that the design's
    passes decide with ``power``, its futility stop taken (``evidence.stats.futility``)."""
    return futility.futility_design(design, power).drift


def sequential_detectable(
    variance: float, per_pass: int, design: Design, concurrency: int, power: float = POWER
) -> float:
    """The smallest log distance ``design.looks`` passes of ``per_pass`` requests decide
    with ``power``; widened by the Student t multiplier of the last look, whose degrees of
    freedom are every pass's blocks less one (``evidence.stats.sequential.combine``)."""
    df = design.looks * max(1, blocks_of(per_pass, concurrency) - 1)
    widen = student_t.quantile(0.95, df) / NORMAL.inv_cdf(0.975)
    return sequential_drift(design, power) * widen * math.sqrt(variance / per_pass)


def sequential_needed(
    variance: float, distance: float, design: Design, concurrency: int, power: float = POWER
) -> int:
    """The fewest requests per pass for which the design decides ``distance``."""
    if distance <= 0:
        return MAX_SEARCH
    return _least(
        lambda n: sequential_detectable(variance, n, design, concurrency, power) <= distance
    )


def tail_floor(quantile: float, confidence: float, exceedances: int = TAIL_EXCEEDANCES) -> int:
    """The fewest requests whose (exceedances + 1)-th largest value bounds the ``quantile``
    from above at ``confidence``."""
    return _least(lambda n: _at_most(exceedances, n, 1 - quantile) <= 1 - confidence)


def _at_most(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) ≤ k)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def _multiplier(n: int, concurrency: int, confidence: float) -> float:
    blocks = blocks_of(n, concurrency)
    return student_t.quantile(confidence, max(1, blocks - 1))


def _least(enough: Callable[[int], bool]) -> int:
    """The least n ≥ 2 for which ``enough(n)`` holds (it holds for every larger n), by
    doubling then bisection; ``MAX_SEARCH`` when it never does."""
    high = 2
    while not enough(high):
        if high >= MAX_SEARCH:
            return MAX_SEARCH
        high *= 2
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high
