"""Needle search: the longest input at which a lane still recalls a planted marker.

A needle cell answers at one length; the field report's "verified needle 98K against
200K" is the longest length at which the marker came back verbatim. The search bisects
the input length between ``low`` and ``high`` within a budget of probes: each probe is
a one-request needle plan built on the lane's own tokenizer (a namespace of its own, so
no probe warms another's prefix), run by the cell client's runner and journaled in its
own folder; a recalled marker raises the verified length, a miss or an error (a refusal
above the context) lowers the failed one. Lengths are the prompt tokens the lane
counted, so the answer is in the lane's own tokens, within one ``step`` when the
budget allows. ``next_length`` is the pure part.

Not a campaign cell kind yet: the flow's client runs fixed plans, and a search decides
each length from the answer before it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from matrix.model import Cell, WorkloadKind
from workload.client import RunContext
from workload.journal import JournalWriter, read_journal
from workload.outcome import RequestOutcome, Status
from workload.plan import RequestPlan, build_plan
from workload.records import JOURNAL_NAME, PLAN_NAME
from workload.runner import CellRunner
from workload.tokenizer import LaneTokenizer


@dataclass(frozen=True)
class Probe:
    target_tokens: int
    input_tokens: int  # the prompt tokens the lane counted
    recalled: bool
    status: Status


@dataclass(frozen=True)
class SearchResult:
    verified: int | None  # longest input (lane tokens) whose marker came back; None: none did
    failed: int | None  # shortest input that missed; None: every probe recalled
    probes: tuple[Probe, ...]

    @property
    def resolution(self) -> int | None:
        """How far apart the two bounds ended (the search's precision)."""
        if self.verified is None or self.failed is None:
            return None
        return self.failed - self.verified


@dataclass(frozen=True)
class Lane:
    base_url: str
    model: str
    seed: int
    namespace: str


def next_length(
    verified: int | None, failed: int | None, low: int, high: int, step: int
) -> int | None:
    """The next input target: ``low`` first, then ``high``, then the midpoint of the
    bounds; None once they are within ``step`` (or the low end already fails, or the
    high end already recalls)."""
    if verified is None:
        return low if failed is None else None
    if failed is None:
        return high if verified < high else None
    if failed - verified <= step:
        return None
    return (verified + failed) // 2


async def needle_search(
    cell: Cell, lane: Lane, folder: Path, *, low: int, budget: int, step: int
) -> SearchResult:
    """Bisect ``cell``'s input length (its ``input_tokens`` is the upper end) on the lane."""
    verified: int | None = None
    failed: int | None = None
    probes: list[Probe] = []
    while len(probes) < budget:
        target = next_length(verified, failed, low, cell.input_tokens, step)
        if target is None:
            break
        probe = await _probe(cell, lane, folder / f"probe-{len(probes) + 1:03d}", target)
        probes.append(probe)
        if probe.recalled:
            verified = max(verified or 0, probe.input_tokens)
        else:
            failed = probe.input_tokens if failed is None else min(failed, probe.input_tokens)
    return SearchResult(verified, failed, tuple(probes))


async def _probe(cell: Cell, lane: Lane, folder: Path, target: int) -> Probe:
    shaped = Cell.model_validate(
        cell.model_dump()
        | {"kind": WorkloadKind.NEEDLE, "input_tokens": target, "requests": 1, "warmups": 0,
           "concurrency": 1, "arms": None}
    )  # fmt: skip
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, lane.base_url, lane.model)
        plan = await build_plan(
            shaped,
            seed=lane.seed,
            namespace=f"{lane.namespace}:needle-search:{folder.name}",
            model=lane.model,
            tokenizer=tokenizer,
        )
    _write_plan(plan, folder)
    outcome = await _run(plan, lane, folder)
    return Probe(
        target_tokens=target,
        input_tokens=plan.requests[0].input_tokens,
        recalled=outcome.status is Status.OK and bool(outcome.marker_found),
        status=outcome.status,
    )


def _write_plan(plan: RequestPlan, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=False)
    plan.write(folder / PLAN_NAME)


async def _run(plan: RequestPlan, lane: Lane, folder: Path) -> RequestOutcome:
    context = RunContext(
        cell_id=plan.cell.id,
        arm=lane.model,
        attempt=1,
        plan_sha256=plan.sha256(),
        client_run=secrets.token_hex(6),
        wall_anchor_utc=datetime.now(UTC),
        mono_anchor_ns=time.perf_counter_ns(),
    )
    runner = CellRunner(plan, lane.base_url, context, time.perf_counter_ns)
    with JournalWriter(folder / JOURNAL_NAME) as journal:
        await runner.run(journal, plan.cell.deadline_s)
    return read_journal(folder / JOURNAL_NAME).outcomes[0]
