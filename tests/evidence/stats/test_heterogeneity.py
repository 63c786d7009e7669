"""The variance between windows beyond their intervals: Cochran's Q and DerSimonian–Laird."""

from __future__ import annotations

import random

import pytest

from evidence.stats.heterogeneity import between_variance, chi2_quantile, cochran_q, detected


def test_q_is_the_weighted_spread_about_the_weighted_mean() -> None:
    # weights 100, 100, 25: mean (0 + 20 + 5)/225 = 1/9
    estimates = [(0.0, 0.1), (0.2, 0.1), (0.2, 0.2)]
    mean = 1 / 9
    expected = 100 * mean**2 + 100 * (0.2 - mean) ** 2 + 25 * (0.2 - mean) ** 2
    assert cochran_q(estimates) == pytest.approx(expected)


def test_windows_that_agree_within_their_intervals_show_no_variance_between_them() -> None:
    assert between_variance([(0.01, 0.1), (-0.01, 0.1), (0.0, 0.1)]) == 0.0
    assert between_variance([(0.5, 0.1)]) == 0.0  # one window says nothing of the others
    assert between_variance([(0.5, 0.0), (0.1, 0.0)]) == 0.0  # nor windows without errors


def test_the_moment_estimate_recovers_the_variance_between_many_windows() -> None:
    draw = random.Random(7)
    se, between = 0.05, 0.04**2
    estimates = [(draw.gauss(0, between**0.5) + draw.gauss(0, se), se) for _ in range(4000)]
    assert between_variance(estimates) == pytest.approx(between, rel=0.15)
    alike = [(draw.gauss(0, se), se) for _ in range(4000)]
    assert between_variance(alike) < 0.1 * between


def test_q_detects_a_spread_beyond_the_errors_at_its_level() -> None:
    assert chi2_quantile(0.8, 2) == pytest.approx(3.219, rel=0.02)  # χ²(2) at 80 %
    assert chi2_quantile(0.95, 10) == pytest.approx(18.307, rel=0.01)
    assert not detected([(0.01, 0.1), (-0.01, 0.1), (0.0, 0.1)])
    assert detected([(0.2, 0.1), (-0.2, 0.1), (0.2, 0.1)])  # Q = 10.7 > 3.2
    assert not detected([(0.5, 0.1)]) and not detected([(0.5, 0.0), (-0.5, 0.0)])
