"""The restoration row's life on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.restoration import (
    add_lane_run,
    begin_attempt,
    close_lane_runs,
    find_restoration,
    finish_attempt,
    pending_restorations,
    require_restoration,
)
from ledger.tables import LaneRunRow

T0 = datetime(2026, 10, 17, 12, 0, tzinfo=UTC)


def exercise(url: str, name: str) -> None:
    engine = open_ledger(url)
    clock = iter(T0 + timedelta(minutes=i) for i in range(100))

    def now() -> datetime:
        return next(clock)

    with session_scope(engine) as session:
        row, _ = open_campaign(session, name=name, matrix_id="a" * 64,
                               evidence_dir=Path("/e"), now=now)  # fmt: skip
        first, new = require_restoration(session, row, incumbent_arm="inc",
                                         image_digest="r@sha256:" + "b" * 64, now=now)  # fmt: skip
        again, again_new = require_restoration(session, row, incumbent_arm="inc",
                                               image_digest=None, now=now)  # fmt: skip
        assert (new, again_new, again.id, again.image_digest) == (
            True,
            False,
            first.id,
            first.image_digest,
        )
        assert row.id is not None
        add_lane_run(session, LaneRunRow(campaign_id=row.id, arm="cand", lane_kind="docker",
                                         container_id="c0ffee", started_at=now()))  # fmt: skip
    with session_scope(engine) as session:
        assert name in [c.name for c, _ in pending_restorations(session)]
        campaign, restoration = next(p for p in pending_restorations(session) if p[0].name == name)
        assert begin_attempt(session, restoration) == 1 and restoration.state == "restoring"
        closed = close_lane_runs(session, campaign, container_ids=["c0ffee"], pids=[], now=now)
        finish_attempt(session, restoration, restored=True, reason=None,
                       receipt_path="/e/r.json", receipt_sha256="c" * 64, now=now)  # fmt: skip
        assert closed == 1
    with session_scope(engine) as session:
        assert name not in [c.name for c, _ in pending_restorations(session)]
        campaign, _ = open_campaign(session, name=name, matrix_id="a" * 64,
                                    evidence_dir=Path("/e"), now=now)  # fmt: skip
        done = find_restoration(session, campaign)
        assert done is not None and (done.state, done.attempts) == ("restored", 1)
        assert done.completed_at is not None and done.receipt_sha256 == "c" * 64
        # a resumed campaign that touches the incumbent again opens a new cycle
        cycle, new_cycle = require_restoration(session, campaign, incumbent_arm="inc",
                                               image_digest=None, now=now)  # fmt: skip
        assert new_cycle and cycle.id == done.id and cycle.state == "required"
        assert cycle.completed_at is None
    engine.dispose()


def test_sqlite_restoration_rows(tmp_path: Path) -> None:
    exercise(resolve_url(None, tmp_path), "sqlite-restoration")


@pytest.mark.postgres
def test_postgresql_restoration_rows(postgres_url: str) -> None:
    exercise(resolve_url(postgres_url, Path()), f"pg-restore-{uuid.uuid4().hex[:8]}")
