"""The ledger's part of the history: every closed campaign, oldest first, from every host
that shares the ledger. One query, on the campaign table only; the figures come from each
campaign's bundle."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import NamedTuple

from sqlmodel import Session, col, select

from ledger.tables import CampaignRow

CLOSED = ("complete", "closed_partial")


class ClosedCampaign(NamedTuple):
    name: str
    created_at: datetime
    evidence_dir: str


def closed_campaigns(session: Session, since: date | None = None) -> list[ClosedCampaign]:
    """Closed campaigns opened on or after ``since`` (UTC midnight), by opening time; only
    the columns the history reads (a year of nights from several hosts is thousands)."""
    query = select(CampaignRow.name, CampaignRow.created_at, CampaignRow.evidence_dir).where(
        col(CampaignRow.status).in_(CLOSED)
    )
    if since is not None:
        query = query.where(col(CampaignRow.created_at) >= datetime.combine(since, time(), UTC))
    ordered = query.order_by(col(CampaignRow.created_at), col(CampaignRow.name))
    return [ClosedCampaign(*row) for row in session.exec(ordered)]
