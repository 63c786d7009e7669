"""Statistics: type-7 percentiles, descriptions, seeded bootstrap ratios, strata kept apart."""

from __future__ import annotations

import random
import statistics

import pytest

from evidence.stats.bootstrap import (
    Sample,
    StratumMismatch,
    block_size,
    describe,
    expanded_tail,
    median_ratio,
    p95,
    quantile,
    time_blocks,
)


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
    assert (first.blocks_incumbent, first.blocks_candidate) == (5, 5)  # a value per block
    assert median_ratio(inc, cand, seed=8) != first  # another seed, another resampling


def test_a_ratio_of_p95s_bootstraps_the_tail_not_the_median() -> None:
    """Same medians, a slower tail on the candidate: the p50 ratio is 1, the p95 ratio is not."""
    inc = Sample("s", (10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 11.0))
    cand = Sample("s", (10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 30.0))
    median = median_ratio(inc, cand, seed=3)
    tail = median_ratio(inc, cand, seed=3, statistic=p95)
    assert median is not None and tail is not None
    assert median.ratio == 1.0
    assert tail.ratio == pytest.approx(p95(cand.values) / p95(inc.values))
    assert tail.ratio == pytest.approx((10 + 0.55 * 20) / (10 + 0.55 * 1))
    assert tail.high > 1.0 and tail.low <= tail.ratio <= tail.high


def test_a_ratio_across_strata_is_refused() -> None:
    with pytest.raises(StratumMismatch, match="natural/31600/c2"):
        median_ratio(Sample("natural/8192/c1", (1.0,)), Sample("natural/31600/c2", (1.0,)), seed=1)


def test_no_ratio_without_values_or_with_a_zero_incumbent_median() -> None:
    assert median_ratio(Sample("s", ()), Sample("s", (1.0,)), seed=1) is None
    assert median_ratio(Sample("s", (0.0, 0.0)), Sample("s", (1.0,)), seed=1) is None


@pytest.mark.parametrize(
    ("n", "concurrency", "size"),
    [(84, 4, 5), (84, 8, 8), (6, 2, 1), (16, 16, 3), (1_000, 1, 10), (3, 1, 1), (0, 4, 1)],
)
def test_a_block_is_a_round_of_concurrent_requests_or_the_cube_root_leaving_five_blocks(
    n: int, concurrency: int, size: int
) -> None:
    assert block_size(n, concurrency) == size


def test_blocks_follow_send_order_not_journal_order() -> None:
    send_ns = [50, 10, 40, 20, 30, 60, 90, 80, 70, 100]  # journal order is end order
    assert time_blocks(send_ns, concurrency=2) == (2, 0, 1, 0, 1, 2, 4, 3, 3, 4)


def test_a_sample_refuses_block_labels_that_do_not_match_its_values() -> None:
    with pytest.raises(ValueError, match="2 block labels for 3 values"):
        Sample("s", (1.0, 2.0, 3.0), (0, 0))


