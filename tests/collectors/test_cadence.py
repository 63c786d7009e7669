"""Cadence accounting and family coverage over a cell window (pure)."""

from __future__ import annotations

import pytest

from collectors.cadence import (
    CellTicks,
    cadence_summary,
    cell_ticks,
    family_coverage,
    longest_false_run,
    nearest_rank,
)
from faceoff.formats.attempt.collector_samples import EngineSample, EngineStatus
from faceoff.formats.attempt.stalls import CellWindow
from tests.collectors.builders import MS, engine, window_ms

PERIOD, SLACK = 500 * MS, 100 * MS


def carries_running(sample: EngineSample) -> bool:
    metrics = sample.metrics
    return sample.ok and metrics is not None and metrics.carries("num_requests_running")


def ticks(samples: list[EngineSample], window: CellWindow) -> CellTicks[EngineSample]:
    return cell_ticks(samples, window, PERIOD, SLACK)


def test_ticks_inside_the_window_are_on_time_late_or_missed() -> None:
    # window 300..3_300 ms holds ticks 1..6; tick 3 is late, tick 5 never sampled.
    samples = [
        engine(0),
        engine(1, late_ms=4),
        engine(2, late_ms=12),
        engine(3, late_ms=180),
        engine(4, late_ms=2),
        engine(6, late_ms=1),
        engine(7, final=True),
    ]
    got = cadence_summary(ticks(samples, window_ms(300, 3_300)))
    assert (got.ticks, got.on_time, got.late, got.missed) == (6, 4, 1, 1)
    assert got.samples == 7
    assert got.deviation_max_ns == 180 * MS
    assert got.deviation_p50_ns == 4 * MS  # of 1, 2, 4, 12, 180 ms
    assert got.deviation_p99_ns == 180 * MS


def test_coverage_counts_samples_taken_late_and_misses_only_ticks_never_taken_or_failed() -> None:
    samples = [
        engine(1),
        engine(2, missing=["num_requests_running"]),
        engine(3, missing=["num_requests_running"]),
        engine(4, status=EngineStatus.TIMEOUT),
        engine(5, late_ms=200),  # taken late: carried, its lateness reported
        engine(6),
        engine(8, late_ms=450),  # tick 7 was never taken
    ]
    got = family_coverage(ticks(samples, window_ms(500, 4_000)), carries_running)
    assert got.carried == 4  # ticks 1, 5, 6, 8
    assert got.coverage == pytest.approx(4 / 8)
    assert got.max_consecutive_misses == 3  # ticks 2, 3, 4
    assert (got.late, got.max_lateness_ns) == (2, 450 * MS)


def test_a_late_but_taken_sample_never_costs_coverage() -> None:
    on_time = [engine(k) for k in range(1, 9)]
    all_late = [engine(k, late_ms=100 + 45 * k) for k in range(1, 9)]
    window = window_ms(500, 4_000)
    punctual = family_coverage(ticks(on_time, window), carries_running)
    late = family_coverage(ticks(all_late, window), carries_running)
    assert (late.carried, late.coverage, late.max_consecutive_misses) == (8, 1.0, 0)
    assert (punctual.carried, punctual.coverage) == (late.carried, late.coverage)
    assert (late.late, late.max_lateness_ns) == (8, 460 * MS)
    assert (punctual.late, punctual.max_lateness_ns) == (0, 0)


def test_a_never_taken_tick_always_costs_coverage() -> None:
    window = window_ms(500, 4_000)
    for gap in range(1, 9):
        samples = [engine(k) for k in range(1, 9) if k != gap]
        got = family_coverage(ticks(samples, window), carries_running)
        assert (got.carried, got.max_consecutive_misses) == (7, 1), gap


def test_a_cell_shorter_than_a_period_is_judged_on_the_tick_covering_its_start() -> None:
    samples = [engine(2), engine(3)]
    window = window_ms(1_100, 1_300)
    assert cadence_summary(ticks(samples, window)).ticks == 1
    got = family_coverage(ticks(samples, window), carries_running)
    assert (got.carried, got.coverage) == (1, 1.0)
    assert [s.seq for s in ticks(samples, window).cell_samples()] == [2]


def test_without_samples_every_tick_of_the_window_is_missed() -> None:
    window = window_ms(0, 2_000)
    got = cadence_summary(ticks([], window))
    assert (got.ticks, got.missed, got.on_time) == (5, 5, 0)
    assert got.deviation_p99_ns is None
    cov = family_coverage(ticks([], window), carries_running)
    assert (cov.coverage, cov.max_consecutive_misses) == (0.0, 5)


def test_the_drain_sample_is_off_schedule_but_part_of_the_cell() -> None:
    samples = [engine(0), engine(1), engine(9, final=True)]
    window = window_ms(400, 600)
    assert [s.seq for s in ticks(samples, window).cell_samples()] == [1, 9]
    assert cadence_summary(ticks(samples, window)).ticks == 1


@pytest.mark.parametrize(
    ("flags", "longest"),
    [([], 0), ([True, True], 0), ([False], 1), ([True, False, False, True, False], 2)],
)
def test_longest_false_run(flags: list[bool], longest: int) -> None:
    assert longest_false_run(flags) == longest


def test_nearest_rank_percentile() -> None:
    values = list(range(1, 101))
    assert nearest_rank(values, 99) == 99
    assert nearest_rank(values, 50) == 50
    assert nearest_rank([7], 99) == 7
    assert nearest_rank([], 99) is None
