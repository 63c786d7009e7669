"""Energy each of the arm's GPUs used over a cell window, from ``gpu.jsonl`` alone (pure).
The same concept at another layer: ``evidence.attempt.energy``, ``evidence.comparison.energy``,
``evidence.views.card.energy``.

The exact source is NVML's total-energy counter (mJ since the driver loaded): the
joules of a window are the counter at its end minus the counter at its start. The GPU
is sampled every 2 s, not at the window's edges, so the counter is read there by
linear interpolation between the two samples around each edge (constant power over
those two slivers; everything between them is the counter's own sum). Where a GPU
has no counter (older boards, a counter that went down because the driver reloaded),
its power samples are integrated instead (trapezoid, power held constant past the
first and last sample) and the result says so. A sample's time is the middle of its
reading: ``actual_ns + latency_ns / 2``.

``faceoff audit`` recomputes this from the file; the lead number is ``joules`` over
the arm's GPUs, with ``exact`` False as soon as one GPU was integrated or the samples
do not span the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

from faceoff.formats.attempt.collector_samples import GpuReading, GpuSample
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import CellEnergy, DeviceEnergy, EnergyMethod

NS = 1e9
MJ_PER_J = 1000.0
Points = list[tuple[int, float]]  # (perf_counter_ns, value), time order


def cell_energy(samples: Sequence[GpuSample], window: CellWindow) -> CellEnergy:
    indices = sorted({r.index for s in samples for r in s.devices})
    devices = [device_energy(samples, index, window) for index in indices]
    known = [d.joules for d in devices if d.joules is not None]
    whole = bool(devices) and len(known) == len(devices)
    return CellEnergy(
        window_s=(window.end_ns - window.start_ns) / NS,
        simulated=any(s.simulated for s in samples),
        devices=devices,
        joules=sum(known) if whole else None,
        exact=whole and all(d.method is EnergyMethod.COUNTER and d.spans_window for d in devices),
    )


def device_energy(samples: Sequence[GpuSample], index: int, window: CellWindow) -> DeviceEnergy:
    counter = _points(samples, index, lambda r: r.energy_mj)
    power = _points(samples, index, lambda r: r.power_w)
    why = _counter_unusable(counter)
    if why is None:
        joules = (value_at(counter, window.end_ns) - value_at(counter, window.start_ns)) / MJ_PER_J
        return _result(index, joules, EnergyMethod.COUNTER, counter, window, why=None)
    if not power:
        return DeviceEnergy(
            index=index,
            joules=None,
            method=None,
            readings=0,
            spans_window=False,
            note=f"{why}, and no power reading either",
        )
    joules = integral(power, window.start_ns, window.end_ns) / NS
    return _result(index, joules, EnergyMethod.INTEGRATED_POWER, power, window, why=why)


def _result(
    index: int,
    joules: float,
    method: EnergyMethod,
    points: Points,
    window: CellWindow,
    *,
    why: str | None,
) -> DeviceEnergy:
    spans = points[0][0] <= window.start_ns and points[-1][0] >= window.end_ns
    gap = None if spans else "the readings do not span the window; its edges are extrapolated"
    note = "; ".join(n for n in (why and f"{why}: power integrated", gap) if n) or None
    return DeviceEnergy(
        index=index,
        joules=joules,
        method=method,
        readings=len(points),
        spans_window=spans,
        note=note,
    )


def _points(
    samples: Sequence[GpuSample], index: int, value: Callable[[GpuReading], float | None]
) -> Points:
    points = []
    for sample in samples:
        reading = next((r for r in sample.devices if r.index == index), None)
        found = None if reading is None else value(reading)
        if found is not None:
            points.append((sample.actual_ns + sample.latency_ns // 2, float(found)))
    return sorted(points)


def _counter_unusable(points: Points) -> str | None:
    if len(points) < 2:
        return "fewer than two energy-counter readings"
    if any(b[1] < a[1] for a, b in pairwise(points)):
        return "the energy counter went down (the driver reloaded?)"
    return None


def value_at(points: Points, at_ns: int) -> float:
    """The piecewise-linear function through ``points`` at ``at_ns``; flat past the ends."""
    if at_ns <= points[0][0]:
        return points[0][1]
    for (t0, v0), (t1, v1) in pairwise(points):
        if at_ns <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (at_ns - t0) / (t1 - t0)
    return points[-1][1]


def integral(points: Points, start_ns: int, end_ns: int) -> float:
    """∫ of the piecewise-linear function over [start, end], in value × ns (trapezoid)."""
    inner = [p for p in points if start_ns < p[0] < end_ns]
    edges = [(start_ns, value_at(points, start_ns)), *inner, (end_ns, value_at(points, end_ns))]
    return sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in pairwise(edges))
