"""Restoration keyed on the ledger: idempotent, resumable, usable without Prefect.
The same concept at another layer: ``flows.cli.restore``.

The campaign flow calls ``require_restoration`` before it first touches the
incumbent (hashing the protected files first), and ``restore_incumbent`` in its
``finally``. ``faceoff restore`` calls the same functions after a crash: the
ledger row says whether the incumbent may still be down, the frozen matrix says
what to bring back. A restored campaign whose incumbent answers is left alone and says
so; one whose receipt is valid but whose incumbent no longer answers is restored again,
with a new receipt (the old one is kept as ``receipt.superseded-N.json``). A closed
campaign's bundle is sealed again around the new receipt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import docker
import docker.errors
from sqlalchemy import Engine
from sqlmodel import Session

from evidence.bundle.write import refresh_views, reopen_bundle
from evidence.folder.layout import FROZEN_FILE, CampaignFolder
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from faceoff.formats.lane import LANE_FILE, LaneRecord
from faceoff.formats.receipt import RECEIPT_FILE, Receipt, verify_receipt
from faceoff.ports import Clock, DockerClient
from flows.campaign.health import probe_incumbent
from flows.campaign.seal_record import keep_current_seal
from lanes.http import UrllibHttp
from lanes.restoration import RestorationAttempt, RestoreTools, bring_back, snapshot_before
from ledger.campaigns import CLOSED, require_campaign
from ledger.db import session_scope
from ledger.hosts import this_host
from ledger.restoration import (
    RESTORED,
    add_lane_run,
    begin_attempt,
    close_lane_runs,
    find_restoration,
    finish_attempt,
    last_restored,
    pending_restorations,
)
from ledger.restoration import require_restoration as require_row
from ledger.tables import CampaignRow, LaneRunRow, RestorationRow

State = Literal["restored", "restored_with_changes", "failed", "already_restored", "not_required"]


@dataclass(frozen=True)
class RestoreOutcome:
    campaign: str
    state: State
    changed: bool  # whether this call started, stopped or wrote anything
    message: str
    receipt: Receipt | None = None
    receipt_path: Path | None = None
    details: list[str] = field(default_factory=list)
    refused: str | None = None  # why the bundle was not sealed again (its seal does not verify)

    @property
    def ok(self) -> bool:
        return self.state != "failed"


def restore_tools(environ: Mapping[str, str]) -> RestoreTools:
    """The real clocks, HTTP and Docker daemon, for the CLI and the campaign flow."""
    return RestoreTools(
        environ=dict(environ),
        now=lambda: datetime.now(UTC),
        http=UrllibHttp(),
        docker=docker_client,
    )


def docker_client() -> DockerClient:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        raise FaceoffError(
            f"cannot reach the Docker daemon: {exc}",
            fix="start dockerd, or set DOCKER_HOST to the daemon that runs the lanes",
        ) from exc
    return client


def require_restoration(
    engine: Engine, *, campaign: str, frozen: FrozenMatrix, campaign_dir: Path, now: Clock
) -> RestorationRow:
    """Before the incumbent is first touched: hash the protected files, then write the row.

    Idempotent: while a requirement is open, neither the row nor the hashes change.
    """
    with session_scope(engine) as session:
        row = require_campaign(session, campaign)
        existing = find_restoration(session, row)
        if existing is None or existing.state == RESTORED:
            snapshot_before(frozen, campaign_dir, now())
        incumbent = frozen.matrix.incumbent
        restoration, _ = require_row(
            session, row, incumbent_arm=incumbent.name, image_digest=incumbent.image, now=now
        )
        return restoration


def restore_incumbent(
    engine: Engine, campaign: str, tools: RestoreTools, *, reseal: bool = True
) -> RestoreOutcome:
    """Bring the campaign's incumbent back unless its restoration is complete and the
    incumbent answers: a valid receipt of an incumbent that died since is restored again.

    A closed campaign's bundle is sealed again around the new receipt, unless ``reseal``
    is False: a run resuming the campaign seals it itself when it closes, after what it
    adds, and a seal in between would refuse those additions."""
    with session_scope(engine) as session:
        row = require_campaign(session, campaign)
        restoration = find_restoration(session, row)
        if restoration is None:
            return _not_required(campaign)
        campaign_dir, matrix_id = Path(row.evidence_dir), row.matrix_id
        closed = row.status in CLOSED
        done = restoration.state == RESTORED
        already = _already_restored(campaign, restoration) if done else None
    down = None
    if already is not None:
        health = probe_incumbent(_frozen(campaign_dir, matrix_id).matrix.incumbent, tools.http)
        if health.answering:
            return replace(already, details=[health.line])
        down = f"receipt valid, incumbent not answering ({health.detail}); restoring it again"
    with session_scope(engine) as session:
        attempt = begin_attempt(session, _restoration(session, require_campaign(session, campaign)))
    kept = _reopened(campaign_dir, closed, tools)
    outcome = _bring_back(engine, campaign, campaign_dir=campaign_dir, matrix_id=matrix_id,
                          attempt=attempt, tools=tools, sign=kept is None)  # fmt: skip
    if closed and reseal and kept is None:
        refresh_views(CampaignFolder.at(campaign_dir), tools.credentials)
        keep_current_seal(engine, campaign, CampaignFolder.at(campaign_dir))
    said = [line for line in (down, kept) if line is not None]
    return replace(outcome, details=[*said, *outcome.details], refused=kept)


def _reopened(campaign_dir: Path, closed: bool, tools: RestoreTools) -> str | None:
    """Prove a closed campaign's bundle and lift its seal for the new receipt; restoration
    never waits on the evidence, so a bundle that does not verify is left as it is, never
    signed again, and the reason returned: the receipt then goes unsigned, since it binds
    the bundle's files by their sha256."""
    try:
        reopen_bundle(campaign_dir, tools.credentials, sealed=closed)
    except FaceoffError as exc:
        return (
            f"the bundle is left as it was, not sealed again, and the new receipt not signed: "
            f"{exc.what}"
        )
    return None


