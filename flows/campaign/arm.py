"""An arm's lane during a campaign: bring it up, warm it up, take it down.
The same concept at another layer: ``matrix.arm``.

Each start is a new lane run (``lanes/<arm>/campaign-<NNN>/``) and a ``lane_run`` ledger
row. A lane that does not pass readiness or identity stays recorded as such; its cells are
then blocked by the guard, never run. A port that already answers before the lane starts
cannot be ours: the lane is not started. ``lane_death`` is asked before each cell, after
the warmups and after each cell; its first observation is what ``lane.json`` keeps as the
lane's exit. An errored warmup means the lane cannot serve the cells. How a death is seen:
docs/flows.md, "Resume and interruptions".
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import JOURNAL_NAME, RequestOutcome
from faceoff.formats.attempt.request_plan import PLAN_NAME
from faceoff.formats.lane import IDENTITY_FILE, LANE_FILE, LaneExit
from faceoff.formats.reasons import Disposition, Reason
from flows.campaign.client import ClientExit, run_client
from flows.campaign.context import CampaignContext
from flows.campaign.gpu_posture import record_lane_gpus
from flows.campaign.planning import PlanTarget, plan_warmups
from flows.campaign.restore import lane_run_row
from guards.dispositions import Disposed
from guards.validity import ERROR_STATUSES
from lanes.bringup import bring_up, read_baseline
from lanes.factory import open_lane
from lanes.http import HttpReply
from lanes.lane import Lane
from lanes.lane_context import LaneContext, LanePurpose, next_run_dir
from lanes.readiness import Waiting
from lanes.restoration import RestoreTools
from ledger.campaigns import require_campaign
from ledger.db import session_scope
from ledger.restoration import add_lane_run, close_lane_runs
from matrix.arm import Arm
from matrix.cell import Cell
from matrix.model import CampaignSpec
from workload.journal import read_journal
from workload.records import WARMUP_DIR

PORT_PROBE_S = 2.0  # a port check: anything listening answers at once
# A liveness check of a lane that served a moment ago: an idle engine answers at once,
# but a loaded host may be slow; a refused connection comes back at once anyway.
LIVENESS_TIMEOUT_S = 30.0
DYING_S = 5.0  # how long a lane whose API went away gets to show its exit status


@dataclass(frozen=True)
class ArmRun:
    """One start of an arm's lane, and whether its cells may run on it."""

    arm: Arm
    lane: Lane | None  # None when the lane was never started
    run_dir: Path
    ready: bool
    identity_ok: bool
    reason: str | None  # why the cells cannot run, when they cannot
    warmups_failed: Disposed | None = None  # its warmups errored: the cells are blocked

    @property
    def usable(self) -> bool:
        return self.lane is not None and self.ready and self.identity_ok

    @property
    def base_url(self) -> str:
        return self.arm.base_url

    @property
    def identity_path(self) -> Path:
        return self.run_dir / IDENTITY_FILE

    def plan_target(self, campaign: CampaignSpec, namespace: str | None = None) -> PlanTarget:
        """Where plans for this lane are built: under the campaign's prompt namespace, or
        one of their own (the arm's warmups)."""
        return PlanTarget(self.arm, self.base_url, campaign.seed, namespace or campaign.namespace)


def start_arm(context: CampaignContext, arm: Arm) -> ArmRun:
    """Start the arm's lane and judge readiness and identity (``identity.json``)."""
    run_dir = next_run_dir(context.campaign_dir, arm.name, LanePurpose.CAMPAIGN)
    busy = port_answers(context, arm)
    if busy is not None:
        return ArmRun(arm, None, run_dir, False, False, busy)
    ctx = LaneContext(
        campaign=context.name,
        matrix_id=context.frozen.matrix_id,
        purpose=LanePurpose.CAMPAIGN,
        run_dir=run_dir,
        environ=context.tools.environ,
        now=context.tools.now,
    )
    lane = open_lane(arm, ctx, docker_client=context.docker, python=context.tools.python)
    baseline = read_baseline(context.campaign_dir, arm.name)
    try:
        up = bring_up(lane, context.tools.http, Waiting(now=context.tools.now), baseline=baseline)
    except FaceoffError as exc:  # pull, create or start refused: the lane never came up
        started = _started_or_none(lane)
        if started is not None:
            _record_lane_run(context, started, ok=False, reason=exc.message)
        return ArmRun(arm, started, run_dir, False, False, exc.message)
    _record_lane_run(context, lane, ok=up.ok, reason=up.reason)
    if up.ok:
        lane.watch()
        record_lane_gpus(run_dir, arm, arm.base_url, lane.target().pid, context.tools.now)
    readiness = up.identity.readiness
    return ArmRun(arm, lane, run_dir, readiness.ready, up.ok, None if up.ok else up.reason)


def probe_port(context: CampaignContext, arm: Arm) -> HttpReply:
    """``GET /health`` on the arm's address; ``status`` is None when nothing answers."""
    return context.tools.http.get(f"{arm.base_url}/health", timeout=PORT_PROBE_S)


