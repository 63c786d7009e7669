"""Goodput: the traffic a cell carried within its SLO. Pure.

A scored request is *good* when it succeeded and met every bound of the cell's SLO
(``workload.ladder.meets``, the per-request bounds of ``vllm bench serve
--goodput``). Goodput is the good requests, and their completion tokens, per second
of the cell window (first scored send to last scored end, the window of the
aggregate output throughput); attainment is the share of scored requests that were
good, and the cell is *within SLO* when attainment reaches the SLO's target. A
request that errored, or whose bounded metric is undefined, is not good.
"""

from __future__ import annotations

from collections.abc import Sequence

from faceoff.formats.attempt.journal import Phase, RequestOutcome
from faceoff.formats.attempt.summary import Goodput
from matrix.slo import Slo
from workload.ladder import meets
from workload.metrics import NS_PER_S, cell_window

METHOD = (
    "goodput = scored requests that succeeded and met every SLO bound (TTFT, TPOT, E2E per "
    "request), and their completion tokens, per second of the cell window (first scored send "
    "to last scored end); attainment = those requests / scored requests; within SLO when "
    "attainment ≥ the SLO's attainment target"
)


def goodput(outcomes: Sequence[RequestOutcome], slo: Slo) -> Goodput:
    """The cell's goodput over its scored requests (warmups and diagnostics never count)."""
    count = GoodputCount(slo)
    for outcome in outcomes:
        count.add(outcome)
    return count.result(cell_window([o for o in outcomes if o.phase is Phase.SCORED]))


class GoodputCount:
    """Goodput counted line by line, so a streamed journal needs no second pass."""

    def __init__(self, slo: Slo) -> None:
        self.slo = slo
        self.scored = self.good = self.tokens = 0

    def add(self, outcome: RequestOutcome) -> None:
        if outcome.phase is not Phase.SCORED:
            return
        self.scored += 1
        if meets(self.slo, outcome):
            self.good += 1
            self.tokens += outcome.usage.completion_tokens if outcome.usage is not None else 0

    def result(self, window: tuple[int, int] | None) -> Goodput:
        """``window``: the cell window (first scored send, last scored end), in ns."""
        window_s = (window[1] - window[0]) / NS_PER_S if window else None
        attainment = self.good / self.scored if self.scored else None
        return Goodput(
            slo=self.slo,
            scored=self.scored,
            good=self.good,
            attainment=attainment,
            within_slo=None if attainment is None else attainment >= self.slo.attainment,
            requests_per_s=self.good / window_s if window_s else None,  # zero window: no rate
            output_tps=self.tokens / window_s if window_s else None,
            window_s=window_s,
        )
