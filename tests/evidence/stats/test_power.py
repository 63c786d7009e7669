"""Passes a replicated plan needs: even, calibrated, and their interval decides the bound."""

from __future__ import annotations

import math
import random

from evidence.comparison.replicates import log_t_interval
from evidence.stats.bootstrap import calibrated_requests
from evidence.stats.power import MAX_SEARCH, MOST_PASSES, passes_needed

DISTANCE = math.log(1.10)


def test_passes_are_even_and_calibrated_and_more_power_costs_more_requests() -> None:
    for variance in (0.05, 0.4, 2.0):
        k, n = passes_needed(variance, DISTANCE, 1, confidence=0.95)
        assert k % 2 == 0 and 2 <= k <= MOST_PASSES and n >= calibrated_requests(1)
        more = passes_needed(variance, DISTANCE, 1, confidence=0.95, power=0.95)
        assert more[0] * more[1] > k * n
    assert passes_needed(0.4, 0.0, 1, confidence=0.95) == (MOST_PASSES, MAX_SEARCH)


def test_the_fewest_passes_within_a_quarter_of_the_fewest_requests_are_chosen() -> None:
    # s² 0.4, 10 % away: 4 passes need 3.2× the requests of 16 (t(3) + z = 4.02 against
    # 2.97), 6 passes 1.5×, 8 passes 1.17×: 8 is the fewest within a quarter
    assert passes_needed(0.4, DISTANCE, 1, confidence=0.95) == (8, 57)


def test_the_planned_passes_decide_the_bound_in_at_least_80_percent_of_nights() -> None:
    """Each pass's log ratio normal about 0 with variance s²/n, the bound 10 % away: the
    passes' between-replicate interval (log t, K − 1 df) lies below 1.10 in ≈ 80 %."""
    variance = 0.4
    k, n = passes_needed(variance, DISTANCE, 1, confidence=0.95)
    draw, met = random.Random(5), 0
    for _ in range(400):
        points = [math.exp(draw.gauss(0.0, math.sqrt(variance / n))) for _ in range(k)]
        _, _, high = log_t_interval(points)
        met += high < 1.10
    assert 0.76 <= met / 400 <= 0.92
