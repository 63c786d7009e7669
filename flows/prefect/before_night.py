"""The flow's steps before the scored hours: the preflight, before the take-over, and the
pilot, after it (docs/flows.md, "Before the night").
The same concept at another layer: ``evidence.views.card.before_night``.

The preflight runs first, touching nothing: a FAIL nobody waived raises before the campaign
is opened (``faceoff run`` has run it already and passes its report in). The pilot runs once
per campaign, before the first pass, whatever the number of passes: it boots each arm's lane
once, candidates first and the incumbent last, sends one request of each of the arm's cell
contracts over every pass (a replicate asks the engine what its first pass asks), stops the
lane, files ``pilot/pilot.json`` and blocks what it condemns (``flows.campaign.pilot``). Every
pilot lane is down before the scored walk, the incumbent's too: each pass brings its lanes up
afresh, with fresh counters, on ports nothing of the pilot still holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from prefect import get_run_logger, task

from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.pilot import PILOT_DIR, PILOT_FILE, PilotMode, PilotProbe, PilotRecord
from faceoff.formats.preflight import PreflightReport, Waiver
from flows.campaign.arm import ArmRun
from flows.campaign.context import CampaignContext
from flows.campaign.pilot import Work, decide, disposed, lane_of, pilot_arm
from flows.campaign.preflight.host_checks import real_host, require_passed, run_preflight
from flows.prefect.nightly import deployment_timezone
from flows.prefect.tasks import SIDE_EFFECTS, block_task, stop_task
from matrix.arm import Arm, Role
from matrix.cell import Cell

Boot = Callable[[CampaignContext, Arm, Cell], ArmRun]  # flows.prefect.flow.ready_arm


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


def pilot_step(context: CampaignContext, work: Work, mode: PilotMode | None, boot: Boot) -> Work:
    """The work (per pass, per arm) the pilot leaves to run: once per campaign, over every
    arm with cells left in any pass (a resume finds ``pilot/pilot.json`` and goes on); each
    pilot lane stopped before the scored walk."""
    if mode is None or (context.campaign_dir / PILOT_DIR / PILOT_FILE).is_file():
        return work
    started = context.now()
    arms = per_arm(work)
    ordered = sorted(arms, key=lambda item: item[0].role is Role.INCUMBENT)  # incumbent last
    runs, probes = [], []
    for arm, cells in ordered:
        run = boot(context, arm, cells[0])
        runs.append(run)
        try:
            probes += pilot_task(context, run, cells)
        finally:
            stop_task(context, run)
    record = _filed(context, mode, started, arms, runs=runs, probes=probes)
    if record.stopped:
        return [(arm, []) for arm, _ in work]
    return _left(work, record)


def per_arm(work: Work) -> Work:
    """Each arm once, with its cells of every pass in pass order; arms with none left out."""
    merged: dict[str, tuple[Arm, list[Cell]]] = {}
    for arm, cells in work:
        merged.setdefault(arm.name, (arm, []))[1].extend(cells)
    return [(arm, cells) for arm, cells in merged.values() if cells]


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
