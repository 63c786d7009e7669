"""The attempt's energy figures (joules over the scored window per output token and per good
request) and its tails (ITL from chunk times, a p99 claimed only from enough values). Pure."""

from __future__ import annotations

import random

import pytest

from evidence.attempt.energy import energy_figures
from evidence.attempt.tails import chunk_gaps, p99_floor, tail_of
from tests.collectors.gpu.test_energy import S, reading, sample, steady
from workload.outcome import RequestOutcome


def test_energy_per_token_is_the_counter_delta_over_the_output_tokens() -> None:
    samples = steady(400, [0.0, 2.0, 4.0, 6.0], simulated=True)
    figures = energy_figures(samples, (1 * S, 5 * S), output_tokens=800, good=(3, 600))
    assert figures.method == "counter" and figures.simulated and figures.gpu.exact
    assert figures.gpu.joules == pytest.approx(1_600.0)  # 400 W for 4 s
    assert figures.energy_per_token_j == pytest.approx(2.0)
    assert figures.output_tokens_per_j == pytest.approx(0.5)
    assert figures.goodput_per_joule == pytest.approx(3 / 1_600)
    assert figures.goodput_tokens_per_j == pytest.approx(600 / 1_600)


def test_energy_without_a_counter_is_integrated_and_said_so() -> None:
    samples = [sample(i, t, reading(0, None, 300.0), reading(1, None, 100.0))
               for i, t in enumerate([0.0, 2.0, 4.0])]  # fmt: skip
    figures = energy_figures(samples, (0, 4 * S), output_tokens=100, good=None)
    assert figures.method == "integrated_power" and not figures.gpu.exact
    assert figures.gpu.joules == pytest.approx(1_600.0)  # (300 + 100) W for 4 s, both GPUs
    assert figures.energy_per_token_j == pytest.approx(16.0)
    assert figures.goodput_per_joule is None and figures.goodput_tokens_per_j is None
    mixed = [sample(i, t, reading(0, 1_000 + 300 * t, 300.0), reading(1, None, 100.0))
             for i, t in enumerate([0.0, 2.0, 4.0])]  # fmt: skip
    assert energy_figures(mixed, (0, 4 * S), 100, None).method == "mixed"


def test_no_gpu_energy_gives_no_figure_per_joule() -> None:
    unreadable = [sample(i, t, reading(0, None, None)) for i, t in enumerate([0.0, 2.0])]
    figures = energy_figures(unreadable, (0, 2 * S), output_tokens=10, good=(1, 10))
    assert figures.gpu.joules is None and figures.method is None
    assert figures.energy_per_token_j is None and figures.goodput_per_joule is None
    none_out = energy_figures(steady(100, [0.0, 2.0]), (0, 2 * S), output_tokens=0, good=None)
    assert none_out.energy_per_token_j is None and none_out.output_tokens_per_j == 0.0


def test_a_p99_is_claimed_only_from_the_floor_of_values_at_95_percent() -> None:
    floor = p99_floor(0.95)
    assert floor == 473  # MLPerf LoadGen's early-stopping floor
    shuffled = list(range(floor))
    random.Random(4).shuffle(shuffled)  # independent values in journal order
    short = tail_of([float(v) for v in shuffled if v < floor - 1])
    enough = tail_of([float(v) for v in shuffled])
    assert (short.p99_claimed, enough.p99_claimed) == (False, True)
    assert enough.p50 == pytest.approx((floor - 1) / 2) and enough.max == floor - 1
    assert enough.p99 == pytest.approx(0.99 * (floor - 1))


def test_a_p99_counts_independent_blocks_not_values() -> None:
    # Ten times the floor, but in runs of 40 alike values (a stall slows a run of requests):
    # about 120 independent blocks, too few for the order-statistic bound.
    draw = random.Random(5)
    runs = [draw.lognormvariate(0.0, 0.5) for _ in range(120)]
    clustered = [level * draw.uniform(0.99, 1.01) for level in runs for _ in range(40)]
    assert len(clustered) > 10 * p99_floor(0.95)
    assert not tail_of(clustered).p99_claimed
    independent_values = [draw.lognormvariate(0.0, 0.5) for _ in range(len(clustered))]
    assert tail_of(independent_values).p99_claimed
    empty = tail_of([])
    assert (empty.n, empty.p99, empty.p99_claimed) == (0, None, False)


def test_inter_token_latency_is_the_gap_between_consecutive_chunks() -> None:
    outcome = RequestOutcome.model_construct(chunk_offsets_us=[1_000, 1_500, 4_500, 4_600])
    assert chunk_gaps(outcome) == pytest.approx([0.0005, 0.003, 0.0001])
    assert chunk_gaps(RequestOutcome.model_construct(chunk_offsets_us=[7])) == []
