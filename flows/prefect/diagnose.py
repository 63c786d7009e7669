"""``faceoff run --diagnose CELL MATRIX``: paired one-request diagnostics, as a Prefect flow.

The campaign's opening and takeover, then for each arm that runs the cell, incumbent first,
one diagnostic request on its lane (``flows.campaign.diagnostic_run``), then the incumbent
restored and the bundle sealed again. No cell run is attempted and no disposition changes.
The final state is ``Completed`` when every arm's request ended ok and the incumbent is
restored, else ``Failed``; its data is the ``DiagnoseResult`` either way. The walk in full:
docs/flows.md, "Paired diagnostics".

Import this module only after ``flows.prefect.server.apply_prefect_defaults``: Prefect reads
its settings when it is imported.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

from evidence.views.terminal.diagnostic_table import paired_lines
from faceoff.exits import Exit
from faceoff.formats.attempt.request_plan import RequestPlan
from faceoff.formats.diagnostic import Diagnostic
from faceoff.formats.frozen_matrix import FrozenMatrix
from flows.campaign.closing import CampaignResult
from flows.campaign.context import CampaignContext
from flows.campaign.diagnostic_run import diagnose_run, diagnosed_cell, reference_of
from flows.campaign.lock import CampaignLock
from flows.campaign.opening import OPEN, campaign_dir_of, frozen_of, set_status
from flows.campaign.restore import RestoreOutcome, restore_tools
from flows.campaign.signals import sigterm_raises
from flows.campaign.takeover import check_incumbent_port, check_startable_arms
from flows.prefect.flow import ready_arm
from flows.prefect.tasks import (
    SIDE_EFFECTS,
    cell_timeout,
    close_task,
    handoff_task,
    open_task,
    require_task,
    restore_task,
    stop_task,
)
from matrix.arm import Arm
from matrix.cell import Cell

FLOW_NAME = "faceoff-diagnose"

request_task = task(
    name="diagnostic request", task_run_name="diagnose {cell.id} on {run.arm.name}", **SIDE_EFFECTS
)(diagnose_run)


@dataclass(frozen=True)
class DiagnoseResult:
    campaign: CampaignResult  # the closure and the bundle, as the run left them
    cell_id: str
    incumbent: str
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return bool(self.diagnostics) and all(d.status == "ok" for d in self.diagnostics)

    def lines(self) -> list[str]:
        return paired_lines(self.cell_id, self.diagnostics, self.incumbent)

    @property
    def exit_status(self) -> int:
        if not self.campaign.restored:
            return Exit.NOT_RESTORED
        # not ok: some arm's request did not run or did not end ok; the incumbent restored
        return Exit.OK if self.ok else Exit.PARTIAL


@flow(name=FLOW_NAME, persist_result=False, log_prints=False)
def diagnose(
    matrix: str | FrozenMatrix, cell: str, workdir: str = "runs", locked: bool = False
) -> State[DiagnoseResult]:
    """Paired one-request diagnostics of ``cell`` on every arm that runs it: of a matrix TOML
    file, or of the frozen matrix ``faceoff run --diagnose`` has made of one. ``locked``:
    the caller holds the campaign's run lock already."""
    frozen = matrix if isinstance(matrix, FrozenMatrix) else frozen_of(Path(matrix))
    target = diagnosed_cell(frozen, cell)
    tools = restore_tools(os.environ)
    with nullcontext() if locked else CampaignLock(campaign_dir_of(Path(workdir), frozen)):
        opened = open_task(frozen, workdir=Path(workdir), tools=tools)
        try:
            found, restoration = diagnose_arms(opened.context, target)
        except BaseException:
            set_status(opened.context, OPEN)
            raise
        done = [r for r in (opened.restored_first, restoration) if r is not None]
        closed = close_task(opened.context, done)
        result = DiagnoseResult(closed, target.id, frozen.matrix.incumbent.name, tuple(found))
        said = f"{target.id}: " + ", ".join(f"{d.arm} {d.status}" for d in found)
        if result.exit_status == Exit.OK:
            return Completed(data=result, message=said)
        return Failed(data=result, message=said)


def diagnose_arms(context: CampaignContext, cell: Cell) -> tuple[list[Diagnostic], RestoreOutcome]:
    """Each arm that runs the cell in turn, incumbent first; restoration in ``finally``."""
    check_incumbent_port(context)
    tools = context.tools
    check_startable_arms(context.frozen.matrix, tools.environ, tools.python)
    require_task(context)
    found: list[Diagnostic] = []
    try:
        handoff_task(context)
        reference: RequestPlan | None = None
        for arm in context.frozen.matrix.arm_order():
            if cell in context.frozen.matrix.cells_for(arm):
                diagnostic, folder = diagnose_on(context, arm, cell, reference)
                found.append(diagnostic)
                reference = reference or reference_of(folder)
    finally:
        outcome = restore_task(context)
    return found, outcome


def diagnose_on(
    context: CampaignContext, arm: Arm, cell: Cell, reference: RequestPlan | None
) -> tuple[Diagnostic, Path]:
    """A fresh lane of the arm (as a cell gets), the diagnostic on it, the lane down."""
    run = ready_arm(context, arm, cell)
    try:
        timed = request_task.with_options(timeout_seconds=cell_timeout(cell))
        return timed(context, run, cell, reference)
    finally:
        stop_task(context, run)


def run_diagnose(
    matrix: Path | FrozenMatrix, workdir: Path, cell: str, *, locked: bool = False
) -> DiagnoseResult:
    """The flow with SIGTERM raising ``Terminated`` around it, so restoration runs."""
    given = matrix if isinstance(matrix, FrozenMatrix) else str(matrix)
    with sigterm_raises():
        state = diagnose(matrix=given, cell=cell, workdir=str(workdir), locked=locked,
                         return_state=True)  # fmt: skip
    return result_of(state)


def result_of(state: State[Any]) -> DiagnoseResult:
    data = state.result(raise_on_failure=False)
    if isinstance(data, DiagnoseResult):
        return data
    state.result()  # raises the run's own error
    raise TypeError(f"the diagnose flow run ended {state.name} without a result")
