"""The open-loop load of a plan: when each scored request is due, at what rate, in which step.

A request's arrival is planned at unit rate (``arrival_s``: seconds after its step's
start at 1 request/s) and sent at ``step start + arrival_s / rate``. The unit-rate
offsets are seeded by the campaign seed, the prompt namespace, the cell (its
``prompt_id``: replicates of a cell share it, as they share their prompts) and the
step, never by the arm, so both arms of a pair get the same arrival times at the same
rate, and a bisection that reaches a rate on one arm offers it exactly as on the other.
"""

from __future__ import annotations

import itertools

from pydantic import Field, model_validator

from faceoff.artifact import Spec
from matrix.arrival import Arrival, Sweep
from matrix.cell import Cell
from matrix.slo import Slo
from workload.text import rng_for


class OpenLoad(Spec):
    """The open-loop part of a request plan (absent for a closed-loop cell)."""

    arrival: Arrival = Field(description="poisson or constant.")
    rate: float | None = Field(description="Requests/s of a single open-loop run.")
    sweep: Sweep | None = Field(description="The ladder of a sweep cell.")
    requests_per_step: int = Field(ge=1, description="Scored requests of each step.")
    max_in_flight: int = Field(ge=1, description="The cell's concurrency: requests in flight.")
    slo: Slo | None = Field(description="The SLO each step is judged by (cell's or campaign's).")

    @model_validator(mode="after")
    def _judged(self) -> OpenLoad:
        if (self.rate is None) == (self.sweep is None):
            raise ValueError("an open load has a rate or a sweep, not both")
        if self.sweep is not None and self.slo is None:
            raise ValueError("a sweep's steps are judged by an SLO; give one")
        return self

    @property
    def steps(self) -> int:
        return self.sweep.step_count if self.sweep is not None else 1


def open_load(cell: Cell, slo: Slo | None) -> OpenLoad | None:
    """The plan's open-loop section of ``cell`` (None for a closed loop)."""
    if not cell.open_loop:
        return None
    return OpenLoad(
        arrival=cell.arrival,
        rate=cell.rate,
        sweep=cell.sweep,
        requests_per_step=cell.requests,
        max_in_flight=cell.concurrency,
        slo=slo,
    )


def unit_arrivals(arrival: Arrival, count: int, *key: object) -> list[float]:
    """Offsets in seconds of ``count`` arrivals at 1 request/s, the first at 0."""
    if arrival is Arrival.CONSTANT:
        return [float(i) for i in range(count)]
    if arrival is not Arrival.POISSON:
        raise ValueError(f"a {arrival.value} arrival has no schedule")
    rng = rng_for(*key)
    gaps = [0.0] + [rng.expovariate(1.0) for _ in range(count - 1)]
    return list(itertools.accumulate(gaps))


def step_arrivals(load: OpenLoad, seed: int, namespace: str, prompt_id: str) -> list[float]:
    """Every scored request's unit-rate offset within its step, in index order."""
    offsets: list[float] = []
    for step in range(load.steps):
        key = (seed, namespace, prompt_id, "arrivals", step)
        offsets += unit_arrivals(load.arrival, load.requests_per_step, *key)
    return offsets
