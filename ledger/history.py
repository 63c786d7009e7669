"""The ledger's part of the history: every closed campaign, oldest first, from every host
that shares the ledger. One query, on the campaign table only; the figures come from each
campaign's bundle. A Core query on the three columns it reads, not the ORM's
``CampaignRow``: ``faceoff history`` then loads neither the ORM nor sqlmodel, about a
fifth of a second of its start on a 2-core host.
The same concept at another layer: ``flows.cli.history``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import NamedTuple

from sqlalchemy import Connection, DateTime, String, column, select, table

CLOSED = ("complete", "closed_partial")
CAMPAIGN = table(  # ledger.tables.CampaignRow's table, the columns read here
    "campaign",
    column("name", String),
    column("status", String),
    column("created_at", DateTime),
    column("evidence_dir", String),
)


class ClosedCampaign(NamedTuple):
    name: str
    created_at: datetime
    evidence_dir: str


def closed_campaigns(conn: Connection, since: date | None = None) -> list[ClosedCampaign]:
    """Closed campaigns opened on or after ``since`` (UTC midnight), by opening time; only
    the columns the history reads (a year of nights from several hosts is thousands)."""
    c = CAMPAIGN.c
    query = select(c.name, c.created_at, c.evidence_dir).where(c.status.in_(CLOSED))
    if since is not None:
        query = query.where(c.created_at >= datetime.combine(since, time(), UTC))
    ordered = query.order_by(c.created_at, c.name)
    return [ClosedCampaign(*row) for row in conn.execute(ordered)]
