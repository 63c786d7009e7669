"""The campaign flow: ARCHITECTURE §1's walk, as a Prefect 3 flow over plain functions.

Freeze, open or resume, take over, walk each arm (incumbent first) cell by cell, restore
the incumbent in ``finally``, close. A run that has nothing left to do touches no lane and
only rewrites the bundle. The final state says how it ended: ``Completed``, ``Failed``
named ``Partial`` (closed partial: not green in the UI), or ``Failed`` when the run's last
restoration failed; its data is the ``CampaignResult`` either way
(``flows.prefect.flow_runner.result_of``). The walk in full: docs/flows.md, "The walk".
"""

from __future__ import annotations

import functools
import os
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State
from prefect.runtime import deployment, flow_run
from prefect.states import Completed, Failed

from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.pilot import PilotMode
from faceoff.formats.preflight import PreflightReport, Waiver, write_report
from flows.campaign import spans
from flows.campaign.arm import ArmRun, judged_warmups, lane_death
from flows.campaign.cell_run import CellResult, policy_block
from flows.campaign.closing import CampaignResult
from flows.campaign.context import CampaignContext
from flows.campaign.fidelity_run import fidelity_pending
from flows.campaign.lock import CampaignLock
from flows.campaign.opening import (
    OPEN,
    Opened,
    campaign_dir_of,
    frozen_of,
    remaining_work,
    set_status,
)
from flows.campaign.passes import campaign_passes, uses_passes, walk_order
from flows.campaign.pilot import mode_of
from flows.campaign.restore import RestoreOutcome, restore_tools
from flows.campaign.takeover import check_incumbent_port, check_startable_arms
from flows.prefect.before_night import pilot_step, preflight_task
from flows.prefect.nightly import deployment_timezone, night_of, refuse_closed
from flows.prefect.tasks import (
    block_task,
    cell_run,
    close_task,
    fidelity_task,
    handoff_task,
    open_task,
    publish_task,
    require_task,
    restore_task,
    started,
    stop_task,
    warmed,
)
from matrix.arm import Arm
from matrix.cell import Cell
from matrix.night_window import budget_end

FLOW_NAME = "faceoff-campaign"
PARTIAL = "Partial"  # the name of the Failed state of a campaign that closed partial


@flow(name=FLOW_NAME, persist_result=False, log_prints=False)
def campaign(  # noqa: PLR0917  (the deployment's parameters)
    matrix: str | FrozenMatrix,
    workdir: str = "runs",
    dated: bool = False,
    aa: bool = False,
    pilot: bool = False,
    waivers: list[Waiver] | None = None,
    checked: PreflightReport | None = None,
    locked: bool = False,
) -> State[CampaignResult]:
    """Run, or resume, a campaign: of a matrix TOML file (a deployment's parameter), or of the
    frozen matrix ``faceoff run`` has read and frozen already, run as it is.

    ``dated``: name the campaign ``<name>-YYYYMMDD`` after the run's scheduled start, dated
    in the timezone of the deployment's schedule, so that a nightly deployment opens one
    campaign per night; a closed one is never reopened (``flows.prefect.nightly``). The ledger is
    ``FACEOFF_DB_URL``'s, else ``<workdir>/faceoff.db``: never a parameter, which Prefect
    stores in its database (a PostgreSQL URL carries a password). ``aa``: run the matrix's
    A/A twin, the incumbent's recipe on every arm, as campaign ``<name>-aa`` (``matrix.aa``).
    ``pilot``: pilot the cells before the scored hours unless the matrix says otherwise
    (``[campaign] pilot``). ``waivers``: preflight checks whose FAILs the run goes on
    despite; ``checked``: the preflight ``faceoff run`` ran already (docs/flows.md, "Before
    the night"). ``locked``: ``faceoff run`` holds the campaign's run lock already, taken
    before its Prefect server started, so that a refused second run starts nothing.
    """
    frozen = _frozen(matrix, dated, aa)
    if dated:
        refuse_closed(Path(workdir), frozen.matrix.campaign.name)
    mode = mode_of(frozen.matrix.campaign.pilot, pilot)
    report = checked or preflight_task(
        frozen, Path(workdir), waivers or [], deployment.id, pilot=mode is not None
    )
    tools = restore_tools(os.environ)
    with nullcontext() if locked else CampaignLock(campaign_dir_of(Path(workdir), frozen)):
        opened = open_task(frozen, workdir=Path(workdir), tools=tools)
        _log_opening(opened)
        try:
            restoration = run_arms(opened.context, mode, report)
        except BaseException:
            set_status(opened.context, OPEN)
            raise
        done = [r for r in (opened.restored_first, restoration) if r is not None]
        result = close_task(opened.context, done)
        get_run_logger().info(
            "%s: %s; bundle %s", result.campaign, result.closure.sentence, result.bundle
        )
        publish_task(opened.context, result)
        return final_state(result)


