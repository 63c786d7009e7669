"""Ledger at scale: a year of nightly campaigns from 4 hosts in PostgreSQL, read by status.

    make bench NAME=ledger_scale                  # FACEOFF_TEST_PG_URL names the server
    .venv/bin/python -m benchmarks.ledger_scale --nights 365 --hosts 4 --repeat 5

Fills a scratch database of its own on the server (dropped afterwards) through
``open_ledger`` (so at the newest revision) with one campaign per host and night, each
with its cell runs (``--cells`` cells × 2 arms), its restoration and a review, then
times, median of ``--repeat``, what ``faceoff status`` asks of the ledger (this host's
campaigns, and ``--all-hosts``: every campaign's status facts) and two reads across
nights (one cell's runs on one arm by start; the campaigns of the last 30 nights). The
peer, in the same run on the same rows: the same reads once revision 0002's indexes are
dropped. Target: each read under 1 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, insert, text
from sqlmodel import Session, col, select

from flows.cli.status_report import campaign_statuses
from ledger.campaigns import list_campaigns
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.tables import CampaignRow, CellRunRow, RestorationRow, ReviewRow
from tests.scratch_db import scratch_database

FIRST_NIGHT = datetime(2025, 12, 1, 0, 30, tzinfo=UTC)
ARMS = ("exl3-r11", "nvfp4-r2")
REVISION_0002_INDEXES = (
    "ix_campaign_created_at", "ix_campaign_host_created_at", "ix_cell_run_cell_id_arm",
    "ix_cell_run_arm", "ix_cell_run_started_at",
)  # fmt: skip
TARGET_S = 1.0
CHUNK = 5000


def host_name(index: int) -> str:
    return f"gpu-{chr(ord('a') + index)}"


def fill(engine: Engine, *, nights: int, hosts: int, cells: int) -> tuple[int, int]:
    """A year of nights: returns (campaigns, cell runs) written."""
    campaigns: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    others: dict[Any, list[dict[str, Any]]] = {RestorationRow: [], ReviewRow: []}
    for night in range(nights):
        for host in range(hosts):
            ident = len(campaigns) + 1
            opened = FIRST_NIGHT + timedelta(days=night, minutes=host)
            closed = opened + timedelta(hours=4)
            name = f"glm53-{host_name(host)}-{opened:%Y%m%d}"
            campaigns.append({
                "id": ident, "name": name, "matrix_id": f"{ident:064x}", "status": "complete",
                "evidence_dir": f"/var/lib/faceoff/runs/{name}", "created_at": opened,
                "updated_at": closed, "closed_at": closed, "accepted": 2 * cells - 1,
                "failed": 1, "blocked": 0, "pending": 0, "host": host_name(host),
            })  # fmt: skip
            for cell in range(cells):
                for turn, arm in enumerate(ARMS):
                    began = opened + timedelta(minutes=5 * (2 * cell + turn))
                    runs.append({
                        "campaign_id": ident, "cell_id": f"natural-{1024 * (cell + 1)}-c1",
                        "arm": arm, "attempt": 1, "disposition": "accepted",
                        "interrupted": False, "started_at": began,
                        "ended_at": began + timedelta(minutes=4),
                        "artifacts_dir": f"cells/{cell}/{arm}/attempt-1",
                        "verdict_sha256": f"{ident:032x}{cell:032x}",
                    })  # fmt: skip
            others[RestorationRow].append({
                "campaign_id": ident, "incumbent_arm": ARMS[0], "state": "restored",
                "required_at": opened, "completed_at": closed, "attempts": 1,
            })  # fmt: skip
            others[ReviewRow].append({
                "campaign_id": ident, "reviewer": "mira", "decision": "no_promotion",
                "note": "nightly", "created_at": closed + timedelta(hours=5),
                "record_sha256": f"{ident:064x}",
            })  # fmt: skip
    with engine.begin() as conn:
        for model, rows in ((CampaignRow, campaigns), (CellRunRow, runs), *others.items()):
            for start in range(0, len(rows), CHUNK):
                conn.execute(insert(model.__table__), rows[start : start + CHUNK])  # type: ignore[attr-defined]
        conn.execute(text("ANALYZE"))
    return len(campaigns), len(runs)


def status_facts(engine: Engine, host: str | None) -> int:
    """What `faceoff status` (``host``: this host's) reads: every campaign's facts."""
    now = datetime.now(UTC)
    with session_scope(engine) as session:
        rows = list_campaigns(session, host=host)
        here = host_name(0)
        return len(campaign_statuses(session, rows, running=(), now=lambda: now, here=here))


def one_cell(engine: Engine) -> int:
    query = (
        select(CellRunRow)
        .where(CellRunRow.cell_id == "natural-1024-c1", CellRunRow.arm == ARMS[1])
        .order_by(col(CellRunRow.started_at))
    )
    with Session(engine) as session:
        return len(session.exec(query).all())


def last_nights(engine: Engine, since: datetime) -> int:
    query = (
        select(CampaignRow)
        .where(col(CampaignRow.created_at) >= since)
        .order_by(col(CampaignRow.created_at))
    )
    with Session(engine) as session:
        return len(session.exec(query).all())


def median_s(read: Callable[[], int], repeat: int) -> tuple[float, int]:
    times, found = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        found = read()
        times.append(time.perf_counter() - start)
    return statistics.median(times), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("FACEOFF_TEST_PG_URL"))
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--cells", type=int, default=21)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not args.pg:
        parser.error("name the PostgreSQL server: --pg URL or FACEOFF_TEST_PG_URL")
    with scratch_database(args.pg, "faceoff_bench") as url:
        engine = open_ledger(resolve_url(url, Path()))
        start = time.perf_counter()
        campaigns, runs = fill(engine, nights=args.nights, hosts=args.hosts, cells=args.cells)
        print(f"{campaigns} campaigns, {runs} cell runs written in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        since = FIRST_NIGHT + timedelta(days=args.nights - 30)
        reads: dict[str, Callable[[], int]] = {
            "status (this host)": lambda: status_facts(engine, host_name(0)),
            "status --all-hosts": lambda: status_facts(engine, None),
            "one cell, one arm": lambda: one_cell(engine),
            "last 30 nights": lambda: last_nights(engine, since),
        }
        indexed = {name: median_s(read, args.repeat) for name, read in reads.items()}
        with engine.begin() as conn:
            for index in REVISION_0002_INDEXES:
                conn.execute(text(f"DROP INDEX {index}"))
            conn.execute(text("ANALYZE"))
        bare = {name: median_s(read, args.repeat) for name, read in reads.items()}
        engine.dispose()
    print(f"{'read':<20} {'rows':>6} {'median s':>9} {'no 0002 idx':>12} {'× faster':>9} "
          f"{'< 1 s':>6}")  # fmt: skip
    for name, (seconds, rows) in indexed.items():
        peer = bare[name][0]
        ok = "yes" if seconds < TARGET_S else "NO"
        print(f"{name:<20} {rows:>6} {seconds:>9.3f} {peer:>12.3f} {peer / seconds:>9.1f} {ok:>6}")


if __name__ == "__main__":
    main()
