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

from flows.arm import ArmRun, run_warmups, start_arm, stop_arm
from flows.client import OVERRUN_GRACE_S, STOP_GRACE_S, ClientExit
from flows.closing import close
from flows.handoff import take_over
from flows.opening import open_run
from flows.publish import publish
from flows.restore import RestoreOutcome, require_restoration, restore_incumbent
from flows.scope import CampaignScope
from flows.signals import sigterm_deferred
from flows.steps import CellResult, block_cell, run_cell
from ledger.tables import RestorationRow
from matrix.model import Arm, Cell

SIDE_EFFECTS: dict[str, Any] = {"cache_policy": NONE, "persist_result": False}
SETUP_MARGIN_S = 300.0  # planning on /tokenize, collector start and drain, lane stop


def restore_now(scope: CampaignScope) -> RestoreOutcome:
    """Restoration, with SIGTERM held until the receipt is written."""
    with sigterm_deferred():
        return restore_incumbent(scope.engine, scope.name, scope.tools)


def require_now(scope: CampaignScope) -> RestorationRow:
    return require_restoration(
        scope.engine,
        campaign=scope.name,
        frozen=scope.frozen,
        campaign_dir=scope.campaign_dir,
        now=scope.tools.now,
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


def started(scope: CampaignScope, arm: Arm) -> ArmRun:
    return start_task.with_options(timeout_seconds=start_timeout(arm))(scope, arm)


def warmed(scope: CampaignScope, run: ArmRun, cell: Cell) -> ClientExit | None:
    return warmup_task.with_options(timeout_seconds=cell_timeout(cell))(scope, run, cell)


def cell_run(scope: CampaignScope, run: ArmRun, cell: Cell) -> CellResult:
    return cell_task.with_options(timeout_seconds=cell_timeout(cell))(scope, run, cell)
