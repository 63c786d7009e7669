"""The pilot as plain functions: one request of each cell contract on an arm's lane, and
which cell runs the night should not spend its hours on.
The same concept at other layers: ``evidence.attempt.pilot``, ``faceoff.formats.pilot``.

The flow (``flows.prefect.before_night.pilot_step``) boots each arm's lane once, before the
first pass, candidates first and the incumbent last, and stops it before the scored walk.
On a lane that serves, ``pilot_arm`` sends each contract's longest
input and, when that fails, its shortest (``matrix.contracts``). ``decide`` turns the
probes into blocks: a failing contract blocks its cells on that arm (only those at and above
the failing length when the shortest passed); a cell the incumbent cannot run, or that every
candidate running it cannot, is blocked on every arm (no pair of it could decide); in strict
mode every cell run left is blocked and the campaign stops. Evidence: ``evidence.attempt.pilot``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evidence.attempt.pilot import read_probe as read_probe_folder
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.request_plan import PLAN_NAME
from faceoff.formats.pilot import PILOT_DIR, PilotBlock, PilotLane, PilotMode, PilotProbe
from faceoff.formats.reasons import Disposition, Reason
from flows.campaign.arm import ArmRun, lane_death
from flows.campaign.client import run_client
from flows.campaign.context import CampaignContext
from flows.campaign.planning import plan_pilot
from guards.dispositions import Disposed
from matrix.arm import Arm
from matrix.cell import Cell
from matrix.contracts import Contract, contracts

Work = list[tuple[Arm, list[Cell]]]
BlockReason = Literal["pilot_failed", "stop_policy"]
PILOT_FAILED: BlockReason = "pilot_failed"
STOP: BlockReason = "stop_policy"  # the rest of a strict pilot's stop


def mode_of(declared: bool | str | None, default: bool) -> PilotMode | None:
    """The matrix's ``[campaign] pilot``, else the flow's default (on or off)."""
    chosen = default if declared is None else declared
    if chosen == "strict":
        return PilotMode.STRICT
    return PilotMode.ON if chosen else None


def lane_of(context: CampaignContext, run: ArmRun) -> PilotLane:
    reason = run.reason or (run.warmups_failed.sentence if run.warmups_failed else None)
    return PilotLane(arm=run.arm.name, lane_run=context.relative(run.run_dir), reason=reason)


def pilot_arm(context: CampaignContext, run: ArmRun, cells: Sequence[Cell]) -> list[PilotProbe]:
    """Each contract of the arm's cells on its lane; none when the lane cannot serve. A
    lane that dies under a probe ends the arm's pilot (its lane reason says so)."""
    if not run.usable or run.warmups_failed is not None:
        return []
    probes: list[PilotProbe] = []
    for contract in contracts(cells, run.arm.name):
        longest = send_probe(context, run, contract.longest, contract)
        probes.append(longest)
        if longest.failure is None:
            continue
        if lane_death(run, context.tools) is not None:
            break
        if contract.shortest.peak_input_tokens < contract.longest.peak_input_tokens:
            probes.append(send_probe(context, run, contract.shortest, contract))
    return probes


def send_probe(context: CampaignContext, run: ArmRun, cell: Cell, contract: Contract) -> PilotProbe:
    """One request of ``cell``'s prompts in the pilot phase, into ``pilot/<arm>/<cell>/``."""
    folder = context.campaign_dir / PILOT_DIR / run.arm.name / cell.id
    folder.mkdir(parents=True)
    setup_error = None
    try:
        plan_pilot(cell, run.plan_target(context.frozen.matrix.campaign)).write(folder / PLAN_NAME)
        run_client(
            folder,
            base_url=run.base_url,
            deadline_s=cell.deadline_s,
            arm=run.arm.name,
            attempt=1,
            python=context.tools.python,
            receive=context.frozen.matrix.campaign.client_receive,
        )
    except FaceoffError as exc:
        setup_error = exc.message
    words = (contract.words, [c.id for c in contract.cells])
    return read_probe_folder(
        folder, context.campaign_dir, arm=run.arm.name, contract=words, setup_error=setup_error
    )


@dataclass(frozen=True)
class PilotDecision:
    blocked: list[PilotBlock]
    stopped: bool


