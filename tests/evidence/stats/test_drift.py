"""Drift of a nightly series (evidence.stats.drift), on synthetic series with known truth."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest

from evidence.history.across_nights import drift_flags
from evidence.stats.drift import MIN_NIGHTS, noise, shifts

LEVEL = 0.200  # seconds: a TTFT p50
SD = 0.004  # 2 % night-to-night noise
WIDTH = 2 * 1.96 * SD  # a nightly 95 % interval as wide as that noise gives


def series(nights: int, seed: int, steps: dict[int, float] | None = None) -> list[float]:
    """Gaussian noise around LEVEL, times each step's factor from its night on."""
    rng = random.Random(seed)
    values = []
    for night in range(nights):
        level = LEVEL
        for at, factor in (steps or {}).items():
            level *= factor if night >= at else 1.0
        values.append(rng.gauss(level, SD))
    return values


def widths(values: list[float]) -> list[float | None]:
    return [WIDTH] * len(values)


@pytest.mark.parametrize("seed", range(8))
def test_a_planted_step_is_found_at_its_night(seed: int) -> None:
    values = series(365, seed, {240: 1.25})
    found = shifts(values, widths(values))
    assert [s.index for s in found] == [240]
    assert found[0].before == pytest.approx(LEVEL, rel=0.02)
    assert found[0].after == pytest.approx(LEVEL * 1.25, rel=0.02)
    assert found[0].relative == pytest.approx(0.25, abs=0.03)


@pytest.mark.parametrize("seed", range(20))
def test_a_flat_noisy_series_has_no_drift(seed: int) -> None:
    values = series(365, 1000 + seed)
    assert shifts(values, widths(values)) == []


def test_two_steps_are_both_found_in_night_order() -> None:
    values = series(365, 7, {100: 1.3, 250: 0.7})
    assert [s.index for s in shifts(values, widths(values))] == [100, 250]


def test_a_one_night_spike_is_not_a_change_point() -> None:
    values = series(365, 3)
    values[200] *= 3
    assert shifts(values, widths(values)) == []


def test_a_lasting_shift_narrower_than_the_nightly_intervals_is_not_flagged() -> None:
    values = series(365, 5, {180: 1.0 + 0.8 * WIDTH / LEVEL})  # 0.8 of an interval width
    assert shifts(values, widths(values)) == []
    wide = [WIDTH * 0.2] * len(values)  # the same shift, with intervals a fifth as wide
    assert [s.index for s in shifts(values, wide)] == [180]


def test_a_step_in_the_last_nights_needs_min_nights_after_it() -> None:
    values = series(365, 11, {365 - MIN_NIGHTS + 1: 1.5})
    assert shifts(values, widths(values)) == []
    values = series(365, 11, {365 - MIN_NIGHTS: 1.5})
    assert [s.index for s in shifts(values, widths(values))] == [365 - MIN_NIGHTS]


def test_without_intervals_the_width_comes_from_the_noise() -> None:
    values = series(365, 13, {120: 1.25})
    assert noise(values) == pytest.approx(SD, rel=0.25)
    assert [s.index for s in shifts(values, [None] * len(values))] == [120]


def test_a_noiseless_series_is_split_exactly_where_it_steps() -> None:
    values = [1.0] * 30 + [2.0] * 30
    assert [s.index for s in shifts(values, [0.1] * 60)] == [30]
    assert shifts([1.0] * 60, [0.1] * 60) == []


def test_values_and_widths_must_pair_up() -> None:
    with pytest.raises(ValueError, match="3 values but 2 interval widths"):
        shifts([1.0, 2.0, 3.0], [0.1, 0.1])


def test_a_history_series_flags_the_campaign_and_night_of_the_change() -> None:
    nights = [date(2026, 1, 1) + timedelta(days=n) for n in range(200)]
    campaigns = [f"nightly-{n:03d}" for n in range(200)]
    flat, stepped = series(200, 17), series(200, 17, {150: 0.8})
    assert drift_flags(campaigns, nights, flat, [WIDTH] * 200) == []
    flags = drift_flags(campaigns, nights, stepped, [WIDTH] * 200)
    assert [(f.campaign, f.night, f.nights_after) for f in flags] == [
        ("nightly-150", nights[150], 50)
    ]
    assert flags[0].relative == pytest.approx(-0.2, abs=0.03)
    assert flags[0].width == pytest.approx(WIDTH)