def _frozen(matrix: str | FrozenMatrix, dated: bool, aa: bool) -> FrozenMatrix:
    if isinstance(matrix, FrozenMatrix):
        if dated or aa:
            raise FaceoffError(
                "dated and aa apply to a matrix file, not to a matrix frozen already",
                fix="freeze the dated name or the A/A twin into the matrix, or pass the file",
            )
        return matrix
    zone = deployment_timezone(deployment.id) if dated else None
    when = night_of(flow_run.scheduled_start_time, zone) if dated else None
    return frozen_of(Path(matrix), dated=when, aa=aa)


def final_state(result: CampaignResult) -> State[CampaignResult]:
    """Failed when the incumbent is not restored, Failed named ``Partial`` when the campaign
    closed partial, Completed only when it is complete."""
    if not result.restored:
        message = result.restoration.message if result.restoration else "not restored"
        return Failed(data=result, message=f"the incumbent is not restored: {message}")
    if result.complete:
        return Completed(data=result, message=result.closure.sentence)
    return Failed(data=result, name=PARTIAL, message=result.closure.sentence)


def run_arms(
    context: CampaignContext,
    pilot: PilotMode | None = None,
    checked: PreflightReport | None = None,
) -> RestoreOutcome | None:
    """Every arm with cells left, after the pilot; restoration in ``finally``. None when
    nothing was left. ``checked``: the run's preflight, filed once there is work."""
    work = [(arm, cells) for arm, cells in remaining_work(context) if cells]
    references = [a for a in context.frozen.matrix.reference_arms if fidelity_pending(context, a)]
    if not work and not references:
        get_run_logger().info("every planned cell run has a disposition; no lane is touched")
        return None
    if checked is not None:
        write_report(context.campaign_dir, checked)
    check_incumbent_port(context)
    tools = context.tools
    check_startable_arms(context.frozen.matrix, tools.environ, tools.python)
    require_task(context)
    try:
        handoff = handoff_task(context)
        get_run_logger().info("took over: %d lane(s) stopped", len(handoff.stopped))
        left = [(arm, cells) for arm, cells in pilot_step(context, work, pilot, ready_arm) if cells]
        walks = (
            campaign_passes(context, left, _budget_end(context))
            if uses_passes(context.frozen.matrix)
            else walk_order(left)
        )
        for arm in references:  # first: every other arm is compared with it
            walk_arm(context, arm, [])
        for arm, cells in walks:
            walk_arm(context, arm, cells)
    finally:
        outcome = restore_task(context)
        get_run_logger().info("%s", outcome.message)
    return outcome


def _budget_end(context: CampaignContext) -> datetime | None:
    """When this run must be over, incumbent restored: the matrix's window (read in the
    deployment schedule's timezone, else the host's) or deadline, whichever is first."""
    spec = context.frozen.matrix.campaign
    if spec.window is None and spec.deadline is None:
        return None
    now = context.now()
    named = deployment_timezone(deployment.id) if spec.window and deployment.id else None
    zone = ZoneInfo(named) if named else now.astimezone().tzinfo or UTC
    end = budget_end(spec.window, spec.deadline, now, zone)
    get_run_logger().info("the night's budget ends %s", end)
    return end


