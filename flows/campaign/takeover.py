"""Taking the GPUs over from the incumbent before the first lane of a run starts.

First a port check that touches nothing: something serving on the incumbent's port that
faceoff cannot account for (a lane of this campaign, or the incumbent an earlier campaign
restored under this workdir) refuses the run, since faceoff would otherwise measure next
to, or on top of, production. Then, after "restoration required" is in the ledger: drain
the incumbent, remove this campaign's lanes, stop an earlier campaign's restored
incumbent; ``handoffs/handoff-<NNN>.json`` records what was done (its format:
``faceoff.formats.handoff``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.handoff import (
    HANDOFF_GLOB,
    HANDOFFS_DIR,
    HandoffRecord,
    StoppedLane,
    handoff_name,
)
from faceoff.formats.lane import LaneRecord
from faceoff.formats.receipt import RouterAction
from flows.campaign.arm import probe_port
from flows.campaign.context import CampaignContext
from flows.campaign.live_lanes import own_lanes, production_lanes
from lanes.factory import check_startable
from lanes.leftovers import Leftover, clear_campaign_lanes, remove_containers, stop_processes
from lanes.router import RouterHook
from matrix.arm import Arm
from matrix.model import Matrix


def check_incumbent_port(context: CampaignContext) -> None:
    """Refuse to start when an unknown server answers on the incumbent's port."""
    arm = context.frozen.matrix.incumbent
    reply = probe_port(context, arm)
    if reply.status is None or _own_lanes(context, arm) or earlier_production(context, arm):
        return
    raise FaceoffError(
        f"something answers on the incumbent's port {arm.host}:{arm.port} "
        f"({reply.describe()}), and it is no lane faceoff started under {context.workdir}",
        where=f"arms[{arm.name}]",
        fix="stop the operator's incumbent (faceoff restores it from the frozen recipe at the "
        "end, with a receipt), or run from the workdir of the campaign that restored it",
    )


def check_startable_arms(matrix: Matrix, environ: Mapping[str, str], python: str) -> None:
    """Before the serving incumbent is stopped: every arm's lane could be started (secrets
    set, host programs found), the incumbent's above all, so that a run never stops an
    incumbent it cannot bring back for want of an input. ``faceoff run`` asks before its
    Prefect server starts, the flow again before the take-over."""
    for arm in [*matrix.arm_order(), *matrix.reference_arms]:
        try:
            check_startable(arm, environ, python)
        except FaceoffError as exc:
            raise FaceoffError(
                f"{exc.what}; nothing was started or stopped, the serving incumbent is untouched",
                where=exc.where,
                fix=exc.fix,
            ) from None


def take_over(context: CampaignContext) -> HandoffRecord:
    """Drain, then stop every lane in the way; write and return the record."""
    arm = context.frozen.matrix.incumbent
    started = context.now()
    drain = _drain(context, arm)
    tools = context.tools
    removed = clear_campaign_lanes(
        context.campaign_dir, context.name, context.docker, tools.now, tools.grace_s
    )
    stopped = [_stopped(context.name, x) for x in removed]
    for campaign, leftover in stop_earlier_production(context, arm):
        stopped.append(_stopped(campaign, leftover))
    record = HandoffRecord(
        campaign=context.name, incumbent=arm.name, at=started, drain=drain, stopped=stopped
    )
    record.write(_next_path(context.campaign_dir / HANDOFFS_DIR))
    return record


def _drain(context: CampaignContext, arm: Arm) -> RouterAction | None:
    if arm.router is None:
        return None
    action = RouterHook(arm, context.tools.environ, context.tools.http, context.tools.now).drain()
    if not action.ok:
        raise FaceoffError(
            f"the router refused to drain the incumbent: {action.detail}",
            where=f"arms[{arm.name}].router",
            fix="check the router's drain hook and token; nothing was stopped",
        )
    return action


def earlier_production(context: CampaignContext, arm: Arm) -> list[tuple[Path, LaneRecord]]:
    """Live restore lanes of other campaigns under the workdir serving on the arm's address."""
    return production_lanes(context.workdir, context.campaign_dir, arm, context.docker)


def stop_earlier_production(context: CampaignContext, arm: Arm) -> list[tuple[str, Leftover]]:
    stopped: list[tuple[str, Leftover]] = []
    for run_dir, record in earlier_production(context, arm):
        if record.container_id is not None:
            assert context.docker is not None  # lane_alive found the container through it
            container = context.docker.containers.get(record.container_id)
            done = remove_containers([container], context.tools.grace_s)
        else:
            done = stop_processes([(run_dir, record)], context.tools.now, context.tools.grace_s)
        stopped += [(record.campaign, x) for x in done]
    return stopped


def _own_lanes(context: CampaignContext, arm: Arm) -> bool:
    """A lane of this arm of this campaign that is still alive."""
    return any(r.arm == arm.name for r in own_lanes(context.campaign_dir, context.docker))


def _stopped(campaign: str, leftover: Leftover) -> StoppedLane:
    return StoppedLane(
        campaign=campaign,
        arm=leftover.arm,
        run=leftover.run,
        kind=leftover.kind,
        ident=leftover.ident,
        purpose=leftover.purpose,
    )


def _next_path(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder / handoff_name(len(list(folder.glob(HANDOFF_GLOB))) + 1)