def _bring_back(
    engine: Engine,
    campaign: str,
    *,
    campaign_dir: Path,
    matrix_id: str,
    attempt: int,
    tools: RestoreTools,
    sign: bool = True,
) -> RestoreOutcome:
    try:
        frozen = _frozen(campaign_dir, matrix_id)
        result = bring_back(frozen, campaign_dir, attempt=attempt, tools=tools, sign=sign)
    except FaceoffError as exc:
        _record_failure(engine, campaign, exc.message, tools)
        return RestoreOutcome(campaign, "failed", True, f"campaign {campaign}: {exc.message}")
    path = write_receipt(campaign_dir, result.receipt)
    _record_attempt(engine, campaign, result, path, tools)
    return _finished(campaign, result.receipt, path)


def restore_pending(engine: Engine, tools: RestoreTools) -> list[RestoreOutcome]:
    """Restore every campaign whose restoration is still required, oldest first; with none,
    probe the incumbent the last restoration on this host brought back, and restore it again
    if it no longer answers (bare ``faceoff restore``)."""
    with session_scope(engine) as session:
        names = [c.name for c, _ in pending_restorations(session)]
        here = this_host(tools.environ)
        if not names and (last := last_restored(session, here)) is not None:
            names = [last.name]
    return [restore_incumbent(engine, name, tools) for name in names]


def write_receipt(campaign_dir: Path, receipt: Receipt) -> Path:
    """Write ``receipt.json``; a receipt of an earlier failed attempt is kept aside."""
    path = Path(campaign_dir) / RECEIPT_FILE
    if path.exists():
        kept = len(list(Path(campaign_dir).glob("receipt.superseded-*.json"))) + 1
        path.rename(path.with_name(f"receipt.superseded-{kept}.json"))
    return receipt.write(path)


def _frozen(campaign_dir: Path, matrix_id: str) -> FrozenMatrix:
    frozen = read_frozen(campaign_dir / FROZEN_FILE)
    if frozen.matrix_id != matrix_id:
        raise FaceoffError(
            f"the frozen matrix is {frozen.matrix_id[:12]}, "
            f"but the ledger recorded {matrix_id[:12]} for this campaign",
            where=str(campaign_dir / FROZEN_FILE),
            fix="restore the campaign's own matrix.frozen.json from its bundle",
        )
    return frozen


