"""A sweep's ladder (pure): the rate of each step, and where the SLO breaks."""

from __future__ import annotations

import pytest

from matrix.arrival import Sweep
from workload.ladder import Bracket, StepResult, bracket, next_rate


def run_ladder(sweep: Sweep, capacity: float) -> list[StepResult]:
    """Every step of ``sweep`` against an engine within SLO exactly below ``capacity``."""
    done: list[StepResult] = []
    for _ in range(sweep.step_count):
        rate = next_rate(sweep, done)
        done.append(StepResult(rate, rate < capacity))
    return done


def test_an_explicit_ladder_runs_its_rates_in_order_whatever_they_give() -> None:
    sweep = Sweep(rates=[1.0, 2.0, 4.0, 8.0])
    done = run_ladder(sweep, capacity=3.0)
    assert [s.rate for s in done] == [1.0, 2.0, 4.0, 8.0]
    assert bracket(done) == Bracket(within=2.0, breaks=4.0)


@pytest.mark.parametrize("capacity", [0.3, 1.7, 6.1, 9.9, 11.0, 23.5, 70.0])
def test_a_bisection_brackets_the_capacity_within_its_last_step(capacity: float) -> None:
    sweep = Sweep(low=1.0, high=10.0, steps=8)
    done = run_ladder(sweep, capacity)
    found = bracket(done)
    assert len(done) == 8
    within = found.within or 0.0
    if found.breaks is None:  # every step passed: the search doubled past high
        assert capacity > within >= 10.0
        return
    assert within < capacity <= found.breaks
    last_gap = abs(done[-1].rate - done[-2].rate)
    assert found.breaks - within <= 2 * last_gap


def test_a_bisection_tries_low_then_high_then_midpoints() -> None:
    done = run_ladder(Sweep(low=8.0, high=40.0, steps=4), capacity=18.8)
    assert [s.rate for s in done] == [8.0, 40.0, 24.0, 16.0]
    assert bracket(done) == Bracket(within=16.0, breaks=24.0)
    failed_low = run_ladder(Sweep(low=8.0, high=40.0, steps=3), capacity=5.0)
    assert [s.rate for s in failed_low] == [8.0, 4.0, 6.0]


def test_a_pass_above_the_first_break_does_not_count() -> None:
    noisy = [StepResult(1.0, True), StepResult(2.0, False), StepResult(3.0, True)]
    assert bracket(noisy) == Bracket(within=1.0, breaks=2.0)
    assert bracket([StepResult(1.0, False)]) == Bracket(within=None, breaks=1.0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rates": [2.0, 1.0]}, "strictly ascending"),
        ({"rates": [1.0]}, "give 2 to"),
        ({"low": 1.0, "high": 2.0}, "low, high and steps"),
        ({"low": 3.0, "high": 2.0, "steps": 3}, "must be below high"),
        ({"rates": [1.0, 2.0], "steps": 3}, "either rates"),
    ],
)
def test_a_sweep_refuses_a_ladder_it_cannot_run(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Sweep.model_validate(fields)
