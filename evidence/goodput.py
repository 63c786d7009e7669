"""Goodput: the traffic a cell carried within its SLO. Pure.

A scored request is *good* when it succeeded and met every bound of the cell's SLO
(``matrix.slo.request_meets``, the per-request bounds of ``vllm bench serve
--goodput``). Goodput is the good requests, and their completion tokens, per second
of the cell window (first scored send to last scored end, the window of the
aggregate output throughput); attainment is the share of scored requests that were
good, and the cell is *within SLO* when attainment reaches the SLO's target. A
request that errored, or whose bounded metric is undefined, is not good.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from faceoff.artifact import Spec
from matrix.slo import Slo, request_meets
from workload.metrics import NS_PER_S, cell_window, e2e, tpot, ttft
from workload.outcome import Phase, RequestOutcome, Status

METHOD = (
    "goodput = scored requests that succeeded and met every SLO bound (TTFT, TPOT, E2E per "
    "request), and their completion tokens, per second of the cell window (first scored send "
    "to last scored end); attainment = those requests / scored requests; within SLO when "
    "attainment ≥ the SLO's attainment target"
)


class Goodput(Spec):
    slo: Slo = Field(description="The SLO the cell was judged against.")
    scored: int = Field(description="Scored requests judged (every terminal status).")
    good: int = Field(description="Of those, succeeded and met every bound.")
    attainment: float | None = Field(description="good / scored; None with no scored request.")
    within_slo: bool | None = Field(
        description="attainment ≥ slo.attainment; None with no scored request."
    )
    requests_per_s: float | None = Field(description="Good requests per second of the window.")
    output_tps: float | None = Field(
        description="Completion tokens of good requests per second of the window."
    )
    window_s: float | None = Field(description="First scored send to last scored end.")


def is_good(outcome: RequestOutcome, slo: Slo) -> bool:
    """The request succeeded and met every bound the SLO declares."""
    return outcome.status is Status.OK and request_meets(
        slo, ttft(outcome).value, tpot(outcome).value, e2e(outcome).value
    )


def goodput(outcomes: Sequence[RequestOutcome], slo: Slo) -> Goodput:
    """The cell's goodput over its scored requests (warmups and diagnostics never count)."""
    scored = [o for o in outcomes if o.phase is Phase.SCORED]
    good = [o for o in scored if is_good(o, slo)]
    window = cell_window(scored)
    window_s = (window[1] - window[0]) / NS_PER_S if window else None
    tokens = sum(o.usage.completion_tokens for o in good if o.usage is not None)
    attainment = len(good) / len(scored) if scored else None
    return Goodput(
        slo=slo,
        scored=len(scored),
        good=len(good),
        attainment=attainment,
        within_slo=None if attainment is None else attainment >= slo.attainment,
        requests_per_s=len(good) / window_s if window_s else None,  # a zero window has no rate
        output_tps=tokens / window_s if window_s else None,
        window_s=window_s,
    )