def _record_attempt(
    engine: Engine, campaign: str, result: RestorationAttempt, path: Path, tools: RestoreTools
) -> None:
    receipt = result.receipt
    with session_scope(engine) as session:
        row = require_campaign(session, campaign)
        restoration = _restoration(session, row)
        finish_attempt(
            session,
            restoration,
            restored=receipt.outcome != "failed",
            reason="; ".join(receipt.problems) or None,
            receipt_path=str(path),
            receipt_sha256=receipt.receipt_sha256,
            now=tools.now,
        )
        containers = [x.ident for x in result.removed if x.kind == "container"]
        pids = [int(x.ident) for x in result.removed if x.kind == "process"]
        close_lane_runs(session, row, container_ids=containers, pids=pids, now=tools.now)
        if result.lane is not None:
            add_lane_run(session, _lane_run(row, result.lane, receipt, path.parent))


def _record_failure(engine: Engine, campaign: str, reason: str, tools: RestoreTools) -> None:
    with session_scope(engine) as session:
        restoration = _restoration(session, require_campaign(session, campaign))
        finish_attempt(
            session,
            restoration,
            restored=False,
            reason=reason,
            receipt_path=None,
            receipt_sha256=None,
            now=tools.now,
        )


def _restoration(session: Session, row: CampaignRow) -> RestorationRow:
    restoration = find_restoration(session, row)
    assert restoration is not None  # it was found before the attempt began
    return restoration


def _lane_run(
    row: CampaignRow, lane: LaneRecord, receipt: Receipt, campaign_dir: Path
) -> LaneRunRow:
    assert row.id is not None
    return lane_run_row(
        row.id,
        lane,
        identity_ok=receipt.identity_ok,
        identity_reason=receipt.identity_reason,
        record_path=campaign_dir / receipt.lane_run / LANE_FILE,
    )


def lane_run_row(
    campaign_id: int,
    lane: LaneRecord,
    *,
    identity_ok: bool | None,
    identity_reason: str | None,
    record_path: Path,
) -> LaneRunRow:
    """The ledger's index row of one lane run, from its lane.json record."""
    return LaneRunRow(
        campaign_id=campaign_id,
        arm=lane.arm,
        purpose=lane.purpose,
        lane_kind=lane.lane_kind.value,
        image_digest=lane.running_image or lane.image,
        container_id=lane.container_id,
        pid=lane.pid,
        started_at=lane.started_at or lane.created_at,
        identity_ok=identity_ok,
        identity_reason=identity_reason,
        record_path=str(record_path),
    )


def _not_required(campaign: str) -> RestoreOutcome:
    message = (
        f"campaign {campaign}: no restoration was ever required "
        "(the campaign did not touch the incumbent); nothing changed"
    )
    return RestoreOutcome(campaign, "not_required", False, message)


def _already_restored(campaign: str, restoration: RestorationRow) -> RestoreOutcome:
    if not restoration.receipt_path or not Path(restoration.receipt_path).is_file():
        raise FaceoffError(
            f"the ledger says campaign {campaign} was restored, but its receipt "
            f"{restoration.receipt_path or '(none recorded)'} is not there",
            fix="restore receipt.json from the evidence bundle before trusting this restoration",
        )
    path = Path(restoration.receipt_path)
    receipt = verify_receipt(path)
    if receipt.receipt_sha256 != restoration.receipt_sha256:
        raise FaceoffError(
            f"receipt sha256 {receipt.receipt_sha256[:12]} differs from the ledger's "
            f"{(restoration.receipt_sha256 or '')[:12]}",
            where=str(path),
            fix="the receipt was replaced after restoration; restore it from the evidence bundle",
        )
    when = f"{restoration.completed_at:%Y-%m-%dT%H:%M:%SZ}" if restoration.completed_at else "?"
    message = (
        f"campaign {campaign}: already restored at {when} "
        f"(receipt {receipt.receipt_sha256[:12]}); nothing changed"
    )
    return RestoreOutcome(campaign, "already_restored", False, message, receipt, path)


def _finished(campaign: str, receipt: Receipt, path: Path) -> RestoreOutcome:
    verb = {
        "restored": "incumbent restored",
        "restored_with_changes": "incumbent restored, but protected files changed",
        "failed": "restoration failed",
    }[receipt.outcome]
    message = f"campaign {campaign}: {verb}; receipt {path} ({receipt.receipt_sha256[:12]})"
    details = receipt.summary() + [f"problem: {p}" for p in receipt.problems]
    return RestoreOutcome(campaign, receipt.outcome, True, message, receipt, path, details)
