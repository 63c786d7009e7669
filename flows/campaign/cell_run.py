"""A cell run as the campaign walks it: stop policy, attempt, guard, ledger.

The guard decides every disposition (``guards.judge``); this module only puts
its inputs in place and files its verdict. An attempt that an interruption
(SIGTERM, cancellation, a task timeout) cuts short is marked interrupted at once,
with its journal indexed, and the interruption goes on; a resume re-attempts it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import CELL_FILE
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.verdict import VERDICT_FILE, Verdict
from faceoff.formats.reasons import Disposition
from flows.campaign import spans
from flows.campaign.arm import ArmRun
from flows.campaign.attempt import Attempt, Observed, begin, cell_record, finish, run_attempt
from flows.campaign.context import CampaignContext
from flows.campaign.journal_index import index_journal
from flows.campaign.planning import reference_plan
from guards.dispositions import Disposed, Ran, stop_policy_block
from guards.judge import judge_cell, not_run
from ledger.campaigns import require_campaign
from ledger.cells import TERMINAL, interrupt_attempt, latest_attempts, rerun_requested
from ledger.db import session_scope
from ledger.tables import CellRunRow
from matrix.campaign_plan import CellRunKey
from matrix.cell import Cell


@dataclass(frozen=True)
class CellResult:
    cell_id: str
    arm: str
    attempt: int
    disposition: str
    reason_code: str
    sentence: str
    setup_error: str | None = None  # why the attempt could not be set up, when it could not


def run_cell(context: CampaignContext, run: ArmRun, cell: Cell) -> CellResult:
    """One attempt on the arm's lane; the guard judges it and the verdict is filed."""
    span = functools.partial(context.spans.span, cell=cell.id, arm=run.arm.name)
    with span(spans.RUN_CELL):
        with span(spans.BEGIN):
            attempt = begin(context, cell, run.arm.name)
        setup_error = None
        try:
            run_attempt(context, run, attempt, reference_for(context, cell, run.arm.name))
        except FaceoffError as exc:  # e.g. the plan could not be built; the record says what ran
            setup_error = exc.message
            _record_without_run(context, run, attempt, setup_error)
        except BaseException:
            interrupt(context, attempt)
            raise
        with span(spans.GUARD):
            verdict = judge_cell(attempt.folder, context.frozen)
        with span(spans.FILE):
            result = _file(context, attempt, verdict)
        return replace(result, setup_error=setup_error)


def block_cell(context: CampaignContext, cell: Cell, arm: str, decision: Disposed) -> CellResult:
    """An attempt that is never run (the stop policy blocks it): only its verdict is filed."""
    attempt = begin(context, cell, arm)
    return _file(context, attempt, not_run(context.frozen, cell.id, arm, attempt.number, decision))


def policy_block(context: CampaignContext, cell: Cell, arm: str) -> Disposed | None:
    """The stop policy's decision over every cell run decided so far (any earlier run too)."""
    matrix = context.frozen.matrix
    kinds = {c.id: c.kind for c in matrix.cells}
    with session_scope(context.engine) as session:
        campaign = require_campaign(session, context.name)
        latest = latest_attempts(session, campaign)
        # A run about to be rerun (this one, or one a review named) no longer stands.
        superseded = rerun_requested(session, campaign) | {(cell.id, arm)}
    earlier = [
        Ran(CellRunKey(cell_id, arm_name), kinds[cell_id], Disposition(row.disposition))
        for (cell_id, arm_name), row in latest.items()
        if row.disposition in TERMINAL and (cell_id, arm_name) not in superseded
    ]
    return stop_policy_block(
        matrix.campaign.stop_policy, earlier, CellRunKey(cell.id, arm), cell.kind
    )


def reference_for(context: CampaignContext, cell: Cell, arm: str) -> RequestPlan | None:
    """The plan of the same cell on the other arms that ran it (incumbent first), newest
    first: in an even pass the candidate runs first (``passes.arm_order``), and the incumbent
    then retokenizes its texts."""
    paths: list[Path] = []
    for other in (a.name for a in context.frozen.matrix.arm_order() if a.name != arm):
        paths += [a / PLAN_NAME for a in context.attempt_dirs(cell.id, other)]
    return reference_plan(paths)


def interrupt(context: CampaignContext, attempt: Attempt) -> None:
    """The attempt will never get a verdict in this run: say so, keep what it journaled."""
    with session_scope(context.engine) as session:
        row = session.get(CellRunRow, attempt.row_id)
        assert row is not None
        index_journal(session, row, attempt.folder / JOURNAL_NAME)
        reason = "the run was interrupted during this attempt"
        interrupt_attempt(session, row, reason=reason, now=context.tools.now)


def _record_without_run(
    context: CampaignContext, run: ArmRun, attempt: Attempt, setup_error: str
) -> None:
    if not (attempt.folder / CELL_FILE).exists():
        seen = Observed(started_at=context.now(), setup_error=setup_error)
        cell_record(context, run, attempt, seen, None).write(attempt.folder / CELL_FILE)


def _file(context: CampaignContext, attempt: Attempt, verdict: Verdict) -> CellResult:
    verdict.write(attempt.folder / VERDICT_FILE)
    finish(context, attempt, verdict)
    return CellResult(
        cell_id=attempt.cell.id,
        arm=attempt.arm,
        attempt=attempt.number,
        disposition=verdict.disposition.value,
        reason_code=verdict.reason.value,
        sentence=verdict.sentence,
    )
