"""Arrival shapes (pure): gamma gaps with the dispersion theory gives, ramps, trace times.

Gamma gaps of shape k and scale 1/k have mean 1 and coefficient of variation 1/sqrt(k)
(``vllm bench serve --burstiness``: 1 is Poisson). The sample CV of n gaps is normal
around it with variance (c²/n)·(c² + (κ − 1)/4 − c·γ₁) by the delta method, where c is
the CV, κ = 3 + 6/k the kurtosis and γ₁ = 2/sqrt(k) the skewness (checked against 200
seeds while writing this test: the observed spread of the CV matched the formula within
4 %). Each check allows 4 standard errors: a correct schedule fails one with probability
about 6e-5, and a shape off by 10 % fails it (at n = 20,000 the standard error is 0.4 %
to 0.9 % of the CV).
"""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from faceoff.formats.attempt.request_plan import OpenLoad
from matrix.arrival import Arrival, Ramp
from workload.schedule import ramp_time, step_arrivals, trace_arrivals, unit_arrivals

GAPS = 20_000
SEEDS = (1, 2, 3)
SIGMAS = 4.0


def gaps_of(offsets: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(offsets)]


def cv_standard_error(shape: float, n: int) -> float:
    cv, kurtosis, skew = 1 / math.sqrt(shape), 3 + 6 / shape, 2 / math.sqrt(shape)
    return math.sqrt(cv**2 / n * (cv**2 + (kurtosis - 1) / 4 - cv * skew))


@pytest.mark.parametrize("burstiness", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("seed", SEEDS)
def test_gamma_gaps_have_the_coefficient_of_variation_theory_gives(
    burstiness: float, seed: int
) -> None:
    key = (seed, "ns", "cell", "arrivals", 0)
    gaps = gaps_of(unit_arrivals(Arrival.GAMMA, GAPS + 1, *key, burstiness=burstiness))
    mean, cv = statistics.fmean(gaps), statistics.pstdev(gaps) / statistics.fmean(gaps)
    expected, error = 1 / math.sqrt(burstiness), cv_standard_error(burstiness, GAPS)
    assert abs(cv - expected) <= SIGMAS * error, (cv, expected, error)
    # the mean gap is 1 at unit rate: the SE of a mean of n gaps is CV / sqrt(n)
    assert abs(mean - 1) <= SIGMAS * expected / math.sqrt(GAPS)


def test_burstiness_one_is_poisson_in_distribution_not_in_draws() -> None:
    key = (7, "ns", "cell", "arrivals", 0)
    poisson = gaps_of(unit_arrivals(Arrival.POISSON, GAPS + 1, *key))
    gamma = gaps_of(unit_arrivals(Arrival.GAMMA, GAPS + 1, *key, burstiness=1.0))
    # exponential gaps: P(gap > 1) = e^-1 for both
    for gaps in (poisson, gamma):
        share = sum(g > 1 for g in gaps) / len(gaps)
        assert abs(share - math.exp(-1)) <= SIGMAS * math.sqrt(0.233 / GAPS)


def load(**fields: object) -> OpenLoad:
    base: dict[str, object] = {"arrival": Arrival.GAMMA, "rate": 4.0, "sweep": None}
    base |= {"requests_per_step": 50, "max_in_flight": 8, "slo": None, "burstiness": 0.5}
    return OpenLoad.model_validate(base | fields)


def test_a_schedule_is_fixed_by_seed_namespace_and_cell_and_nothing_else() -> None:
    first = step_arrivals(load(), 7, "ns", "cell")
    assert first == step_arrivals(load(), 7, "ns", "cell")  # no arm, no attempt in the key
    assert first != step_arrivals(load(), 8, "ns", "cell")
    assert first != step_arrivals(load(), 7, "ns", "other")
    assert first[0] == 0 and first == sorted(first)


def test_a_linear_ramp_quickens_as_it_goes_and_lasts_as_its_mean_rate_says() -> None:
    ramp = Ramp(start=2.0, end=10.0)
    assert ramp.mean_rate == 6.0 and ramp.duration_s(120) == 20.0
    times = [ramp_time(ramp, 120, float(u)) for u in range(120)]  # constant unit offsets
    gaps = gaps_of(times)
    assert gaps[0] == pytest.approx(1 / 2.0, rel=0.1)  # the start's rate
    assert gaps[-1] == pytest.approx(1 / 10.0, rel=0.1)  # the end's
    assert all(b < a for a, b in itertools.pairwise(gaps))
    assert ramp_time(ramp, 120, 120.0) == pytest.approx(20.0)  # the expected count at its end
    assert ramp_time(ramp, 120, 130.0) == pytest.approx(21.0)  # beyond: at the end rate


def test_a_stepwise_ramp_holds_each_stage_rate() -> None:
    ramp = Ramp(start=2.0, end=10.0, stages=3)
    assert ramp.stage_rates() == [2.0, 6.0, 10.0] and ramp.duration_s(60) == 10.0
    stage_s = 10.0 / 3
    assert ramp_time(ramp, 60, 2.0 * stage_s) == pytest.approx(stage_s)
    gaps = gaps_of([ramp_time(ramp, 60, u / 2) for u in range(2, 5)])  # inside stage 1
    assert gaps == pytest.approx([0.25, 0.25])  # half a request at 2 req/s


def test_a_ramped_plan_offsets_are_its_times_at_its_mean_rate() -> None:
    ramp = Ramp(start=1.0, end=5.0)
    ramped = load(arrival=Arrival.CONSTANT, rate=ramp.mean_rate, ramp=ramp, burstiness=None)
    offsets = step_arrivals(ramped, 7, "ns", "cell")
    due = [o / ramp.mean_rate for o in offsets]  # what the runner waits for (its rate)
    assert ramped.rate == ramp.mean_rate
    assert due == pytest.approx([ramp_time(ramp, 50, float(u)) for u in range(50)])


def test_trace_times_become_offsets_at_the_replay_mean_rate() -> None:
    rate, offsets = trace_arrivals([10.0, 10.5, 12.0, 14.0])
    assert rate == pytest.approx(3 / 4.0)
    assert [o / rate for o in offsets] == pytest.approx([0.0, 0.5, 2.0, 4.0])
    assert trace_arrivals([3.0, 3.0]) == (1.0, [0.0, 0.0])  # all at once
