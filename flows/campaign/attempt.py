"""One attempt of one cell on one arm: plan, collectors, client process, drain, record.

The attempt gets its ledger row (committed) and its folder
``cells/<cell>/<arm>/attempt-<n>/`` before anything runs, so a kill at any
point leaves an attempt that the next run marks interrupted, never a hole. The
flow writes ``cell.json`` (``faceoff.formats.attempt.cell_record.CellRecord``); the guard judges the
folder; the verdict goes into ``verdict.json`` and the ledger. A cell whose lane
never became usable still gets an attempt, judged blocked from its record.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from collectors.cadence import journal_window
from collectors.cell_samplers import CellCollectors
from collectors.gpu.virtual import nvml_for_arm
from collectors.host import MemoryTarget as CollectorTarget
from collectors.settings import CollectorSettings
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord, IdentityRef, LaneAtEnd
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.verdict import Verdict
from flows.campaign import spans
from flows.campaign.arm import ArmRun, lane_death
from flows.campaign.client import ClientExit, run_client
from flows.campaign.context import CampaignContext
from flows.campaign.journal_index import index_journal
from flows.campaign.planning import plan_cell
from ledger.campaigns import require_campaign
from ledger.cells import begin_attempt, finish_attempt, next_attempt
from ledger.db import session_scope
from ledger.tables import CellRunRow
from matrix.cell import Cell
from workload.journal import read_journal


@dataclass(frozen=True)
class Attempt:
    """The attempt being run: its row id, number and folder."""

    row_id: int
    cell: Cell
    arm: str
    number: int
    folder: Path


@dataclass
class Observed:
    """What the orchestrator saw while the attempt ran, for ``cell.json``."""

    started_at: datetime
    telemetry_error: str | None = None
    setup_error: str | None = None
    client: ClientExit | None = None


def begin(context: CampaignContext, cell: Cell, arm: str) -> Attempt:
    """The next attempt number, its folder and its pending ledger row."""
    with session_scope(context.engine) as session:
        campaign = require_campaign(session, context.name)
        # Folders count too: a ledger that lost a row must not reuse a folder.
        on_disk = [*context.attempt_numbers(cell.id, arm), 0][0]
        number = max(next_attempt(session, campaign, cell.id, arm), on_disk + 1)
        folder = context.attempt_dir(cell.id, arm, number)
        folder.mkdir(parents=True, exist_ok=False)
        row = begin_attempt(
            session,
            campaign,
            cell_id=cell.id,
            arm=arm,
            attempt=number,
            artifacts_dir=context.relative(folder),
            now=context.tools.now,
        )
        assert row.id is not None
        return Attempt(row.id, cell, arm, number, folder)


def run_attempt(
    context: CampaignContext, run: ArmRun, attempt: Attempt, reference: RequestPlan | None
) -> CellRecord:
    """Run the attempt if its lane is usable, and write ``cell.json`` either way."""
    seen = Observed(started_at=context.now())
    span = functools.partial(context.spans.span, cell=attempt.cell.id, arm=attempt.arm)
    window = None
    if run.usable:
        with span(spans.PLAN):
            plan = _plan(context, run, attempt.cell, reference)
            plan.write(attempt.folder / PLAN_NAME)
        window = _measure(context, run, attempt, seen)
    with span(spans.RECORD):
        record = cell_record(context, run, attempt, seen, window)
        record.write(attempt.folder / CELL_FILE)
    return record


def _plan(
    context: CampaignContext, run: ArmRun, cell: Cell, reference: RequestPlan | None
) -> RequestPlan:
    matrix = context.frozen.matrix
    target = run.plan_target(matrix.campaign)
    return plan_cell(cell, target, reference=reference, slo=matrix.slo_of(cell))


def _measure(
    context: CampaignContext, run: ArmRun, attempt: Attempt, seen: Observed
) -> CellWindow | None:
    """Collectors around the client process; the drain sample is taken at stop.

    The client process starts first and loads while the collectors start (a Python
    start each: the pair costs the longer of the two, not the sum); it sends nothing
    before the collectors have their baseline."""
    span = functools.partial(context.spans.span, cell=attempt.cell.id, arm=attempt.arm)
    collectors = _collectors(context, run, attempt.folder)
    try:
        with span(spans.COLLECTORS_START):
            collectors.start()
    except FaceoffError as exc:
        seen.telemetry_error = exc.message
        return None
    try:
        with span(spans.CLIENT):
            seen.client = run_client(
                attempt.folder,
                base_url=run.base_url,
                deadline_s=attempt.cell.deadline_s,
                arm=attempt.arm,
                attempt=attempt.number,
                python=context.tools.python,
                receive=context.frozen.matrix.campaign.client_receive,
            )
    finally:
        with span(spans.COLLECTORS_STOP):
            collectors.stop()
    with span(spans.TELEMETRY):
        window = journal_window(read_journal(attempt.folder / JOURNAL_NAME).outcomes)
        if window is not None:
            collectors.summarize(window)
    return window


def _collectors(context: CampaignContext, run: ArmRun, folder: Path) -> CellCollectors:
    assert run.lane is not None
    target = run.lane.target()
    arm = run.arm
    return CellCollectors(
        metrics_url=f"{run.base_url}/metrics",
        target=CollectorTarget(container_id=target.container_id, pid=target.pid),
        gpu_ids=arm.gpu_ids,
        folder=folder,
        settings=collector_settings(context),
        nvml=nvml_for_arm(
            simulator=arm.simulator is not None,
            base_url=run.base_url,
            gpu_ids=arm.gpu_ids,
            lane_pid=target.pid,
        ),
        docker=None if context.docker is None else context.docker.api,
    )


def collector_settings(context: CampaignContext) -> CollectorSettings:
    return CollectorSettings.from_thresholds(context.frozen.matrix.thresholds)


def cell_record(
    context: CampaignContext,
    run: ArmRun,
    attempt: Attempt,
    seen: Observed,
    window: CellWindow | None,
) -> CellRecord:
    client = seen.client
    return CellRecord(
        campaign=context.name,
        matrix_id=context.frozen.matrix_id,
        cell_id=attempt.cell.id,
        arm=attempt.arm,
        attempt=attempt.number,
        lane_run=context.relative(run.run_dir),
        lane_ready=run.ready,
        lane_ready_reason=None if run.ready else run.reason,
        identity=_identity_ref(context, run),
        telemetry_error=seen.telemetry_error,
        setup_error=seen.setup_error,
        window=window,
        started_at=seen.started_at,
        ended_at=context.now(),
        deadline_s=attempt.cell.deadline_s,
        deadline_hit=client is not None and client.deadline_hit,
        client_exit_code=None if client is None else client.returncode,
        lane_end=_lane_end(context, run),
        collector_settings=collector_settings(context),
    )


def _identity_ref(context: CampaignContext, run: ArmRun) -> IdentityRef | None:
    path = run.identity_path
    if not path.is_file():
        return None
    return IdentityRef(
        path=context.relative(path),
        sha256=file_sha256(path),
        ok=run.identity_ok,
        reason=None if run.identity_ok else run.reason,
    )


def _lane_end(context: CampaignContext, run: ArmRun) -> LaneAtEnd | None:
    """The lane after the drain: running and answering /health, or how it died."""
    if run.lane is None:
        return None
    ended = lane_death(run, context.tools) if run.usable else run.lane.exit_status()
    if ended is None:
        return LaneAtEnd(running=True, exit_code=None, oom_killed=None)
    return LaneAtEnd(
        running=False,
        exit_code=ended.exit_code,
        oom_killed=ended.oom_killed,
        signal=ended.signal,
        detail=ended.detail,
    )


def finish(context: CampaignContext, attempt: Attempt, verdict: Verdict) -> CellRunRow:
    """``verdict.json`` is written by the caller; here the ledger row and the request index."""
    with session_scope(context.engine) as session:
        row = session.get(CellRunRow, attempt.row_id)
        assert row is not None
        index_journal(session, row, attempt.folder / JOURNAL_NAME)
        return finish_attempt(
            session,
            row,
            disposition=verdict.disposition.value,
            reason_code=verdict.reason.value,
            reason=verdict.sentence,
            verdict_sha256=verdict.sha256(),
            now=context.tools.now,
        )
