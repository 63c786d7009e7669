"""Exact per-cell counter and histogram deltas, and lane restarts (counter resets)."""

from __future__ import annotations

import pytest

from collectors.deltas import engine_deltas
from faceoff.formats.attempt.collector_samples import EngineStatus
from tests.collectors.builders import engine, window_ms

# The cell runs from 300 ms to 1_800 ms; ticks every 500 ms; the drain follows at 1_800.
WINDOW = window_ms(300, 1_800)


def drain(seq: int, **kw):  # type: ignore[no-untyped-def]
    sample = engine(seq, final=True, **kw)
    return sample.model_copy(update={"scheduled_ns": WINDOW.end_ns, "actual_ns": WINDOW.end_ns})


def test_delta_runs_from_the_last_sample_before_the_cell_to_the_drain() -> None:
    samples = [
        engine(0, counters={"prompt_tokens": 100}),
        engine(1, counters={"prompt_tokens": 110}),
        engine(2, counters={"prompt_tokens": 140}),
        engine(3, counters={"prompt_tokens": 150}),
        drain(4, counters={"prompt_tokens": 164}),
    ]
    deltas = engine_deltas(samples, WINDOW)
    got = deltas.counters["prompt_tokens"]
    assert (got.delta, got.baseline, got.final, got.resets) == (64, 100, 164, 0)
    assert got.exact and got.why_inexact is None
    assert (deltas.baseline_seq, deltas.final_seq) == (0, 4)


def test_a_lane_restart_never_gives_a_negative_delta_and_counts_after_the_reset() -> None:
    samples = [
        engine(0, counters={"generation_tokens": 1_000}),
        engine(1, counters={"generation_tokens": 1_020}),
        engine(2, counters={"generation_tokens": 5}),  # restarted: counters from zero
        engine(3, counters={"generation_tokens": 30}),
        drain(4, counters={"generation_tokens": 41}),
    ]
    got = engine_deltas(samples, WINDOW).counters["generation_tokens"]
    assert got.delta == 20 + 5 + 25 + 11
    assert got.resets == 1
    assert not got.exact and "reset" in (got.why_inexact or "")


def test_a_restart_is_seen_from_the_start_time_even_when_counters_grew_past_old_values() -> None:
    samples = [
        engine(0, counters={"prompt_tokens": 10}, gauges={"process_start_time_seconds": 1e9}),
        engine(1, counters={"prompt_tokens": 20}, gauges={"process_start_time_seconds": 1e9}),
        engine(2, counters={"prompt_tokens": 45}, gauges={"process_start_time_seconds": 2e9}),
        drain(3, counters={"prompt_tokens": 50}, gauges={"process_start_time_seconds": 2e9}),
    ]
    deltas = engine_deltas(samples, WINDOW)
    assert deltas.counters["prompt_tokens"].delta == 10 + 45 + 5
    assert deltas.resets == 1


def test_histogram_sum_and_count_deltas_give_the_cell_mean() -> None:
    name = "request_prefill_time_seconds"
    samples = [
        engine(0, histograms={name: (10.0, 4)}),
        engine(2, histograms={name: (12.5, 6)}),
        drain(4, histograms={name: (16.0, 8)}),
    ]
    got = engine_deltas(samples, WINDOW).histograms[name]
    assert (got.sum_delta, got.count_delta) == (6.0, 4)
    assert got.mean == pytest.approx(1.5)
    assert got.exact


def test_a_labelled_series_born_during_the_cell_counts_from_zero() -> None:
    stop = 'request_success{finished_reason="stop"}'
    length = 'request_success{finished_reason="length"}'
    samples = [
        engine(0, counters={stop: 3}),
        engine(2, counters={stop: 5, length: 1}),
        drain(4, counters={stop: 6, length: 2}),
    ]
    deltas = engine_deltas(samples, WINDOW).counters
    assert deltas[stop].delta == 3 and deltas[stop].exact
    assert deltas[length].delta == 2 and deltas[length].exact and deltas[length].baseline is None


def test_a_family_missing_from_the_baseline_makes_its_delta_inexact() -> None:
    samples = [
        engine(0, counters={"prompt_tokens": 10}, missing=["num_preemptions"]),
        engine(2, counters={"prompt_tokens": 20, "num_preemptions": 4}),
        drain(4, counters={"prompt_tokens": 30, "num_preemptions": 4}),
    ]
    deltas = engine_deltas(samples, WINDOW).counters
    assert deltas["prompt_tokens"].exact
    got = deltas["num_preemptions"]
    assert got.delta == 0 and not got.exact
    assert got.why_inexact == "num_preemptions absent from the baseline sample"


def test_failed_scrapes_are_skipped_and_deltas_bridge_them() -> None:
    samples = [
        engine(0, counters={"prompt_tokens": 10}),
        engine(1, status=EngineStatus.TIMEOUT),
        engine(2, status=EngineStatus.HTTP_ERROR),
        drain(4, counters={"prompt_tokens": 70}),
    ]
    got = engine_deltas(samples, WINDOW).counters["prompt_tokens"]
    assert got.delta == 60 and got.exact


def test_without_a_sample_before_the_cell_or_after_it_the_delta_says_so() -> None:
    samples = [engine(1, counters={"prompt_tokens": 10}), engine(3, counters={"prompt_tokens": 30})]
    got = engine_deltas(samples, WINDOW).counters["prompt_tokens"]
    assert got.delta == 20 and not got.exact
    assert "before the cell started" in (got.why_inexact or "")
    assert "after the cell ended" in (got.why_inexact or "")


def test_a_sample_still_in_flight_at_the_start_is_not_a_baseline() -> None:
    late_finish = engine(0, counters={"prompt_tokens": 10}).model_copy(
        update={"latency_ns": WINDOW.start_ns}  # started before the cell, answered inside it
    )
    got = engine_deltas([late_finish, drain(4, counters={"prompt_tokens": 20})], WINDOW)
    assert not got.counters["prompt_tokens"].exact


def test_no_successful_sample_gives_no_deltas_and_a_note() -> None:
    deltas = engine_deltas([engine(0, status=EngineStatus.UNREACHABLE)], WINDOW)
    assert deltas.counters == {} and deltas.histograms == {}
    assert deltas.notes == ["no successful engine sample"]


def test_a_histogram_sum_may_fall_without_being_a_reset() -> None:
    # Prometheus allows negative observations, so _sum is not monotonic; _count is.
    name = "request_queue_time_seconds"
    samples = [
        engine(0, histograms={name: (0.0, 0)}, counters={"prompt_tokens": 5}),
        engine(2, histograms={name: (-0.01, 1)}, counters={"prompt_tokens": 9}),
        drain(4, histograms={name: (0.02, 3)}, counters={"prompt_tokens": 12}),
    ]
    deltas = engine_deltas(samples, WINDOW)
    got = deltas.histograms[name]
    assert deltas.resets == 0 and got.exact
    assert (got.sum_delta, got.count_delta) == (pytest.approx(0.02), 3)
    assert deltas.counters["prompt_tokens"].delta == 7
