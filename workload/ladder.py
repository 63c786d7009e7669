"""A sweep's ladder: which rate each step runs, and the highest rate within SLO. Pure.

A step is *within SLO* when the share of its planned scored requests that ended ``ok``
and met every bound of the SLO reaches the SLO's attainment. The highest rate within
SLO is the highest passing rate below the lowest failing one (so a noisy pass above a
break does not count), and the break lies between it and that failing rate.

An explicit ladder runs its rates in order. A bisection runs ``low``, then ``high``
while ``low`` passed (doubling past ``high`` while every step passes), then the
midpoint of the highest passing rate (0 when none passed) and the lowest failing one.
Every step of the budget runs, whatever the results, so every planned request runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from faceoff.formats.attempt.journal import RequestOutcome, Status
from faceoff.formats.attempt.request_plan import OpenLoad
from matrix.arrival import Sweep
from matrix.slo import Slo, request_meets
from workload.metrics import e2e, tpot, ttft


@dataclass(frozen=True)
class StepResult:
    rate: float
    within_slo: bool


@dataclass(frozen=True)
class Bracket:
    """The highest rate within SLO (None: none passed) and the lowest failing (None: none)."""

    within: float | None
    breaks: float | None


def meets(slo: Slo, outcome: RequestOutcome) -> bool:
    """An ``ok`` request that met every declared bound."""
    if outcome.status is not Status.OK:
        return False
    return request_meets(slo, ttft(outcome).value, tpot(outcome).value, e2e(outcome).value)


def attainment(slo: Slo, outcomes: Sequence[RequestOutcome], planned: int) -> float:
    """Share of the ``planned`` scored requests that met the SLO (an unjournaled one did not)."""
    return sum(1 for o in outcomes if meets(slo, o)) / planned


def within_slo(load: OpenLoad, outcomes: Sequence[RequestOutcome], planned: int) -> bool:
    """Whether a step's requests reached the SLO's attainment (no SLO: nothing to break)."""
    return load.slo is None or attainment(load.slo, outcomes, planned) >= load.slo.attainment


def bracket(results: Sequence[StepResult]) -> Bracket:
    failing = [r.rate for r in results if not r.within_slo]
    breaks = min(failing) if failing else None
    passing = [r.rate for r in results if r.within_slo and (breaks is None or r.rate < breaks)]
    return Bracket(max(passing) if passing else None, breaks)


def next_rate(sweep: Sweep, done: Sequence[StepResult]) -> float:
    """The rate of step ``len(done)``."""
    if sweep.rates is not None:
        return sweep.rates[len(done)]
    assert sweep.low is not None and sweep.high is not None
    if not done:
        return sweep.low
    found = bracket(done)
    if found.breaks is None:
        assert found.within is not None  # every step so far passed
        return sweep.high if found.within < sweep.high else 2 * found.within
    return ((found.within or 0.0) + found.breaks) / 2