def stretches(levels: list[float], per_block: int) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Values that hold one level for a stretch of consecutive requests (a busy host, a batch)."""
    values = tuple(level + 0.01 * j for level in levels for j in range(per_block))
    return values, tuple(b for b in range(len(levels)) for _ in range(per_block))


def test_the_block_bootstrap_sees_stretches_that_the_plain_one_takes_for_independent_requests() -> (
    None
):
    inc_values, inc_blocks = stretches([10, 13, 10, 11, 14, 10, 12, 10, 13, 11], per_block=8)
    cand_values, cand_blocks = stretches([11, 10, 14, 10, 12, 13, 10, 11, 10, 13], per_block=8)
    plain = median_ratio(Sample("s", inc_values), Sample("s", cand_values), seed=3)
    blocked = median_ratio(
        Sample("s", inc_values, inc_blocks), Sample("s", cand_values, cand_blocks), seed=3
    )
    assert plain is not None and blocked is not None
    assert blocked.ratio == plain.ratio  # the point estimate does not depend on the blocks
    assert (blocked.blocks_incumbent, blocked.blocks_candidate) == (10, 10)
    assert (blocked.n_incumbent, blocked.n_candidate) == (80, 80)
    assert blocked.high - blocked.low > 1.3 * (plain.high - plain.low)
    assert blocked == median_ratio(
        Sample("s", inc_values, inc_blocks), Sample("s", cand_values, cand_blocks), seed=3
    )


def _pooled_bootstrap(
    incumbent: Sample, candidate: Sample, seed: int, resamples: int
) -> list[float]:
    """The block bootstrap written out plainly: whole blocks drawn with random.choices, pooled,
    statistics.median of each side. The vectorised one must give exactly these ratios."""
    inc, cand = incumbent.grouped(), candidate.grouped()
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        base = statistics.median([v for b in rng.choices(inc, k=len(inc)) for v in b])
        top = statistics.median([v for b in rng.choices(cand, k=len(cand)) for v in b])
        if base > 0:
            ratios.append(top / base)
    ratios.sort()
    return ratios


@pytest.mark.parametrize("seed", [0, 7, 20261017, -5, 2**40 + 3])
def test_the_fast_bootstrap_gives_exactly_the_pooled_resamples_intervals(seed: int) -> None:
    draw = random.Random(seed)
    for _ in range(6):
        samples = []
        for _ in range(2):
            n = draw.randint(1, 300)
            values = tuple(
                draw.choice([0.0, 1.0, round(draw.lognormvariate(0, 1), 2)]) for _ in range(n)
            )
            blocks = time_blocks([draw.randint(0, 10**9) for _ in range(n)], draw.randint(1, 8))
            samples.append(Sample("natural/8192/c4", values, blocks if draw.random() < 0.8 else ()))
        found = median_ratio(samples[0], samples[1], seed=seed, resamples=300)
        ratios = _pooled_bootstrap(samples[0], samples[1], seed, 300)
        if found is None:
            assert not ratios or statistics.median(samples[0].values) <= 0
            continue
        tail = expanded_tail(found.confidence, min(found.blocks_incumbent, found.blocks_candidate))
        assert (found.low, found.high) == (quantile(ratios, tail), quantile(ratios, 1.0 - tail))


def test_the_interval_reports_the_resamples_it_rests_on() -> None:
    # Two zeros in five: a resample drawing three has a zero median, no ratio, and is dropped.
    inc = Sample("s", (0.0, 0.0, 1.0, 1.0, 2.0))
    cand = Sample("s", (1.0, 1.0, 1.0, 1.0, 1.0))
    interval = median_ratio(inc, cand, seed=5, resamples=400)
    assert interval is not None
    assert 0 < interval.resamples < 400
    full = median_ratio(Sample("s", (1.0, 2.0, 3.0)), cand, seed=5, resamples=400)
    assert full is not None and full.resamples == 400


def test_few_blocks_widen_the_tails_and_many_leave_the_plain_percentile_interval() -> None:
    assert expanded_tail(0.95, 1) == 0.0  # one block: no spread to estimate, all resamples
    assert expanded_tail(0.95, 5) == pytest.approx(0.000954, rel=1e-3)  # √(5/4)·t(4) = 3.104
    assert expanded_tail(0.95, 10) < expanded_tail(0.95, 30) < expanded_tail(0.95, 1000) < 0.025
    assert expanded_tail(0.95, 100_000) == pytest.approx(0.025, rel=1e-3)


def aa_exclusions(n: int, concurrency: int, trials: int) -> float:
    """Share of seeded A/A trials (both arms drawn from one lognormal) whose interval
    excludes 1: a 95 % interval should do so at most about 5 % of the time."""
    draw = random.Random(20261201)
    wrong = 0
    for trial in range(trials):
        arms = []
        for _ in range(2):
            values = tuple(draw.lognormvariate(0.0, 0.3) for _ in range(n))
            arms.append(Sample("s", values, time_blocks(list(range(n)), concurrency)))
        found = median_ratio(arms[0], arms[1], seed=trial, resamples=1000)
        assert found is not None
        wrong += found.low > 1.0 or found.high < 1.0
    return wrong / trials


@pytest.mark.parametrize(("n", "concurrency"), [(15, 1), (16, 2), (40, 4), (300, 1)])
def test_an_aa_interval_excludes_a_true_ratio_of_one_at_most_as_often_as_its_confidence_allows(
    n: int, concurrency: int
) -> None:
    # 400 trials measure a 5 % rate to about ±1.1 points. 15 requests make 5 blocks of 3:
    # the plain percentile interval excluded 1 in 7 % of these trials, the expanded one in 2 %.
    assert aa_exclusions(n, concurrency, trials=400) <= 0.06
