"""The open-loop part of a cell attempt's summary: schedule lag, and each step against the SLO.

Pure functions of the journal lines and the plan's ``load``. Schedule lag (send − due,
ARCHITECTURE §3 "client schedule delay") is ``workload.lag``'s p50/p99/max. A step is
described by the rate on its journal lines, its visible-TTFT p50/p95 over its ``ok``
requests, its SLO attainment and whether it was within SLO; a sweep's highest rate
within SLO and the lowest failing rate bracket where the SLO breaks
(``workload.ladder``). ``ladder_followed`` replays the ladder over the step results:
false when a step ran another rate than the sweep's rule gives.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.stats.bootstrap import quantile
from faceoff.formats.attempt.journal import RequestOutcome, Status
from faceoff.formats.attempt.request_plan import OpenLoad, RequestPlan
from faceoff.formats.attempt.summary import LoadSummary, StepSummary, SweepResult
from workload.ladder import StepResult, attainment, bracket, next_rate, within_slo
from workload.lag import lag_of
from workload.metrics import ttft


def load_summary(plan: RequestPlan, scored: Sequence[RequestOutcome]) -> LoadSummary | None:
    """The open-loop summary of an attempt's scored lines (None for a closed-loop plan)."""
    load = plan.load
    if load is None:
        return None
    steps = [_step(load, step, scored) for step in range(load.steps)]
    return LoadSummary(
        arrival=load.arrival,
        max_in_flight=load.max_in_flight,
        schedule_lag=lag_of(scored),
        steps=steps,
        sweep=_sweep(load, steps),
    )


def _step(load: OpenLoad, step: int, scored: Sequence[RequestOutcome]) -> StepSummary:
    lines = [o for o in scored if o.step == step]
    rates = sorted({o.rate_rps for o in lines if o.rate_rps is not None})
    ttfts = sorted(v for o in lines if o.status is Status.OK if (v := ttft(o).value) is not None)
    planned = load.requests_per_step
    return StepSummary(
        step=step,
        rate_rps=rates[0] if len(rates) == 1 else None,
        planned=planned,
        ok=sum(1 for o in lines if o.status is Status.OK),
        ttft_p50_s=quantile(ttfts, 0.5) if ttfts else None,
        ttft_p95_s=quantile(ttfts, 0.95) if ttfts else None,
        attainment=None if load.slo is None else attainment(load.slo, lines, planned),
        within_slo=None if load.slo is None else within_slo(load, lines, planned),
    )


def _sweep(load: OpenLoad, steps: Sequence[StepSummary]) -> SweepResult | None:
    if load.sweep is None:
        return None
    results = [StepResult(s.rate_rps or 0.0, bool(s.within_slo)) for s in steps]
    followed = all(s.rate_rps == next_rate(load.sweep, results[: s.step]) for s in steps)
    found = bracket([r for r, s in zip(results, steps, strict=True) if s.rate_rps is not None])
    return SweepResult(
        max_rate_within_slo=found.within, breaks_at_rate=found.breaks, ladder_followed=followed
    )
