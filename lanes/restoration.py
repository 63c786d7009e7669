"""Bringing the incumbent back, and observing everything the receipt binds.
The same concept at another layer: ``ledger.restoration``.

One attempt: remove every lane the campaign left (candidates and earlier
attempts), prove each candidate absent, start the incumbent by its exact recipe
from the frozen matrix, wait for identity readiness, smoke and JSON smoke it,
readmit it to the router only then, smoke through the router with its token,
and hash the protected files again. An arm that declares its JSON smoke off gets
none, direct or routed, and the receipt says why instead. The ledger side lives
in ``flows.campaign.restore``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path

from faceoff.credentials import Credentials
from faceoff.credentials import credentials as operator_credentials
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.lane import LANES_DIR, LaneRecord
from faceoff.formats.protected import FileHash, ProtectedSnapshot, compare, snapshot
from faceoff.formats.receipt import (
    CandidateAbsence,
    ProbeKind,
    ProbeSummary,
    Receipt,
    RouterOutcome,
    bound_files,
)
from faceoff.ports import Clock, DockerClient, DockerFactory
from faceoff.result import Maybe
from lanes.bringup import BringUp, bring_up, read_baseline
from lanes.factory import open_lane
from lanes.http import Http
from lanes.lane import GRACE_S
from lanes.lane_context import LaneContext, LanePurpose, next_run_dir
from lanes.leftovers import (
    Leftover,
    campaign_containers,
    clear_campaign_lanes,
    live_process_records,
    port_holder,
)
from lanes.probes import run_probes
from lanes.readiness import Waiting
from lanes.router import RouterHook
from matrix.arm import Arm, LaneKind

PROTECTED_BEFORE_FILE = "protected.before.json"
LISTENER_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class RestoreTools:
    """What an attempt touches: the operator's environment, clocks, HTTP, Docker."""

    environ: Mapping[str, str]
    now: Clock
    http: Http
    docker: DockerFactory  # called only when an arm is a docker lane
    python: str = sys.executable
    grace_s: float = GRACE_S

    @cached_property
    def credentials(self) -> Credentials:
        """The operator's signing key and trust, read once from the environment."""
        return operator_credentials(self.environ)


@dataclass(frozen=True)
class Scope:
    frozen: FrozenMatrix
    campaign_dir: Path
    client: DockerClient | None  # None when no arm is a docker lane
    tools: RestoreTools

    @property
    def campaign(self) -> str:
        return self.frozen.matrix.campaign.name


@dataclass(frozen=True)
class RestorationAttempt:
    receipt: Receipt
    lane: LaneRecord | None
    removed: list[Leftover]


def docker_for(frozen: FrozenMatrix, tools: RestoreTools) -> DockerClient | None:
    """The Docker client, only when some arm runs in a container; else None."""
    if any(arm.lane is LaneKind.DOCKER for arm in frozen.matrix.arms):
        return tools.docker()
    return None


def snapshot_before(frozen: FrozenMatrix, campaign_dir: Path, now: datetime) -> ProtectedSnapshot:
    """Hash the protected files before the incumbent is touched; kept beside the campaign."""
    before = snapshot(frozen.matrix.protected_files, now)
    before.write(Path(campaign_dir) / PROTECTED_BEFORE_FILE, replace=True)
    return before


def bring_back(
    frozen: FrozenMatrix,
    campaign_dir: Path,
    *,
    attempt: int,
    tools: RestoreTools,
    sign: bool = True,
) -> RestorationAttempt:
    """One restoration attempt; the incumbent lane it starts keeps running afterwards.
    ``sign``: False when the bundle's seal did not verify: the receipt binds its files, and
    signing it would vouch for files no one may have signed."""
    started_at = tools.now()
    scope = Scope(frozen, Path(campaign_dir), docker_for(frozen, tools), tools)
    removed = clear_campaign_lanes(
        scope.campaign_dir, scope.campaign, scope.client, tools.now, tools.grace_s
    )
    absences = [candidate_absence(scope, arm, removed) for arm in frozen.matrix.candidates]
    started = start_incumbent(scope)
    up = started.value
    smoke, json_smoke = direct_probes(scope, up) if up is not None and up.ok else (None, None)
    json_smoke_on = frozen.matrix.incumbent.probes.json_smoke
    probes_ok = _passed(smoke) and (_passed(json_smoke) or not json_smoke_on)
    router = router_outcome(scope, up, probes_ok)
    after = snapshot(frozen.matrix.protected_files, tools.now())
    before = read_before(scope.campaign_dir, after)
    if up is not None:
        up.lane.boot_log()  # the bundle's snapshot of the log, which the receipt binds
    record = up.lane.record if up is not None else None
    identity = up.identity if up is not None else None
    receipt = Receipt(
        campaign=scope.campaign,
        matrix_id=frozen.matrix_id,
        attempt=attempt,
        incumbent_arm=frozen.matrix.incumbent.name,
        lane_kind=frozen.matrix.incumbent.lane,
        lane_run=f"{LANES_DIR}/{frozen.matrix.incumbent.name}/{record.run}" if record else "",
        image=frozen.matrix.incumbent.image,
        running_image=record.running_image if record else None,
        container_id=record.container_id if record else None,
        pid=record.pid if record else None,
        identity_ok=up is not None and up.ok,
        identity_reason=started.reason or (up.reason if up is not None else None),
        identity_ready_at=identity.readiness.ready_at if identity and up and up.ok else None,
        candidates=absences,
        smoke=smoke,
        json_smoke=json_smoke,
        json_smoke_off_reason=frozen.matrix.incumbent.probes.json_smoke_off_reason,
        router=router,
        protected_files=compare(before, after),
        started_at=started_at,
        completed_at=tools.now(),
        bound_files=bound_files(scope.campaign_dir),
    )
    judged = receipt.judged().sealed()
    return RestorationAttempt(judged.signed(tools.credentials) if sign else judged, record, removed)


