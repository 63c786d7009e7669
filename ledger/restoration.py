"""Restoration rows and lane-run rows: the ledger's side of bringing the incumbent back.
The same concept at another layer: ``lanes.restoration``.

The restoration row is written before the incumbent is first touched and moves
``required → restoring → restored | failed``. ``faceoff restore`` is keyed on it:
any state but ``restored`` means the incumbent may still be down.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import or_
from sqlmodel import Session, col, select

from faceoff.ports import Clock
from ledger.tables import CampaignRow, LaneRunRow, RestorationRow

REQUIRED = "required"
RESTORING = "restoring"
RESTORED = "restored"
FAILED = "failed"


def find_restoration(session: Session, campaign: CampaignRow) -> RestorationRow | None:
    query = select(RestorationRow).where(RestorationRow.campaign_id == campaign.id)
    return session.exec(query).first()


def restorations_of(session: Session, campaign_ids: Sequence[int]) -> dict[int, RestorationRow]:
    """Campaign id -> its restoration row, for those of the campaigns that have one."""
    query = select(RestorationRow).where(col(RestorationRow.campaign_id).in_(campaign_ids))
    return {row.campaign_id: row for row in session.exec(query)}


def require_restoration(
    session: Session,
    campaign: CampaignRow,
    *,
    incumbent_arm: str,
    image_digest: str | None,
    now: Clock,
) -> tuple[RestorationRow, bool]:
    """Mark the campaign as needing restoration; returns ``(row, newly_required)``.

    An open requirement (required, restoring, failed) is kept as it is: the
    incumbent was touched already. A completed one starts a new cycle.
    """
    row = find_restoration(session, campaign)
    if row is not None and row.state != RESTORED:
        return row, False
    stamp = now()
    if row is None:
        assert campaign.id is not None
        row = RestorationRow(
            campaign_id=campaign.id, incumbent_arm=incumbent_arm, required_at=stamp
        )
    row.incumbent_arm = incumbent_arm
    row.image_digest = image_digest
    row.state = REQUIRED
    row.required_at = stamp
    row.reason = None
    row.completed_at = None
    session.add(row)
    session.flush()
    return row, True


def pending_restorations(session: Session) -> list[tuple[CampaignRow, RestorationRow]]:
    """Campaigns whose incumbent may still be down, oldest first."""
    query = (
        select(CampaignRow, RestorationRow)
        .where(RestorationRow.campaign_id == CampaignRow.id)
        .where(RestorationRow.state != RESTORED)
        .order_by(RestorationRow.required_at)  # type: ignore[arg-type]
    )
    return [(c, r) for c, r in session.exec(query)]


def last_restored(session: Session, host: str) -> CampaignRow | None:
    """The campaign of ``host`` (or of a ledger from before hosts were recorded) whose
    restoration completed last: the incumbent serving there now, since each campaign's
    takeover stopped the one an earlier campaign had restored."""
    query = (
        select(CampaignRow)
        .join(RestorationRow, RestorationRow.campaign_id == CampaignRow.id)  # type: ignore[arg-type]
        .where(RestorationRow.state == RESTORED)
        .where(or_(col(CampaignRow.host) == host, col(CampaignRow.host).is_(None)))
        .order_by(RestorationRow.completed_at.desc())  # type: ignore[union-attr]
    )
    return session.exec(query).first()


def begin_attempt(session: Session, row: RestorationRow) -> int:
    row.state = RESTORING
    row.attempts += 1
    session.add(row)
    session.flush()
    return row.attempts


def finish_attempt(
    session: Session,
    row: RestorationRow,
    *,
    restored: bool,
    reason: str | None,
    receipt_path: str | None,
    receipt_sha256: str | None,
    now: Clock,
) -> None:
    row.state = RESTORED if restored else FAILED
    row.reason = reason
    row.receipt_path = receipt_path
    row.receipt_sha256 = receipt_sha256
    row.completed_at = now() if restored else None
    session.add(row)
    session.flush()


def add_lane_run(session: Session, row: LaneRunRow) -> LaneRunRow:
    session.add(row)
    session.flush()
    return row


def close_lane_runs(
    session: Session,
    campaign: CampaignRow,
    *,
    container_ids: Iterable[str],
    pids: Iterable[int],
    now: Clock,
) -> int:
    """Stamp ``stopped_at`` on open lane runs whose container or pid was removed."""
    ids, pid_set = set(container_ids), set(pids)
    query = select(LaneRunRow).where(LaneRunRow.campaign_id == campaign.id)
    closed = 0
    for run in session.exec(query.where(LaneRunRow.stopped_at == None)):  # noqa: E711
        if run.container_id in ids or run.pid in pid_set:
            run.stopped_at = now()
            session.add(run)
            closed += 1
    session.flush()
    return closed