def port_answers(context: CampaignContext, arm: Arm) -> str | None:
    """A sentence when something already serves on the arm's port, else None."""
    reply = probe_port(context, arm)
    if reply.status is None:
        return None
    return (
        f"something already answers on {arm.host}:{arm.port} ({reply.describe()}) before arm "
        f"{arm.name!r} was started; it is not this campaign's lane, so the arm was not started"
    )


def lane_death(run: ArmRun, tools: RestoreTools) -> LaneExit | None:
    """How the arm's lane died, as first observed; None while it runs and answers /health.

    A lane whose process runs but whose API no longer answers is dead too (an engine
    whose worker died): the lane is told, so that its stop records this, not the stop.
    """
    if run.lane is None:
        return None
    ended = run.lane.exit_status()
    if ended is not None:
        return ended
    reply = tools.http.get(f"{run.base_url}/health", timeout=LIVENESS_TIMEOUT_S)
    if reply.ok:
        return None
    ended = _ended_within(run.lane, DYING_S)  # a dying process closes its socket first
    if ended is not None:
        return ended
    ended = LaneExit(
        exit_code=None,
        finished_at=tools.now(),
        detail=f"its API stopped answering /health ({reply.describe()}) while its process ran",
    )
    run.lane.note_death(ended)
    return ended


def _ended_within(lane: Lane, seconds: float) -> LaneExit | None:
    deadline = time.monotonic() + seconds
    while (ended := lane.exit_status()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return ended


def judged_warmups(context: CampaignContext, run: ArmRun, client: ClientExit) -> ArmRun:
    """The run, with its cells blocked when its warmups failed or its lane died in them
    (the next cell's death check then starts a new lane)."""
    outcomes = read_journal(run.run_dir / WARMUP_DIR / JOURNAL_NAME).outcomes
    failure = warmup_failure(outcomes, run.arm.warmups, client)
    died = lane_death(run, context.tools)
    if failure is None and died is None:
        return run
    words = [failure or f"every one of the {run.arm.warmups} warmup(s) served"]
    if died is not None:
        words.append(f"the lane had died: {died.detail}")
    sentence = (
        f"arm {run.arm.name}'s warmups failed on lane run {run.run_dir.name}: {'; '.join(words)}"
    )
    return replace(
        run, warmups_failed=Disposed(Disposition.BLOCKED, Reason.WARMUPS_FAILED, sentence)
    )


WARMUP_ERROR_CHARS = 300  # of the first error, in the verdict's sentence and the ticket
CUT = " … (whole error in the lane run's warmup journal)"  # cut between words, and said so


def warmup_failure(
    outcomes: Sequence[RequestOutcome], planned: int, client: ClientExit
) -> str | None:
    """Why the warmups failed (n of N errored, the first error), or None when they served."""
    errored = [o for o in outcomes if o.status in ERROR_STATUSES]
    missing = planned - len(outcomes)
    if not errored and missing <= 0:
        return None
    words = [f"{len(errored)} of {planned} warmup(s) errored"]
    if errored:
        first = errored[0]
        text = textwrap.shorten(first.error or "", WARMUP_ERROR_CHARS, placeholder=CUT)
        words.append(f"first: {first.status.value}" + (f": {text}" if text else ""))
    if missing > 0:
        words.append(f"{missing} never journaled (client exit {client.returncode})")
    return "; ".join(words)


def run_warmups(context: CampaignContext, run: ArmRun, cell: Cell) -> ClientExit | None:
    """The arm's warmups after its start: journaled under the lane run, never scored."""
    if run.arm.warmups == 0:
        return None
    folder = run.run_dir / WARMUP_DIR
    folder.mkdir(parents=True, exist_ok=False)
    spec = context.frozen.matrix.campaign
    own = f"{spec.namespace}:arm-warmup:{run.arm.name}:{run.run_dir.name}"
    plan = plan_warmups(cell, run.plan_target(spec, namespace=own))
    plan.write(folder / PLAN_NAME)
    return run_client(
        folder,
        base_url=run.base_url,
        deadline_s=cell.deadline_s,
        arm=run.arm.name,
        attempt=1,
        python=context.tools.python,
        receive=context.frozen.matrix.campaign.client_receive,
    )


def stop_arm(context: CampaignContext, run: ArmRun) -> LaneExit | None:
    """Stop and remove the lane; its ledger row gets ``stopped_at``."""
    if run.lane is None:
        return None
    ended = run.lane.stop()
    run.lane.remove()
    record = run.lane.record
    with session_scope(context.engine) as session:
        row = require_campaign(session, context.name)
        close_lane_runs(
            session,
            row,
            container_ids=[record.container_id] if record.container_id else [],
            pids=[record.pid] if record.pid and not record.container_id else [],
            now=context.tools.now,
        )
    return ended


def _started_or_none(lane: Lane) -> Lane | None:
    try:
        lane.record  # noqa: B018  (raises when the lane was never created)
    except FaceoffError:
        return None
    return lane


def _record_lane_run(context: CampaignContext, lane: Lane, *, ok: bool, reason: str | None) -> None:
    record = lane.record
    with session_scope(context.engine) as session:
        row = require_campaign(session, context.name)
        assert row.id is not None
        lane_run = lane_run_row(
            row.id,
            record,
            identity_ok=ok,
            identity_reason=reason,
            record_path=lane.ctx.run_dir / LANE_FILE,
        )
        add_lane_run(session, lane_run)
