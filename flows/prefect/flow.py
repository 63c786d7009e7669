"""The campaign flow: ARCHITECTURE §1's walk, as a Prefect 3 flow over plain functions.

    freeze → open (or resume: restore first, mark interrupted) → port check →
    "restoration required" → take over (drain, stop) → for each arm, incumbent
    first: lane up, identity, warmups, each cell (plan, collectors, client, drain,
    guard, ledger), lane down → finally restore the incumbent → close (closure,
    bundle, tickets) → Prefect artifacts.

A run that has nothing left to do touches no lane and only rewrites the bundle.

The flow run's final state says how it ended: ``Completed`` when the campaign is
complete, ``Failed`` named ``Partial`` when it closed partial (not green in the UI: some
cell runs failed, were blocked or never ran), ``Failed`` when the incumbent could not
be restored (whichever restoration of the run came last: the
pending one a resume runs first, or the one after the cells). Its data is the
``CampaignResult`` either way (``flows.runner.result_of``).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State
from prefect.runtime import deployment, flow_run
from prefect.states import Completed, Failed

from faceoff.errors import FaceoffError
from flows import spans
from flows.arm import ArmRun, judged_warmups, lane_death
from flows.closing import CampaignResult
from flows.handoff import check_incumbent_port
from flows.lock import CampaignLock
from flows.nightly import deployment_timezone, night_of, refuse_closed
from flows.opening import OPEN, Opened, campaign_dir_of, frozen_of, remaining_work, set_status
from flows.restore import RestoreOutcome, restore_tools
from flows.scope import CampaignScope
from flows.steps import CellResult, policy_block
from flows.tasks import (
    block_task,
    cell_run,
    close_task,
    handoff_task,
    open_task,
    publish_task,
    require_task,
    restore_task,
    started,
    stop_task,
    warmed,
)
from matrix.model import Arm, Cell

FLOW_NAME = "faceoff-campaign"
PARTIAL = "Partial"  # the name of the Failed state of a campaign that closed partial


@flow(name=FLOW_NAME, persist_result=False, log_prints=False)
def campaign(
    matrix: str, workdir: str = "runs", dated: bool = False, aa: bool = False
) -> State[CampaignResult]:
    """Run, or resume, the campaign of a matrix TOML file.

    ``dated``: name the campaign ``<name>-YYYYMMDD`` after the run's scheduled start, dated
    in the timezone of the deployment's schedule, so that a nightly deployment opens one
    campaign per night; a closed one is never reopened (``flows.nightly``). The ledger is
    ``FACEOFF_DB_URL``'s, else ``<workdir>/faceoff.db``: never a parameter, which Prefect
    stores in its database (a PostgreSQL URL carries a password). ``aa``: run the matrix's
    A/A twin, the incumbent's recipe on every arm, as campaign ``<name>-aa`` (``matrix.aa``).
    """
    zone = deployment_timezone(deployment.id) if dated else None
    when = night_of(flow_run.scheduled_start_time, zone) if dated else None
    frozen = frozen_of(Path(matrix), dated=when, aa=aa)
    if dated:
        refuse_closed(Path(workdir), frozen.matrix.campaign.name)
    tools = restore_tools(os.environ)
    with CampaignLock(campaign_dir_of(Path(workdir), frozen)):
        opened = open_task(frozen, workdir=Path(workdir), tools=tools)
        _log_opening(opened)
        try:
            restoration = run_arms(opened.scope)
        except BaseException:
            set_status(opened.scope, OPEN)
            raise
        done = [r for r in (opened.restored_first, restoration) if r is not None]
        result = close_task(opened.scope, done)
        get_run_logger().info(
            "%s: %s; bundle %s", result.campaign, result.closure.sentence, result.bundle
        )
        publish_task(opened.scope, result)
        return final_state(result)


def final_state(result: CampaignResult) -> State[CampaignResult]:
    """Failed when the incumbent is not restored, Failed named ``Partial`` when the campaign
    closed partial, Completed only when it is complete."""
    if not result.restored:
        message = result.restoration.message if result.restoration else "not restored"
        return Failed(data=result, message=f"the incumbent is not restored: {message}")
    if result.complete:
        return Completed(data=result, message=result.closure.sentence)
    return Failed(data=result, name=PARTIAL, message=result.closure.sentence)


def run_arms(scope: CampaignScope) -> RestoreOutcome | None:
    """Every arm with cells left; restoration in ``finally``. None when nothing was left."""
    work = [(arm, cells) for arm, cells in remaining_work(scope) if cells]
    if not work:
        get_run_logger().info("every planned cell run has a disposition; no lane is touched")
        return None
    check_incumbent_port(scope)
    require_task(scope)
    try:
        handoff = handoff_task(scope)
        get_run_logger().info("took over: %d lane(s) stopped", len(handoff.stopped))
        for arm, cells in work:
            walk_arm(scope, arm, cells)
    finally:
        outcome = restore_task(scope)
        get_run_logger().info("%s", outcome.message)
    return outcome


def walk_arm(scope: CampaignScope, arm: Arm, cells: list[Cell]) -> None:
    """The arm's cells in order on one lane, started for the first cell that will run (the
    stop policy may block cells without one) and started again if it died; then lane down.
    Cells on a lane whose warmups failed are blocked, never run."""
    run: ArmRun | None = None
    try:
        for cell in cells:
            span = functools.partial(scope.spans.span, cell=cell.id, arm=arm.name)
            with span(spans.POLICY):
                blocked = policy_block(scope, cell, arm.name)
            if blocked is not None:
                _log_result(block_task(scope, cell, arm.name, blocked))
                continue
            with span(spans.LANE_CHECK):
                died = run is not None and _died(scope, run)
            if run is None or died:
                if run is not None:
                    stop_task(scope, run)
                run = bring_up(scope, arm, cell)
            if run.warmups_failed is not None:
                _log_result(block_task(scope, cell, arm.name, run.warmups_failed))
                continue
            with span(spans.CELL_TASK):
                result = cell_run(scope, run, cell)
            _log_result(result)
    finally:
        if run is not None:
            stop_task(scope, run)


def _log_result(result: CellResult) -> None:
    get_run_logger().info(
        "%s on %s attempt %d: %s (%s) %s",
        *(result.cell_id, result.arm, result.attempt, result.disposition, result.reason_code),
        result.setup_error or result.sentence,
    )


def bring_up(scope: CampaignScope, arm: Arm, first: Cell) -> ArmRun:
    run = started(scope, arm)
    logger = get_run_logger()
    if not run.usable:
        logger.warning("arm %s cannot run cells: %s", arm.name, run.reason)
        return run
    logger.info("arm %s: lane up at %s, identity ok", arm.name, run.base_url)
    try:
        warmups = warmed(scope, run, first)
    except FaceoffError as exc:  # unscored: the cells themselves will say what fails
        logger.warning("arm %s: warmups not run: %s", arm.name, exc.message)
        return run
    if warmups is None:
        return run
    run = judged_warmups(scope, run, warmups)
    if run.warmups_failed is not None:
        logger.warning("%s", run.warmups_failed.sentence)
    else:
        logger.info("arm %s: %d warmup(s) served", arm.name, arm.warmups)
    return run


def _died(scope: CampaignScope, run: ArmRun) -> bool:
    """Whether a usable lane died since it was last looked at (an unusable one never ran)."""
    if not run.usable:
        return False
    ended = lane_death(run, scope.tools)
    if ended is not None:
        get_run_logger().warning("arm %s: the lane died: %s", run.arm.name, ended.detail)
    return ended is not None


def _log_opening(opened: Opened) -> None:
    logger = get_run_logger()
    scope = opened.scope
    verb = "resumed" if opened.resumed else "opened"
    logger.info(
        "campaign %s %s (matrix %s) in %s",
        scope.name,
        verb,
        scope.frozen.short_id,
        scope.campaign_dir,
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
