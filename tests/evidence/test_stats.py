"""Statistics: type-7 percentiles, descriptions, seeded bootstrap ratios, strata kept apart."""

from __future__ import annotations

import statistics

import pytest

from evidence.stats import Sample, StratumMismatch, describe, median_ratio, quantile


def test_quantile_is_type_7_as_statistics_inclusive_computes_it() -> None:
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6, 5.0]
    ordered = sorted(values)
    cuts = statistics.quantiles(values, n=20, method="inclusive")  # type 7 as well
    assert quantile(ordered, 0.95) == pytest.approx(cuts[18])
    assert quantile(ordered, 0.5) == statistics.median(values)
    assert quantile(ordered, 0.0) == 1.0 and quantile(ordered, 1.0) == 9.0


def test_quantile_interpolates_between_closest_ranks() -> None:
    assert quantile([10.0, 20.0], 0.95) == pytest.approx(19.5)
    assert quantile([7.0], 0.95) == 7.0


def test_quantile_refuses_empty_input_and_fractions_outside_the_unit_interval() -> None:
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)
    with pytest.raises(ValueError, match="outside"):
        quantile([1.0], 1.5)


def test_describe_gives_n_mean_extremes_and_percentiles() -> None:
    dist = describe([4.0, 1.0, 3.0, 2.0])
    assert dist is not None
    assert (dist.n, dist.mean, dist.min, dist.max, dist.p50) == (4, 2.5, 1.0, 4.0, 2.5)
    assert dist.p95 == pytest.approx(3.85)
    assert describe([]) is None


def test_ratio_and_interval_are_reproducible_from_the_seed() -> None:
    inc = Sample("natural/8192/c1", (10.0, 11.0, 12.0, 10.5, 11.5))
    cand = Sample("natural/8192/c1", (20.0, 22.0, 21.0, 19.0, 23.0))
    first = median_ratio(inc, cand, seed=7)
    assert first == median_ratio(inc, cand, seed=7)
    assert first is not None
    assert first.ratio == pytest.approx(21.0 / 11.0)
    assert first.low <= first.ratio <= first.high
    assert (first.n_incumbent, first.n_candidate, first.seed) == (5, 5, 7)
    assert median_ratio(inc, cand, seed=8) != first  # another seed, another resampling


def test_a_ratio_across_strata_is_refused() -> None:
    with pytest.raises(StratumMismatch, match="natural/31600/c2"):
        median_ratio(Sample("natural/8192/c1", (1.0,)), Sample("natural/31600/c2", (1.0,)), seed=1)


def test_no_ratio_without_values_or_with_a_zero_incumbent_median() -> None:
    assert median_ratio(Sample("s", ()), Sample("s", (1.0,)), seed=1) is None
    assert median_ratio(Sample("s", (0.0, 0.0)), Sample("s", (1.0,)), seed=1) is None
