"""Bringing a lane up: start, readiness, identity, and ``identity.json`` (its format and
history: ``faceoff.formats.lane``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.lane import (
    IDENTITY_FILE,
    IdentityRecord,
    IdentityVerdict,
    ObservedIdentity,
    Readiness,
    WeightsManifest,
)
from faceoff.result import Maybe
from lanes.bootlog import quantization_values
from lanes.http import Http
from lanes.identity import expected_identity, judge_identity
from lanes.lane import Lane
from lanes.lane_context import LanePurpose, arm_lanes_dir
from lanes.readiness import Waiting, wait_ready
from lanes.weights_manifest import build_manifest


@dataclass(frozen=True)
class BringUp:
    lane: Lane
    identity: IdentityRecord

    @property
    def ok(self) -> bool:
        return self.identity.readiness.ready and self.identity.verdict.ok

    @property
    def reason(self) -> str | None:
        return self.identity.verdict.reason


def bring_up(
    lane: Lane, http: Http, waiting: Waiting, *, baseline: ObservedIdentity | None = None
) -> BringUp:
    """Start the lane and judge it; the lane keeps running whatever the verdict."""
    lane.start()
    readiness = wait_ready(lane, http, waiting)
    return BringUp(lane, check_identity(lane, readiness, waiting.now(), baseline))


def check_identity(
    lane: Lane, readiness: Readiness, now: datetime, baseline: ObservedIdentity | None = None
) -> IdentityRecord:
    manifest = _manifest(lane)
    observed = ObservedIdentity(
        image=lane.running_image(),
        models=readiness.models,
        quantizations=quantization_values(lane.boot_log()),
        weights_sha256=manifest.value.sha256 if manifest.value else None,
        weights_detail=manifest.reason,
    )
    expected = expected_identity(lane.arm, baseline)
    verdict = judge_identity(lane.arm.name, expected, observed)
    if not readiness.ready:
        verdict = IdentityVerdict(
            ok=False, reason=f"lane of arm {lane.arm.name!r} is not ready: {readiness.reason}"
        )
    record = IdentityRecord(
        campaign=lane.ctx.campaign,
        arm=lane.arm.name,
        run=lane.ctx.run,
        checked_at=now,
        readiness=readiness,
        expected=expected,
        observed=observed,
        manifest=manifest.value,
        verdict=verdict,
    )
    record.write(lane.ctx.run_dir / IDENTITY_FILE, replace=True)
    return record


def read_baseline(campaign_dir: Path, arm: str) -> ObservedIdentity | None:
    """What the arm showed at its first accepted identity check of the campaign, if any."""
    prefix = f"{LanePurpose.CAMPAIGN.value}-"
    for path in sorted(arm_lanes_dir(campaign_dir, arm).glob(f"{prefix}*/{IDENTITY_FILE}")):
        record = IdentityRecord.read(path)
        if record.verdict.ok:
            return record.observed
    return None


def _manifest(lane: Lane) -> Maybe[WeightsManifest]:
    directory = lane.arm.weights_manifest
    if directory is None:
        return Maybe.lacking("the arm names no weights_manifest directory")
    try:
        return Maybe.of(build_manifest(lane.arm, directory))
    except FaceoffError as exc:
        return Maybe.lacking(exc.message)
    except OSError as exc:
        return Maybe.lacking(f"{exc.filename}: {exc.strerror}")
