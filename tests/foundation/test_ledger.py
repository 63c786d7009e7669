"""The ledger on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from faceoff.errors import FaceoffError
from ledger.campaigns import cell_runs, open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.tables import CellRunRow, RestorationRow


def now() -> datetime:
    return datetime(2026, 10, 17, 13, 3, 57, tzinfo=UTC)


def exercise(url: str, name: str) -> None:
    engine = open_ledger(url)
    with session_scope(engine) as session:
        row, resumed = open_campaign(
            session, name=name, matrix_id="a" * 64, evidence_dir=Path("/tmp/e"), now=now
        )
        assert not resumed and row.id is not None
        session.add(RestorationRow(campaign_id=row.id, incumbent_arm="old", required_at=now()))
        session.add(CellRunRow(campaign_id=row.id, cell_id="natural-1024-c1", arm="old"))
    with session_scope(engine) as session:
        row, resumed = open_campaign(
            session, name=name, matrix_id="a" * 64, evidence_dir=Path("/tmp/e"), now=now
        )
        assert resumed
        assert [r.cell_id for r in cell_runs(session, row)] == ["natural-1024-c1"]
    with session_scope(engine) as session, pytest.raises(FaceoffError, match="matrix"):
        open_campaign(session, name=name, matrix_id="b" * 64, evidence_dir=Path("/e"), now=now)
    engine.dispose()


def test_sqlite_file_ledger(tmp_path: Path) -> None:
    url = resolve_url(None, tmp_path)
    assert url.endswith("/faceoff.db")
    exercise(url, "sqlite-campaign")
    assert (tmp_path / "faceoff.db").stat().st_size > 0


@pytest.mark.postgres
def test_postgresql_ledger(postgres_url: str) -> None:
    url = resolve_url(postgres_url, Path())
    assert url.startswith("postgresql+psycopg://")
    exercise(url, f"pg-{uuid.uuid4().hex[:8]}")
    engine = open_ledger(url)
    with engine.connect() as conn:
        assert str(conn.execute(text("select version()")).scalar()).startswith("PostgreSQL")
    engine.dispose()


def test_newer_ledger_is_refused(tmp_path: Path) -> None:
    url = resolve_url(None, tmp_path)
    engine = open_ledger(url)
    with engine.begin() as conn:
        conn.execute(text("update ledger_meta set value = '99' where key = 'schema_version'"))
    engine.dispose()
    with pytest.raises(FaceoffError, match="Upgrade faceoff"):
        open_ledger(url)