def walk_arm(context: CampaignContext, arm: Arm, cells: list[Cell]) -> None:
    """The arm's cells in order on one lane, started for the first cell that will run (the
    stop policy may block cells without one) and started again if it died; then lane down.
    Cells on a lane whose warmups failed are blocked, never run."""
    run: ArmRun | None = None
    try:
        for cell in cells:
            span = functools.partial(context.spans.span, cell=cell.id, arm=arm.name)
            with span(spans.POLICY):
                blocked = policy_block(context, cell, arm.name)
            if blocked is not None:
                _log_result(block_task(context, cell, arm.name, blocked))
                continue
            with span(spans.LANE_CHECK):
                died = run is not None and _died(context, run)
            if run is None or died:
                if run is not None:
                    stop_task(context, run)
                run = ready_arm(context, arm, cell)
            if run.warmups_failed is not None:
                _log_result(block_task(context, cell, arm.name, run.warmups_failed))
                continue
            with span(spans.CELL_TASK):
                result = cell_run(context, run, cell)
            _log_result(result)
        if fidelity_pending(context, arm):
            run = run or started(context, arm)  # a reference arm has no speed cell
            for said in fidelity_task(context, run):
                (get_run_logger().info if said.scored else get_run_logger().warning)(said.sentence)
    finally:
        if run is not None:
            stop_task(context, run)


def _log_result(result: CellResult) -> None:
    get_run_logger().info(
        "%s on %s attempt %d: %s (%s) %s",
        *(result.cell_id, result.arm, result.attempt, result.disposition, result.reason_code),
        result.setup_error or result.sentence,
    )


def ready_arm(context: CampaignContext, arm: Arm, first: Cell) -> ArmRun:
    """The arm ready for its cells: its lane up and its identity checked
    (``lanes.bringup.bring_up``), its warmups served and judged; a run that is not usable
    says why."""
    run = started(context, arm)
    logger = get_run_logger()
    if not run.usable:
        logger.warning("arm %s cannot run cells: %s", arm.name, run.reason)
        return run
    logger.info("arm %s: lane up at %s, identity ok", arm.name, run.base_url)
    try:
        warmups = warmed(context, run, first)
    except FaceoffError as exc:  # unscored: the cells themselves will say what fails
        logger.warning("arm %s: warmups not run: %s", arm.name, exc.message)
        return run
    if warmups is None:
        return run
    run = judged_warmups(context, run, warmups)
    if run.warmups_failed is not None:
        logger.warning("%s", run.warmups_failed.sentence)
    else:
        logger.info("arm %s: %d warmup(s) served", arm.name, arm.warmups)
    return run


def _died(context: CampaignContext, run: ArmRun) -> bool:
    """Whether a usable lane died since it was last looked at (an unusable one never ran)."""
    if not run.usable:
        return False
    ended = lane_death(run, context.tools)
    if ended is not None:
        get_run_logger().warning("arm %s: the lane died: %s", run.arm.name, ended.detail)
    return ended is not None


# How the log names what this run did to the campaign, by its status before the run.
OPENING_VERBS = {
    None: "opened",
    "complete": "reopened (it had closed complete)",
    "closed_partial": "reopened (it had closed partial)",
    "sealing": "resumed to seal its bundle (a run was killed while sealing it)",
}


def _log_opening(opened: Opened) -> None:
    logger = get_run_logger()
    context = opened.context
    verb = OPENING_VERBS.get(opened.was, "resumed")
    logger.info(
        "campaign %s %s (matrix %s) in %s",
        context.name,
        verb,
        context.frozen.short_id,
        context.campaign_dir,
    )
    first = opened.restored_first
    if first is not None:
        log = logger.info if first.ok else logger.warning
        log("pending restoration first: %s", first.message)
    if opened.carried is not None:
        carried = opened.carried
        logger.info(
            "carried over %d cell(s) from %s; %d run here",
            len(carried.cells),
            carried.source,
            len(carried.fresh),
        )
    for attempt in opened.interrupted:
        logger.info("interrupted earlier: %s (its journal is kept and indexed)", attempt)
