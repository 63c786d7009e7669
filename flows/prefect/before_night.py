"""The flow's steps before the scored hours: the preflight, before the take-over, and the
pilot, after it (docs/flows.md, "Before the night").

The preflight runs first, touching nothing: a FAIL nobody waived raises before the campaign
is opened (``faceoff run`` has run it already and passes its report in). The pilot boots each
arm's lane, candidates first and the incumbent last, sends one request of each cell contract
(``flows.campaign.pilot``), files ``pilot/pilot.json``, blocks what it condemns, and hands the
incumbent's lane on to its cells: the boot the campaign makes anyway.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from prefect import get_run_logger, task

from evidence.attempt.pilot import PILOT_DIR, PILOT_FILE, PilotMode, PilotProbe, PilotRecord
from evidence.folder.preflight import PreflightReport, Waiver
from flows.campaign.arm import ArmRun
from flows.campaign.context import CampaignContext
from flows.campaign.pilot import Work, decide, disposed, lane_of, pilot_arm
from flows.campaign.preflight.run import real_host, require_passed, run_preflight
from flows.prefect.nightly import deployment_timezone
from flows.prefect.tasks import SIDE_EFFECTS, block_task, stop_task
from matrix.arm import Arm, Role
from matrix.cell import Cell
from matrix.freeze import FrozenMatrix

Boot = Callable[[CampaignContext, Arm, Cell], ArmRun]  # flows.prefect.flow.bring_up


def preflight_now(
    frozen: FrozenMatrix, workdir: Path, waivers: list[Waiver], deployment_id: str | None, *,
    pilot: bool,
) -> PreflightReport:  # fmt: skip
    """The checklist in the schedule's timezone (the host's outside a deployment); raises
    on a FAIL nobody waived."""
    zone_name = deployment_timezone(deployment_id)
    zone = ZoneInfo(zone_name) if zone_name else datetime.now().astimezone().tzinfo
    assert zone is not None
    report = run_preflight(
        frozen, real_host(workdir, os.environ, zone, db=None), waivers, pilot=pilot
    )
    logger = get_run_logger()
    for result in [*report.warnings, *report.waived]:
        logger.warning("preflight: %s", result.line)
    require_passed(report)
    logger.info("%s", report.sentence)
    return report


preflight_task = task(name="preflight", **SIDE_EFFECTS)(preflight_now)
pilot_task = task(name="pilot", task_run_name="pilot on {run.arm.name}", **SIDE_EFFECTS)(pilot_arm)


@dataclass(frozen=True)
class Piloted:
    work: Work  # what is left to run
    lanes: dict[str, ArmRun] = field(default_factory=dict)  # arm -> a lane its cells take on

    def lane(self, arm: Arm) -> ArmRun | None:
        return self.lanes.get(arm.name)


def pilot_step(context: CampaignContext, work: Work, mode: PilotMode | None, boot: Boot) -> Piloted:
    """The pilot over the arms with cells left, once per campaign (a resume finds
    ``pilot/pilot.json`` and goes on)."""
    if mode is None or (context.campaign_dir / PILOT_DIR / PILOT_FILE).is_file():
        return Piloted(work)
    started = context.now()
    ordered = sorted(work, key=lambda item: item[0].role is Role.INCUMBENT)  # incumbent last
    runs, probes = [], []
    for arm, cells in ordered:
        run = boot(context, arm, cells[0])
        runs.append(run)
        probes += pilot_task(context, run, cells)
        if arm.role is not Role.INCUMBENT or not run.usable:
            stop_task(context, run)
    record = _filed(context, mode, started, work, runs=runs, probes=probes)
    kept = {r.arm.name: r for r in runs if r.arm.role is Role.INCUMBENT and r.usable}
    if record.stopped:
        return _stopped(context, work, kept)
    return Piloted(_left(work, record), kept)


def _filed(
    context: CampaignContext,
    mode: PilotMode,
    started: datetime,
    work: Work,
    *,
    runs: list[ArmRun],
    probes: list[PilotProbe],
) -> PilotRecord:
    lanes = [lane_of(context, run) for run in runs]
    incumbent = context.frozen.matrix.incumbent.name
    decision = decide(mode, work, incumbent, lanes, probes)
    record = PilotRecord(
        mode=mode, at=started, lanes=lanes, probes=probes, blocked=decision.blocked,
        stopped=decision.stopped,
    )  # fmt: skip
    cells = {c.id: c for _, cs in work for c in cs}
    for block in record.blocked:
        block_task(context, cells[block.cell_id], block.arm, disposed(block))
    record.write(context.campaign_dir / PILOT_DIR / PILOT_FILE)
    log = get_run_logger().warning if record.failures or record.stopped else get_run_logger().info
    log("%s", record.sentence)
    return record


def _left(work: Work, record: PilotRecord) -> Work:
    gone = {(b.cell_id, b.arm) for b in record.blocked}
    return [(arm, [c for c in cells if (c.id, arm.name) not in gone]) for arm, cells in work]


def _stopped(context: CampaignContext, work: Work, kept: dict[str, ArmRun]) -> Piloted:
    for run in kept.values():
        stop_task(context, run)
    return Piloted([(arm, []) for arm, _ in work])
