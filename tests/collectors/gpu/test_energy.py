"""Energy per cell window from gpu.jsonl: the counter's delta (exact) and the power integral
(the fallback), both pure functions of the samples."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from collectors.gpu.energy import cell_energy, integral, value_at
from faceoff.formats.attempt.collector_samples import GpuReading, GpuSample, ReadStatus
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import EnergyMethod

S = 1_000_000_000
WALL = datetime(2025, 6, 1, tzinfo=UTC)


def sample(seq: int, at_s: float, *readings: GpuReading, simulated: bool = False) -> GpuSample:
    return GpuSample(
        seq=seq, final=False, period_ns=2 * S, scheduled_ns=int(at_s * S),
        actual_ns=int(at_s * S), wall_utc=WALL, latency_ns=0, status=ReadStatus.OK,
        devices=list(readings), simulated=simulated,
    )  # fmt: skip


def reading(index: int, energy_j: float | None, power_w: float | None) -> GpuReading:
    energy = None if energy_j is None else int(energy_j * 1000)
    return GpuReading(index=index, energy_mj=energy, power_w=power_w)


def steady(watts: float, times: list[float], *, simulated: bool = False) -> list[GpuSample]:
    """Samples of one GPU drawing ``watts`` all along, its counter at 5 kJ at 0 s."""
    return [
        sample(i, t, reading(0, 5_000 + watts * t, watts), simulated=simulated)
        for i, t in enumerate(times)
    ]


def test_a_steady_gpu_gives_the_same_joules_by_counter_and_by_integral() -> None:
    times = [0.0, 2.0, 4.0, 6.0, 8.0]
    samples = steady(500, times)
    energy = cell_energy(samples, CellWindow(start_ns=1 * S, end_ns=7 * S))
    (device,) = energy.devices
    assert device.method is EnergyMethod.COUNTER and device.spans_window
    assert energy.exact and energy.joules == pytest.approx(3_000.0)
    assert energy.mean_power_w == pytest.approx(500.0)
    power = [(int(t * S), 500.0) for t in times]
    assert integral(power, 1 * S, 7 * S) / S == pytest.approx(3_000.0)


def test_the_counter_catches_a_burst_that_the_power_samples_miss() -> None:
    # 400 W at every sample, but the counter rose by 1,600 J between 2 s and 4 s: a burst
    # of 800 W in between. The counter is the truth; the trapezoid would say 800 J.
    counter = [0.0, 800.0, 2_400.0, 3_200.0]
    samples = [
        sample(i, 2.0 * i, reading(0, 10_000 + joules, 400.0)) for i, joules in enumerate(counter)
    ]
    energy = cell_energy(samples, CellWindow(start_ns=2 * S, end_ns=4 * S))
    assert energy.devices[0].method is EnergyMethod.COUNTER
    assert energy.joules == pytest.approx(1_600.0) and energy.exact


def test_a_window_edge_between_samples_is_read_by_interpolation() -> None:
    points = [(0, 0.0), (2 * S, 1_000.0), (4 * S, 1_100.0)]
    assert value_at(points, 1 * S) == pytest.approx(500.0)
    assert value_at(points, 3 * S) == pytest.approx(1_050.0)
    assert value_at(points, -S) == 0.0 and value_at(points, 9 * S) == 1_100.0


def test_a_gpu_without_a_counter_is_integrated_and_said_so() -> None:
    samples = [
        s.model_copy(update={"devices": [*s.devices, reading(1, None, 300.0)]})
        for s in steady(500, [0.0, 2.0, 4.0])
    ]
    energy = cell_energy(samples, CellWindow(start_ns=0, end_ns=4 * S))
    counted, integrated = energy.devices
    assert counted.method is EnergyMethod.COUNTER and counted.joules == pytest.approx(2_000.0)
    assert integrated.method is EnergyMethod.INTEGRATED_POWER
    assert integrated.joules == pytest.approx(1_200.0)
    assert integrated.note == "fewer than two energy-counter readings: power integrated"
    assert energy.joules == pytest.approx(3_200.0) and not energy.exact


def test_a_counter_that_went_down_falls_back_to_the_power_integral() -> None:
    values = [(9_000.0, 250.0), (9_500.0, 250.0), (100.0, 250.0)]  # the driver reloaded
    samples = [sample(i, 2.0 * i, reading(0, e, p)) for i, (e, p) in enumerate(values)]
    energy = cell_energy(samples, CellWindow(start_ns=0, end_ns=4 * S))
    device = energy.devices[0]
    assert device.method is EnergyMethod.INTEGRATED_POWER
    assert device.joules == pytest.approx(1_000.0)
    assert "went down" in (device.note or "")


def test_readings_that_do_not_span_the_window_are_not_exact() -> None:
    energy = cell_energy(steady(500, [2.0, 4.0]), CellWindow(start_ns=1 * S, end_ns=4 * S))
    device = energy.devices[0]
    assert device.method is EnergyMethod.COUNTER and not device.spans_window
    assert not energy.exact and "extrapolated" in (device.note or "")
    assert energy.joules == pytest.approx(1_000.0)  # 2 s to 4 s; nothing known before 2 s


def test_a_gpu_with_no_reading_at_all_leaves_the_total_unknown() -> None:
    samples = [sample(i, 2.0 * i, reading(0, None, None)) for i in range(3)]
    energy = cell_energy(samples, CellWindow(start_ns=0, end_ns=4 * S))
    assert energy.joules is None and not energy.exact
    assert (
        energy.devices[0].note
        == "fewer than two energy-counter readings, and no power reading either"
    )


def test_energy_of_a_virtual_gpu_is_labelled_simulated() -> None:
    samples = steady(100, [0.0, 2.0], simulated=True)
    assert cell_energy(samples, CellWindow(start_ns=0, end_ns=2 * S)).simulated
