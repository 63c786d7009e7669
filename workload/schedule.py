"""The open-loop load of a plan: when each scored request is due, at what rate, in which step.

A request's arrival is planned at unit rate (``arrival_s``: seconds after its step's
start at 1 request/s) and sent at ``step start + arrival_s / rate``. The unit-rate
offsets are seeded by the campaign seed, the prompt namespace, the cell (its
``prompt_id``: replicates of a cell share it, as they share their prompts) and the
step, never by the arm, so both arms of a pair get the same arrival times at the same
rate, and a bisection that reaches a rate on one arm offers it exactly as on the other.

Poisson offsets are cumulative exponential gaps of mean 1; gamma ones cumulative gamma
gaps of shape k = burstiness and scale 1 / k (mean 1, coefficient of variation
1 / sqrt(k)); constant ones 0, 1, 2, … A ramp's rate moves over time, so its offsets are
mapped through the ramp (the time its expected count reaches each offset) and planned at
its mean rate; a trace's are its recorded times at its mean rate. Either way
``arrival_s / rate`` is when the request is due, which is all the runner reads.
"""

from __future__ import annotations

import itertools
import math

from faceoff.formats.attempt.request_plan import OpenLoad
from matrix.arrival import Arrival, Ramp
from matrix.cell import Cell
from matrix.slo import Slo
from workload.text import rng_for


def open_load(cell: Cell, slo: Slo | None, *, trace_rate: float | None = None) -> OpenLoad | None:
    """The plan's open-loop section of ``cell`` (None for a closed loop); ``trace_rate``: a
    trace cell's mean rate, from its records."""
    if not cell.open_loop:
        return None
    rate = cell.ramp.mean_rate if cell.ramp is not None else cell.rate
    return OpenLoad(
        arrival=cell.arrival,
        rate=trace_rate if cell.arrival is Arrival.TRACE else rate,
        sweep=cell.sweep,
        requests_per_step=cell.requests,
        max_in_flight=cell.concurrency,
        slo=slo,
        burstiness=cell.burstiness,
        ramp=cell.ramp,
    )


def unit_arrivals(
    arrival: Arrival, count: int, *key: object, burstiness: float | None = None
) -> list[float]:
    """Offsets in seconds of ``count`` arrivals at 1 request/s, the first at 0."""
    if arrival is Arrival.CONSTANT:
        return [float(i) for i in range(count)]
    rng = rng_for(*key)
    if arrival is Arrival.POISSON:
        gaps = [rng.expovariate(1.0) for _ in range(count - 1)]
    elif arrival is Arrival.GAMMA and burstiness is not None:
        gaps = [rng.gammavariate(burstiness, 1.0 / burstiness) for _ in range(count - 1)]
    else:
        raise ValueError(f"a {arrival.value} arrival has no seeded schedule")
    return list(itertools.accumulate([0.0, *gaps]))


def step_arrivals(load: OpenLoad, seed: int, namespace: str, prompt_id: str) -> list[float]:
    """Every scored request's unit-rate offset within its step, in index order."""
    offsets: list[float] = []
    for step in range(load.steps):
        key = (seed, namespace, prompt_id, "arrivals", step)
        units = unit_arrivals(
            load.arrival, load.requests_per_step, *key, burstiness=load.burstiness
        )
        offsets += units if load.ramp is None else _ramped(load.ramp, load.requests_per_step, units)
    return offsets


def _ramped(ramp: Ramp, requests: int, units: list[float]) -> list[float]:
    """Offsets at the ramp's mean rate of the times its expected count reaches ``units``."""
    return [ramp_time(ramp, requests, u) * ramp.mean_rate for u in units]


def ramp_time(ramp: Ramp, requests: int, expected: float) -> float:
    """Seconds into the ramp when ``expected`` arrivals are expected (past its end, at its
    end rate): the inverse of the integrated rate, so unit-rate offsets become ramp times."""
    duration = ramp.duration_s(requests)
    if expected >= requests:
        return duration + (expected - requests) / ramp.end
    if ramp.stages is None:
        # expected = start·t + slope·t²/2, slope = (end − start) / duration
        slope = (ramp.end - ramp.start) / duration
        root = math.sqrt(ramp.start**2 + 2 * slope * expected)
        return 2 * expected / (ramp.start + root)  # the stable form of (root − start) / slope
    stage_s, elapsed = duration / ramp.stages, 0.0
    for rate in ramp.stage_rates():
        if expected <= rate * stage_s:
            return elapsed + expected / rate
        expected -= rate * stage_s
        elapsed += stage_s
    return duration


def trace_arrivals(times_s: list[float]) -> tuple[float, list[float]]:
    """A trace's mean rate and its requests' offsets at that rate, from their (time-scaled)
    recorded times: ``offset / rate`` is the recorded time again."""
    span = max(times_s) - min(times_s) if times_s else 0.0
    if len(times_s) < 2 or span <= 0:
        return 1.0, [0.0 for _ in times_s]  # all at once: any rate sends them at the start
    rate = (len(times_s) - 1) / span
    return rate, [(t - min(times_s)) * rate for t in times_s]
