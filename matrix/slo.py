"""Service-level objectives: the latency bounds a request must meet to count toward goodput,
and the share of scored requests (attainment) a cell must reach to be *within SLO*.

The bounds are per request, as `vllm bench serve --goodput ttft:… tpot:… e2el:…` defines them,
so goodput is comparable with the peers; attainment turns them into a cell-level verdict (a
p95 SLO is an attainment of 0.95). Declared on the campaign, overridden per cells entry.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from faceoff.artifact import Spec

MS_PER_S = 1000.0


class Slo(Spec):
    ttft_ms: float | None = Field(default=None, gt=0, description="Bound on a request's TTFT.")
    tpot_ms: float | None = Field(default=None, gt=0, description="Bound on a request's TPOT.")
    e2e_ms: float | None = Field(default=None, gt=0, description="Bound on a request's E2E.")
    attainment: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="Share of scored requests that must meet every bound for the cell to be "
        "within SLO (0.95 reads as 'p95 within the bounds').",
    )

    @model_validator(mode="after")
    def _some_bound(self) -> Slo:
        if self.ttft_ms is None and self.tpot_ms is None and self.e2e_ms is None:
            raise ValueError("an slo needs at least one of ttft_ms, tpot_ms, e2e_ms")
        return self


def request_meets(
    slo: Slo, ttft_s: float | None, tpot_s: float | None, e2e_s: float | None
) -> bool:
    """Whether one request met every declared bound; an undefined metric that has a bound
    (no content chunk, one output token for TPOT) does not meet it."""
    checks = ((slo.ttft_ms, ttft_s), (slo.tpot_ms, tpot_s), (slo.e2e_ms, e2e_s))
    return all(
        value is not None and value * MS_PER_S <= bound
        for bound, value in checks
        if bound is not None
    )
