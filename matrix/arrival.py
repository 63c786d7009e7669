"""How a cell offers its load: closed loop, open-loop arrivals at a rate, a ramp, or a sweep.

Closed loop (the default): ``concurrency`` streams send back to back. Open loop
(``arrival = "poisson"``, ``"gamma"`` or ``"constant"``): requests are sent at seeded
arrival times at ``rate`` requests per second whether or not earlier ones have ended,
with at most ``concurrency`` in flight (a request due while the bound is full waits, and
the wait shows as schedule lag). Gamma gaps have shape ``burstiness`` and mean 1 / rate
(``vllm bench serve --burstiness``: 1 is Poisson, below 1 burstier, above 1 steadier). A
ramp (``[cells.ramp]``) moves the rate from ``start`` to ``end`` over the cell, linearly or
in ``stages`` equal steps. A sweep (``[cells.sweep]``) runs ``requests`` open-loop
requests at each rate of a ladder: explicit ``rates``, or a bisection between ``low``
and ``high`` for ``steps`` steps, each step judged against the cell's SLO. A trace cell
(``arrival = "trace"``) sends at the times its trace recorded.
"""

from __future__ import annotations

import itertools
from enum import StrEnum

from pydantic import Field, model_validator

from faceoff.artifact import Spec

MAX_RATE = 1_000_000.0  # requests per second; far beyond any engine, so a typo is an error
MAX_STEPS = 64


class Arrival(StrEnum):
    CLOSED = "closed"  # concurrency streams, each sends when its previous request ends
    POISSON = "poisson"  # exponential gaps with mean 1 / rate
    CONSTANT = "constant"  # gaps of exactly 1 / rate
    GAMMA = "gamma"  # gamma gaps of shape burstiness and mean 1 / rate
    TRACE = "trace"  # the times a trace recorded (a trace cell's only arrival)


SEEDED = frozenset({Arrival.POISSON, Arrival.CONSTANT, Arrival.GAMMA})  # a schedule of offsets
MAX_BURSTINESS = 1000.0  # gamma shape: 1000 is as steady as constant arrivals get


class Ramp(Spec):
    """The rate of an open-loop cell moving from ``start`` to ``end`` over its requests."""

    start: float = Field(gt=0, le=MAX_RATE, description="Requests/s when the cell begins.")
    end: float = Field(gt=0, le=MAX_RATE, description="Requests/s when it ends.")
    stages: int | None = Field(
        default=None,
        ge=2,
        le=MAX_STEPS,
        description="None: the rate moves linearly; k: k stages of equal length, their rates "
        "evenly spaced from start to end.",
    )

    def stage_rates(self) -> list[float]:
        """Each stage's rate (one stage per call of a linear ramp: its two ends' mean)."""
        if self.stages is None:
            return [(self.start + self.end) / 2]
        step = (self.end - self.start) / (self.stages - 1)
        return [self.start + k * step for k in range(self.stages)]

    @property
    def mean_rate(self) -> float:
        """Requests/s over the whole ramp: requests / duration."""
        rates = self.stage_rates()
        return sum(rates) / len(rates)

    def duration_s(self, requests: int) -> float:
        """How long the ramp lasts: the time in which ``requests`` are expected."""
        return requests / self.mean_rate


class Sweep(Spec):
    """A ladder of open-loop rates: explicit, or bisected toward the rate where the SLO breaks."""

    rates: list[float] | None = Field(
        default=None, description="Explicit ladder in requests/s, strictly ascending."
    )
    low: float | None = Field(
        default=None, gt=0, le=MAX_RATE, description="Bisection: first rate tried (req/s)."
    )
    high: float | None = Field(
        default=None, gt=0, le=MAX_RATE, description="Bisection: second rate tried (req/s)."
    )
    steps: int | None = Field(
        default=None, ge=2, le=MAX_STEPS, description="Bisection: rates tried in all (budget)."
    )

    @model_validator(mode="after")
    def _one_ladder(self) -> Sweep:
        bisect = (self.low, self.high, self.steps)
        if self.rates is not None:
            if any(v is not None for v in bisect):
                raise ValueError("a sweep gives either rates = [...] or low, high and steps")
            _check_ladder(self.rates)
            return self
        if any(v is None for v in bisect):
            raise ValueError(
                "a sweep needs rates = [...] (an explicit ladder) or low, high and steps "
                "(a bisection budget)"
            )
        assert self.low is not None and self.high is not None
        if self.low >= self.high:
            raise ValueError(f"sweep low = {self.low} must be below high = {self.high}")
        return self

    @property
    def step_count(self) -> int:
        """Open-loop runs the sweep makes, whatever their results."""
        if self.rates is not None:
            return len(self.rates)
        assert self.steps is not None
        return self.steps


def _check_ladder(rates: list[float]) -> None:
    if len(rates) < 2 or len(rates) > MAX_STEPS:
        raise ValueError(f"sweep rates: give 2 to {MAX_STEPS} rates, got {len(rates)}")
    if any(not 0 < r <= MAX_RATE for r in rates):
        raise ValueError(f"sweep rates: each must be in (0, {MAX_RATE:g}] requests/s")
    if any(b <= a for a, b in itertools.pairwise(rates)):
        raise ValueError(f"sweep rates {rates} must be strictly ascending")
