"""Opening the ledger: SQLite file by default, any SQLAlchemy URL when given."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, create_engine, event

from ledger.migrate import migrate

if TYPE_CHECKING:
    from sqlmodel import Session

DB_URL_ENV = "FACEOFF_DB_URL"


def resolve_url(db: str | None, workdir: Path) -> str:
    """--db beats FACEOFF_DB_URL beats ``sqlite:///<workdir>/faceoff.db``."""
    url = db or os.environ.get(DB_URL_ENV)
    if not url:
        return f"sqlite:///{(Path(workdir) / 'faceoff.db').resolve()}"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def open_ledger(url: str) -> Engine:
    """Create the engine and bring the ledger to this faceoff's revision (``ledger.migrate``):
    a new ledger is created, an older one upgraded, a newer one refused."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, pool_pre_ping=True)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        migrate(engine, where=_redact(url))
    except BaseException:
        engine.dispose()
        raise
    return engine


def utc(moment: datetime) -> datetime:
    """A ledger time as an aware UTC time (SQLite gives it back without its zone)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    # WAL lets `faceoff status` read while a campaign writes.
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    # Here, not at the top: a read that needs no ORM (``ledger.history``) loads none of it.
    from sqlmodel import Session  # noqa: PLC0415

    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
