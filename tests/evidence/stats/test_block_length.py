"""The block length from the data, the variance it misses, the paired bootstrap, and the
p-values read back from its intervals."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from evidence.stats.block_length import (
    block_length,
    dependence,
    episode_floor,
    slow_run,
    variance_inflation,
)
from evidence.stats.bootstrap import Sample, median_ratio, paired, timed_sample
from evidence.stats.multiplicity import clears, log_se, worse_p


def ar1(phi: float, n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    shocks = rng.normal(0.0, math.sqrt(1 - phi * phi), n)
    values = [float(rng.normal())]
    for shock in shocks[1:]:
        values.append(phi * values[-1] + float(shock))
    return values


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_independent_values_ask_for_short_blocks_and_ar1_for_longer(seed: int) -> None:
    independent = [float(v) for v in np.random.default_rng(seed).normal(size=512)]
    remembering = ar1(0.6, 512, seed)
    assert block_length(independent) <= 3
    # Politis–White's length for AR(1) φ = 0.6 at n = 512 is about 1.74·512^⅓ ≈ 14
    assert 7 <= block_length(remembering) <= 30
    assert dependence(independent).memory < 0.5
    assert dependence(remembering).memory > 1.0


def test_short_or_constant_series_have_no_dependence_to_measure() -> None:
    assert dependence([1.0, 2.0, 3.0]) == dependence([5.0] * 100)
    assert dependence([5.0] * 100).length == 1 and dependence([5.0] * 100).memory == 0.0


def test_a_trend_is_long_memory_capped_at_three_root_n_or_a_third_of_the_series() -> None:
    assert block_length([float(k) for k in range(90)]) == 29  # ⌈3·√90⌉ < 90/3
    assert block_length([float(k) for k in range(30)]) == 10


def test_a_stall_episode_is_the_longest_run_above_the_upper_quartile() -> None:
    values = np.random.default_rng(3).lognormal(0.0, 0.3, 64)
    values[20:28] *= 2.0  # one 8-request stall, too few for an autocorrelation to show
    assert dependence(values).length == 3  # the dependence test sees next to nothing
    assert slow_run(values) == 8 and episode_floor(values) == 12
    values[24] = 0.5  # a quick request inside the episode splits its run
    assert slow_run(values) == 4 and episode_floor(values) == 6


def test_independent_values_ask_for_no_longer_block_than_their_own_runs() -> None:
    draws = [np.random.default_rng(seed).lognormal(0, 0.3, 64) for seed in range(200)]
    floors = [episode_floor(values) for values in draws]
    assert sorted(floors)[len(floors) // 2] <= 5  # a median run of 3 by chance: about ⌈64^⅓⌉
    assert slow_run([5.0] * 64) == 0 and episode_floor([5.0] * 64) == 1
    assert slow_run([3.0, 2.0, 1.0]) == 0  # too few values to say


def test_the_variance_a_short_block_misses_grows_with_memory_and_is_capped() -> None:
    assert variance_inflation(0.0, 4) == 1.0
    assert variance_inflation(2.0, 8) == pytest.approx(4 / 3)
    assert variance_inflation(50.0, 8) == 2.0


def keyed(values: list[float], order: list[int]) -> Sample:
    timed = [(send, values[k], (k, f"prompt-{k}")) for send, k in enumerate(order)]
    return timed_sample("s", timed, 1)


def test_arms_with_the_same_requests_are_paired_by_index_in_common_blocks() -> None:
    values = ar1(0.6, 64, 5)
    incumbent = keyed(values, list(range(64)))
    candidate = keyed([2 * v for v in values], list(reversed(range(64))))
    both = paired(incumbent, candidate)
    assert both is not None
    assert both[0].blocks == both[1].blocks
    assert [k for k, _ in both[0].keys] == list(range(64)) == [k for k, _ in both[1].keys]
    assert both[1].values == tuple(2 * v for v in values)


def test_different_requests_or_prompt_vectors_are_not_paired() -> None:
    values = [float(v) for v in range(20)]
    incumbent = keyed(values, list(range(20)))
    other = Sample("s", incumbent.values, incumbent.blocks, ((0, "other"), *incumbent.keys[1:]))
    assert paired(incumbent, other) is None
    assert paired(incumbent, Sample("s", incumbent.values, incumbent.blocks)) is None


def test_a_paired_bootstrap_sees_a_shared_prompt_effect_cancel() -> None:
    # Each prompt's own length dominates its latency on both arms alike: pairing removes it.
    draw = random.Random(11)
    prompts = [draw.lognormvariate(0.0, 1.0) for _ in range(64)]
    inc = keyed([p * draw.lognormvariate(0.0, 0.05) for p in prompts], list(range(64)))
    cand = keyed([p * draw.lognormvariate(0.0, 0.05) for p in prompts], list(range(64)))
    apart = median_ratio(Sample("s", inc.values, inc.blocks), Sample("s", cand.values, cand.blocks),
                         seed=3, resamples=500)  # fmt: skip
    together = median_ratio(inc, cand, seed=3, resamples=500)
    assert apart is not None and together is not None
    assert together.high / together.low < (apart.high / apart.low) ** 0.5


def test_dependent_values_widen_the_interval_about_the_same_ratio() -> None:
    values = ar1(0.8, 128, 9)
    inc = keyed([math.exp(v) for v in values], list(range(128)))
    cand = keyed([math.exp(v) for v in ar1(0.8, 128, 10)], list(range(128)))
    plain = Sample("s", cand.values, cand.blocks, cand.keys)  # memory 0: not widened
    wide = median_ratio(inc, cand, seed=4, resamples=400)
    narrow = median_ratio(Sample("s", inc.values, inc.blocks, inc.keys), plain, seed=4,
                          resamples=400)  # fmt: skip
    assert wide is not None and narrow is not None and wide.ratio == narrow.ratio
    assert wide.low < narrow.low and wide.high > narrow.high


def test_a_p_value_read_from_a_t_interval_uses_its_degrees_of_freedom() -> None:
    # A t(7) interval's half-width is 2.365 se; read as a normal one its se looks 1.21× larger
    # and its far tail far lighter: the p-value Holm compares with 2.5 %/12 must be the t one.
    low, high = math.exp(-2.365), math.exp(2.365)
    assert log_se(low, high, 0.95, 7) == pytest.approx(1.0, rel=1e-3)
    assert worse_p(-3.0, 1.0, 7) == pytest.approx(0.00999, rel=1e-2)
    assert worse_p(-3.0, 1.0) == pytest.approx(0.00135, rel=1e-2)
    assert worse_p(3.0, 1.0, 7) == pytest.approx(1 - 0.00999, rel=1e-3)
    assert clears(2.0, 1.0, 0.05, 7) and not clears(1.8, 1.0, 0.05, 7)  # t(7) at 95 %: 1.895
    assert clears(1.7, 1.0, 0.05) and not clears(1.6, 1.0, 0.05)  # the normal's: 1.645