def read_before(campaign_dir: Path, after: ProtectedSnapshot) -> ProtectedSnapshot:
    """The hashes taken before the campaign; without them no file can be proven unchanged."""
    try:
        return ProtectedSnapshot.read(campaign_dir / PROTECTED_BEFORE_FILE)
    except FaceoffError as exc:
        unknown = [
            FileHash(path=f.path, state="unreadable", detail=f"no hash before: {exc.what}")
            for f in after.files
        ]
        return ProtectedSnapshot(taken_at=after.taken_at, files=unknown)


def candidate_absence(scope: Scope, arm: Arm, removed: list[Leftover]) -> CandidateAbsence:
    """No labelled container, no recorded live process, and nothing answering on its port."""
    remains = [
        f"pid {r.pid}"
        for _, r in live_process_records(scope.campaign_dir, arms=[arm.name], keep_restore=False)
    ]
    if scope.client is not None:
        found = campaign_containers(
            scope.client, scope.campaign, arms=[arm.name], keep_restore=False
        )
        remains += [f"container {c.name}" for c in found]
    url = f"{arm.base_url}/health"
    answer = scope.tools.http.get(url, timeout=LISTENER_TIMEOUT_S)
    if answer.status is not None:
        remains.append(f"{url} answers ({answer.describe()})")
    gone = [f"{x.kind} {x.ident[:12]}" for x in removed if x.arm == arm.name]
    if remains:
        detail = "still present: " + "; ".join(remains)
    else:
        detail = f"no container or process of it remains; nothing answers on {arm.host}:{arm.port}"
    return CandidateAbsence(arm=arm.name, absent=not remains, removed=gone, detail=detail)


def start_incumbent(scope: Scope) -> Maybe[BringUp]:
    """Start the incumbent as a restore lane and judge its identity against the campaign's."""
    arm = scope.frozen.matrix.incumbent
    ctx = LaneContext(
        campaign=scope.campaign,
        matrix_id=scope.frozen.matrix_id,
        purpose=LanePurpose.RESTORE,
        run_dir=next_run_dir(scope.campaign_dir, arm.name, LanePurpose.RESTORE),
        environ=scope.tools.environ,
        now=scope.tools.now,
    )
    held = port_holder(arm.port)
    if held is not None:  # every lane of ours is gone by now (clear_campaign_lanes)
        return Maybe.lacking(
            f"the incumbent's port {arm.port} is held by {held}, which no lane record of this "
            "campaign names; stop it, then run `faceoff restore`"
        )
    try:
        lane = open_lane(arm, ctx, docker_client=scope.client, python=scope.tools.python)
        baseline = read_baseline(scope.campaign_dir, arm.name)
        return Maybe.of(
            bring_up(lane, scope.tools.http, Waiting(now=scope.tools.now), baseline=baseline)
        )
    except FaceoffError as exc:
        return Maybe.lacking(f"the incumbent could not be started: {exc.message}")


def direct_probes(scope: Scope, up: BringUp) -> tuple[ProbeSummary, ProbeSummary | None]:
    """Smoke and JSON smoke straight to the lane, N of N each; no JSON smoke when it is off."""
    arm = up.lane.arm

    def probes(kind: ProbeKind, count: int) -> ProbeSummary:
        return run_probes(
            scope.tools.http,
            kind,
            base_url=up.lane.record.base_url,
            model=arm.served_model,
            count=count,
            settings=arm.probes,
        )

    smoke = probes("smoke", arm.probes.smoke_requests)
    if not arm.probes.json_smoke:
        return smoke, None
    return smoke, probes("json_smoke", arm.probes.json_smoke_requests)


def _passed(summary: ProbeSummary | None) -> bool:
    return summary is not None and summary.ok


def router_outcome(scope: Scope, up: BringUp | None, probes_ok: bool) -> RouterOutcome | None:
    """Readmit only a lane whose identity and direct probes passed; then smoke through it."""
    arm = scope.frozen.matrix.incumbent
    if arm.router is None:
        return None
    if up is None or not up.ok or not probes_ok:
        why = "not attempted: the incumbent did not pass identity, smoke and JSON smoke"
        return RouterOutcome(readmitted_after_identity=False, detail=why)
    try:
        hook = RouterHook(arm, scope.tools.environ, scope.tools.http, scope.tools.now)
    except FaceoffError as exc:
        return RouterOutcome(readmitted_after_identity=False, detail=exc.message)
    readmit = hook.readmit()
    ready_at = up.identity.readiness.ready_at
    after = readmit.ok and ready_at is not None and readmit.at >= ready_at
    if not readmit.ok:
        return RouterOutcome(readmit=readmit, readmitted_after_identity=False)
    return RouterOutcome(
        readmit=readmit,
        readmitted_after_identity=after,
        smoke=hook.smoke("smoke"),
        json_smoke=hook.smoke("json_smoke") if arm.probes.json_smoke else None,
    )