def decide(
    mode: PilotMode,
    work: Work,
    incumbent: str,
    lanes: Sequence[PilotLane],
    probes: Sequence[PilotProbe],
) -> PilotDecision:
    """Pure: the cell runs the pilot blocks, and whether the campaign stops."""
    failing = _failing(work, lanes, probes)
    if mode is PilotMode.STRICT and failing:
        return PilotDecision(_stop_everything(work, failing), stopped=True)
    runners = {
        c.id: [a.name for a, cells in work if c in cells] for _, cells in work for c in cells
    }
    blocked = []
    for arm, cells in work:
        for cell in cells:
            others = [a for a in runners[cell.id] if a != incumbent]
            why = _why_blocked(cell.id, arm.name, incumbent, others, failing)
            if why is not None:
                blocked.append(_block(cell.id, arm.name, why, PILOT_FAILED))
    return PilotDecision(blocked, stopped=False)


def _failing(
    work: Work, lanes: Sequence[PilotLane], probes: Sequence[PilotProbe]
) -> dict[tuple[str, str], str]:
    """(cell, arm) -> why that arm cannot run that cell, by its lane or its probes."""
    found: dict[tuple[str, str], str] = {}
    down = {lane.arm: lane.reason for lane in lanes if lane.reason}
    for arm, cells in work:
        if arm.name in down:
            found |= {
                (c.id, arm.name): f"its lane could not serve: {down[arm.name]}" for c in cells
            }
            continue
        for contract in contracts(cells, arm.name):
            found |= _contract_failing(arm.name, contract, probes)
    return found


def _contract_failing(
    arm: str, contract: Contract, probes: Sequence[PilotProbe]
) -> dict[tuple[str, str], str]:
    ids = {c.id for c in contract.cells}
    mine = {p.cell_id: p for p in probes if p.arm == arm and p.cell_id in ids}
    longest = mine.get(contract.longest.id)
    if longest is None or longest.failure is None:
        return {}
    shortest = mine.get(contract.shortest.id)
    condemned = (
        contract.at_least(contract.longest.peak_input_tokens)
        if shortest is not None and shortest is not longest and shortest.failure is None
        else list(contract.cells)
    )
    reason = f"{longest.cell_id}: {longest.failure}"
    if shortest is not None and shortest is not longest:
        reason += f"; {shortest.cell_id}: " + (shortest.failure or "passed")
    return {(c.id, arm): reason for c in condemned}


def _why_blocked(
    cell: str, arm: str, incumbent: str, candidates: list[str], failing: dict[tuple[str, str], str]
) -> str | None:
    """Why the pilot blocks ``cell`` on ``arm``: it fails there, or no pair could decide."""
    if (cell, arm) in failing:
        return f"the pilot found {arm} cannot run {cell}: {failing[(cell, arm)]}; not run"
    if (cell, incumbent) in failing:
        return (
            f"the pilot found the incumbent {incumbent} cannot run {cell} "
            f"({failing[(cell, incumbent)]}), so no pair of it could decide; not run"
        )
    if arm == incumbent and candidates and all((cell, c) in failing for c in candidates):
        why = "; ".join(f"{c}: {failing[(cell, c)]}" for c in candidates)
        return (
            f"the pilot found no candidate can run {cell} ({why}), so no pair of it could "
            "decide; not run"
        )
    return None


def _stop_everything(work: Work, failing: dict[tuple[str, str], str]) -> list[PilotBlock]:
    (cell, arm), why = next(iter(failing.items()))
    stop = (
        f"the strict pilot failed ({cell} on {arm}: {why}); the campaign stopped before its "
        "scored cells"
    )
    blocked = []
    for a, cells in work:
        for c in cells:
            found = failing.get((c.id, a.name))
            if found is not None:
                said = f"the pilot found {a.name} cannot run {c.id}: {found}; not run"
                blocked.append(_block(c.id, a.name, said, PILOT_FAILED))
            else:
                blocked.append(_block(c.id, a.name, stop, STOP))
    return blocked


def _block(cell: str, arm: str, sentence: str, reason: BlockReason) -> PilotBlock:
    return PilotBlock(cell_id=cell, arm=arm, sentence=sentence, reason_code=reason)


def disposed(block: PilotBlock) -> Disposed:
    """The verdict a block files: pilot_failed, or stop_policy for the strict stop's rest."""
    return Disposed(Disposition.BLOCKED, Reason(block.reason_code), block.sentence)
