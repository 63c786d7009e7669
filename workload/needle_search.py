"""Needle search: the longest input at which a lane still recalls a planted marker.
The same concept at another layer: ``evidence.attempt.needle_search``.

A needle cell answers at one length; the field report's "verified needle 98K against
200K" is the longest length at which the marker came back verbatim. A needle_search
cell (``matrix.search``) bisects the input length between ``low`` and ``high`` within
a budget of probes. Its plan holds no request: the client process runs the search
(``SearchRunner``, chosen by ``workload.cell_client`` for the kind), because each length
depends on the answer before it. Each probe is a one-request needle plan built on the
lane's own tokenizer (a namespace of its own, so no probe warms another's prefix),
sent by the cell runner and journaled in the attempt's journal in phase ``probe``,
bound to the attempt's plan like any line. A recalled marker raises the verified
length; a garbled answer or a refusal (HTTP error: the length is beyond the lane)
lowers the failed one; a probe that ended otherwise (timeout, broken stream,
cancelled) is no evidence either way. Lengths are the prompt tokens the lane counted,
so the answer is in the lane's own tokens, within one ``step`` when the budget allows.
The bisection itself is pure (``workload.needle_bounds``), shared with the summary.
"""

from __future__ import annotations

import asyncio

import aiohttp

from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import PlanOptions, RequestPlan
from matrix.cell import Cell, WorkloadKind
from workload.client import Clock, RunContext, outcome_of
from workload.journal import JournalWriter
from workload.needle_bounds import Probe, next_target
from workload.plan import build_plan
from workload.runner import CellRunner, RunReport, Stop
from workload.tokenizer import LaneTokenizer

TOKENIZE_TIMEOUT_S = 300.0  # a probe near a long context sends megabytes to /tokenize


class SearchRunner:
    """Runs a needle_search plan: probe after probe, each planned from the answers before."""

    def __init__(self, plan: RequestPlan, base_url: str, context: RunContext, clock: Clock) -> None:
        if plan.cell.search is None:
            raise ValueError(f"cell {plan.cell.id} is not a needle search")
        self.plan, self.search, self.context, self.clock = plan, plan.cell.search, context, clock
        self.base_url = base_url.rstrip("/")
        self.report = RunReport()
        self.stop = Stop()
        self.probes: list[Probe] = []

    async def run(self, journal: JournalWriter, cell_deadline_s: float) -> RunReport:
        """Probe until the search is done, its budget spent or the run stopped."""
        self.stop.task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + cell_deadline_s
        timer = loop.call_later(
            cell_deadline_s, self.stop.stop, f"cell deadline of {cell_deadline_s} s reached"
        )
        try:
            while self.stop.reason is None:
                target = next_target(self.probes, self.search)
                if target is None:
                    break
                probe = await self._probe_plan(len(self.probes), target)
                await self._send(probe, journal, deadline - loop.time())
        except asyncio.CancelledError:
            if self.stop.reason is None:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        finally:
            timer.cancel()
        self.report.stopped_by = self.stop.reason
        return self.report

    async def _probe_plan(self, index: int, target: int) -> RequestPlan:
        """One needle request of ``target`` tokens on this lane, as probe ``index``."""
        timeout = aiohttp.ClientTimeout(total=TOKENIZE_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            plan = await build_plan(
                probe_cell(self.plan.cell, target),
                seed=self.plan.seed,
                namespace=f"{self.plan.namespace}:probe-{index}",
                model=self.plan.model,
                tokenizer=LaneTokenizer(session, self.base_url, self.plan.model),
                options=PlanOptions(scored_phase=Phase.PROBE),
            )
        request = plan.requests[0].model_copy(update={"index": index})
        return plan.model_copy(update={"requests": [request]})

    async def _send(self, probe: RequestPlan, journal: JournalWriter, left_s: float) -> None:
        runner = CellRunner(probe, self.base_url, self.context, self.clock)
        runner.stop = self.stop  # one stop for the whole search: deadline or signal
        report = await runner.run(journal, max(left_s, 0.0))
        self.report.statuses.update(report.statuses)
        self.report.prewarm_error = self.report.prewarm_error or report.prewarm_error
        if runner.last is not None:
            self.probes.append(Probe.of(outcome_of(self.context, runner.last)))


def probe_cell(cell: Cell, target: int) -> Cell:
    """``cell`` as one needle request of ``target`` input tokens, validated."""
    fields = cell.model_dump() | {
        "kind": WorkloadKind.NEEDLE, "input_tokens": target, "requests": 1, "warmups": 0,
        "concurrency": 1, "arms": None, "search": None,
    }  # fmt: skip
    return Cell.model_validate(fields)
