"""Cell-run attempts and the request index, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger.campaigns import open_campaign
from ledger.cells import (
    add_requests,
    begin_attempt,
    finish_attempt,
    latest_attempts,
    mark_interrupted,
    next_attempt,
    request_rows,
    set_campaign_state,
)
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.tables import CampaignRow, RequestRow


def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        url = resolve_url(None, tmp_path)
    else:
        url = resolve_url(request.getfixturevalue("postgres_url"), tmp_path)
    engine = open_ledger(url)
    yield engine
    engine.dispose()


def opened(engine: Engine) -> CampaignRow:
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session,
            name=f"cells-{uuid.uuid4().hex[:8]}",
            matrix_id="a" * 64,
            evidence_dir=Path("/tmp/x"),
            now=now,
        )
        return row


def begin(engine: Engine, campaign: CampaignRow, cell: str = "c1", arm: str = "inc") -> int:
    with session_scope(engine) as session:
        number = next_attempt(session, campaign, cell, arm)
        row = begin_attempt(
            session, campaign, cell_id=cell, arm=arm, attempt=number, artifacts_dir="x", now=now
        )
        assert row.id is not None
        return row.id


def request(line: int, index: int) -> RequestRow:
    return RequestRow(
        cell_run_id=0, request_index=index, phase="scored", status="ok", journal_line=line
    )


def test_a_killed_attempt_is_marked_interrupted_and_the_rerun_is_attempt_2(engine: Engine) -> None:
    campaign = opened(engine)
    begin(engine, campaign)
    with session_scope(engine) as session:
        (interrupted,) = mark_interrupted(session, campaign, now)
        assert interrupted.interrupted and interrupted.disposition == "pending"
        assert interrupted.ended_at is not None
        assert mark_interrupted(session, campaign, now) == []  # only once
    second = begin(engine, campaign)
    with session_scope(engine) as session:
        latest = latest_attempts(session, campaign)
        assert latest[("c1", "inc")].id == second and latest[("c1", "inc")].attempt == 2
        finish_attempt(
            session,
            latest[("c1", "inc")],
            disposition="accepted",
            reason_code="accepted",
            reason="fine",
            verdict_sha256="b" * 64,
            now=now,
        )
    with session_scope(engine) as session:
        assert latest_attempts(session, campaign)[("c1", "inc")].disposition == "accepted"


def test_a_finished_attempt_needs_a_terminal_disposition(engine: Engine) -> None:
    campaign = opened(engine)
    begin(engine, campaign)
    with session_scope(engine) as session:
        row = latest_attempts(session, campaign)[("c1", "inc")]
        with pytest.raises(ValueError, match="not 'pending'"):
            finish_attempt(
                session, row, disposition="pending", reason_code=None, reason=None,
                verdict_sha256=None, now=now,
            )  # fmt: skip


def test_indexing_a_journal_twice_adds_each_line_once(engine: Engine) -> None:
    campaign = opened(engine)
    begin(engine, campaign)
    with session_scope(engine) as session:
        run = latest_attempts(session, campaign)[("c1", "inc")]
        assert add_requests(session, run, [request(1, 0), request(2, 1)]) == 2
    with session_scope(engine) as session:
        run = latest_attempts(session, campaign)[("c1", "inc")]
        assert add_requests(session, run, [request(1, 0), request(2, 1), request(3, 2)]) == 1
        assert [r.journal_line for r in request_rows(session, run)] == [1, 2, 3]


def test_campaign_state_carries_the_counts_and_the_closing_time(engine: Engine) -> None:
    campaign = opened(engine)
    counts = {"accepted": 3, "failed": 1, "blocked": 0, "pending": 0}
    with session_scope(engine) as session:
        row = set_campaign_state(session, campaign, status="running", counts=counts, now=now)
        assert row.closed_at is None
        row = set_campaign_state(session, row, status="closed_partial", counts=counts, now=now)
        assert (row.accepted, row.failed, row.closed_at is not None) == (3, 1, True)
