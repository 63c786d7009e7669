"""How long cell runs took on earlier nights: the time estimate a preflight gives.
The same concept at another layer: ``flows.cli.views.durations``.

One Core query over ``cell_run`` (no ORM): the finished attempts of the named cells, by
cell and arm, whatever campaign ran them; a cell id names the same workload across the
nights of one matrix.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Connection, DateTime, String, column, select, table

FINISHED = ("accepted", "failed")  # a blocked cell run never ran its requests
CELL_RUN = table(  # ledger.tables.CellRunRow's table, the columns read here
    "cell_run",
    column("cell_id", String),
    column("arm", String),
    column("disposition", String),
    column("started_at", DateTime),
    column("ended_at", DateTime),
)


def cell_durations(
    conn: Connection, cell_ids: Collection[str]
) -> dict[tuple[str, str], list[float]]:
    """Seconds each finished attempt of these cells took, by (cell, arm), oldest first."""
    c = CELL_RUN.c
    query = (
        select(c.cell_id, c.arm, c.started_at, c.ended_at)
        .where(c.cell_id.in_(list(cell_ids)), c.disposition.in_(FINISHED))
        .where(c.started_at.is_not(None), c.ended_at.is_not(None))
        .order_by(c.started_at)
    )
    found: dict[tuple[str, str], list[float]] = {}
    for cell_id, arm, started, ended in conn.execute(query):
        found.setdefault((cell_id, arm), []).append(_seconds(started, ended))
    return found


def _seconds(started: datetime, ended: datetime) -> float:
    return max(0.0, (ended - started).total_seconds())
