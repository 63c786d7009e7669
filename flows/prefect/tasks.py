"""The campaign's Prefect tasks: thin wrappers over the plain functions that do the work.

Every task has side effects (lanes, processes, files, the ledger), so none caches
or persists its result. Retries only where a repeat cannot change a measurement:
stopping a lane and publishing Prefect artifacts. A cell is never retried: a
rerun is a new attempt, recorded as such by the next ``faceoff run``.
Timeouts are per call (``timeouts``), from the arm's startup deadline and the
cell's deadline, as a backstop behind the deadlines the steps enforce themselves.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NONE

from flows.campaign.arm import ArmRun, run_warmups, start_arm, stop_arm
from flows.campaign.cell_run import CellResult, block_cell, run_cell
from flows.campaign.client import OVERRUN_GRACE_S, STOP_GRACE_S, ClientExit
from flows.campaign.closing import close
from flows.campaign.context import CampaignContext
from flows.campaign.fidelity_run import run_fidelity
from flows.campaign.opening import open_run
from flows.campaign.restore import RestoreOutcome, require_restoration, restore_incumbent
from flows.campaign.signals import sigterm_deferred
from flows.campaign.takeover import take_over
from flows.prefect.publish import publish
from ledger.tables import RestorationRow
from matrix.arm import Arm
from matrix.cell import Cell

SIDE_EFFECTS: dict[str, Any] = {"cache_policy": NONE, "persist_result": False}
SETUP_MARGIN_S = 300.0  # planning on /tokenize, collector start and drain, lane stop


def restore_now(context: CampaignContext) -> RestoreOutcome:
    """Restoration, with SIGTERM held until the receipt is written."""
    with sigterm_deferred():
        return restore_incumbent(context.engine, context.name, context.tools)


def require_now(context: CampaignContext) -> RestorationRow:
    return require_restoration(
        context.engine,
        campaign=context.name,
        frozen=context.frozen,
        campaign_dir=context.campaign_dir,
        now=context.tools.now,
    )


open_task = task(name="open campaign", **SIDE_EFFECTS)(open_run)
require_task = task(name="restoration required", **SIDE_EFFECTS)(require_now)
handoff_task = task(name="take over from the incumbent", **SIDE_EFFECTS)(take_over)
start_task = task(name="bring up lane", task_run_name="bring up {arm.name}", **SIDE_EFFECTS)(
    start_arm
)
warmup_task = task(name="arm warmups", task_run_name="warm up {run.arm.name}", **SIDE_EFFECTS)(
    run_warmups
)
cell_task = task(name="cell", task_run_name="{cell.id} on {run.arm.name}", **SIDE_EFFECTS)(run_cell)
block_task = task(name="cell blocked", task_run_name="{cell.id} on {arm} blocked", **SIDE_EFFECTS)(
    block_cell
)
fidelity_task = task(
    name="fidelity cells", task_run_name="fidelity on {run.arm.name}", **SIDE_EFFECTS
)(run_fidelity)
stop_task = task(
    name="stop lane",
    task_run_name="stop {run.arm.name}",
    retries=2,
    retry_delay_seconds=5,
    **SIDE_EFFECTS,
)(stop_arm)
restore_task = task(name="restore incumbent", **SIDE_EFFECTS)(restore_now)
close_task = task(name="close campaign", **SIDE_EFFECTS)(close)
publish_task = task(name="publish artifacts", retries=2, retry_delay_seconds=2, **SIDE_EFFECTS)(
    publish
)


def start_timeout(arm: Arm) -> float:
    return arm.startup_deadline_s + SETUP_MARGIN_S


def cell_timeout(cell: Cell) -> float:
    return cell.deadline_s + OVERRUN_GRACE_S + STOP_GRACE_S + SETUP_MARGIN_S


def started(context: CampaignContext, arm: Arm) -> ArmRun:
    return start_task.with_options(timeout_seconds=start_timeout(arm))(context, arm)


def warmed(context: CampaignContext, run: ArmRun, cell: Cell) -> ClientExit | None:
    return warmup_task.with_options(timeout_seconds=cell_timeout(cell))(context, run, cell)


def cell_run(context: CampaignContext, run: ArmRun, cell: Cell) -> CellResult:
    return cell_task.with_options(timeout_seconds=cell_timeout(cell))(context, run, cell)
