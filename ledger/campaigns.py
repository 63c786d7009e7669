"""Campaign rows: opening, resuming, and listing."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, col, or_, select

from faceoff.errors import FaceoffError
from faceoff.ports import Clock
from ledger.tables import CampaignRow, CellRunRow

CLOSED = ("complete", "closed_partial")  # a campaign's statuses once it closed
RUNNING = "running"  # while a run holds it (or held it, until it was killed)
# closed, its bundle being sealed; a run killed meanwhile leaves it so, and the next run
# seals the bundle (nothing sealed it yet, so there is no seal to verify first)
SEALING = "sealing"


def open_campaign(
    session: Session,
    *,
    name: str,
    matrix_id: str,
    evidence_dir: Path,
    now: Clock,
    host: str | None = None,
) -> tuple[CampaignRow, bool]:
    """Create the campaign, opened on ``host``, or return the existing one when its matrix
    id matches (it keeps the host that opened it, where its evidence folder is).

    Returns ``(row, resumed)``. A changed matrix under the same name is refused:
    resuming would mix measurements of two different plans.
    """
    row = find_campaign(session, name)
    if row is not None:
        refuse_changed_matrix(row, matrix_id)
        return row, True
    stamp = now()
    row = CampaignRow(
        name=name,
        matrix_id=matrix_id,
        evidence_dir=str(evidence_dir),
        created_at=stamp,
        updated_at=stamp,
        host=host,
    )
    session.add(row)
    session.flush()
    return row, False


def refuse_changed_matrix(row: CampaignRow, matrix_id: str) -> None:
    """A campaign is resumed only under the matrix it was opened with."""
    if row.matrix_id != matrix_id:
        raise FaceoffError(
            f"campaign {row.name!r} exists with matrix {row.matrix_id[:12]}, "
            f"but this matrix freezes to {matrix_id[:12]}",
            where="campaign.name",
            fix="rename the campaign to start anew, or restore the original matrix to resume",
        )


def find_campaign(session: Session, name: str) -> CampaignRow | None:
    return session.exec(select(CampaignRow).where(CampaignRow.name == name)).first()


def require_campaign(session: Session, name: str) -> CampaignRow:
    row = find_campaign(session, name)
    if row is None:
        known = ", ".join(r.name for r in list_campaigns(session)) or "none"
        raise FaceoffError(
            f"no campaign named {name!r} in the ledger (known: {known})",
            fix="check --db / FACEOFF_DB_URL and the campaign name",
        )
    return row


def record_seal(session: Session, name: str, sha256: str, sequence: int) -> None:
    """The campaign's bundle was sealed again: keep the seal's digest and number, which an
    audit by name holds the bundle to (an older seal put back is a rollback)."""
    row = require_campaign(session, name)
    row.seal_sha256, row.seal_sequence = sha256, sequence
    session.add(row)


def list_campaigns(session: Session, *, host: str | None = None) -> list[CampaignRow]:
    """Every campaign, oldest first; with ``host``, that host's and those opened before hosts
    were recorded (a ledger from then may be this host's own)."""
    query = select(CampaignRow).order_by(col(CampaignRow.created_at), col(CampaignRow.id))
    if host is not None:
        query = query.where(or_(col(CampaignRow.host) == host, col(CampaignRow.host).is_(None)))
    return list(session.exec(query))


def cell_runs(session: Session, campaign: CampaignRow) -> list[CellRunRow]:
    query = (
        select(CellRunRow).where(CellRunRow.campaign_id == campaign.id).order_by(col(CellRunRow.id))
    )
    return list(session.exec(query))
