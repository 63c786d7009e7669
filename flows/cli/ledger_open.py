"""Opening the ledger for a command: the URL checked before anything is created, and an
existing ledger only, so that a typo in --workdir or --db stays visible instead of
becoming a new ledger."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError

from faceoff.errors import FaceoffError
from ledger.db import DB_URL_ENV, open_ledger, resolve_url


def ledger_url(db: str | None, workdir: Path) -> str:
    """The ledger URL, refused here when no ledger could ever open at it."""
    url = resolve_url(db, workdir)
    try:
        create_engine(url).dispose()  # parses the URL and loads its driver; connects nowhere
    except (ArgumentError, ImportError) as exc:
        raise FaceoffError(
            f"not a database URL the ledger can use ({exc})",
            where="--db" if db else DB_URL_ENV,
            fix="pass sqlite:///PATH/faceoff.db or postgresql://USER@HOST:PORT/DB",
        ) from None
    return url


def existing_ledger(db: str | None, workdir: Path) -> Engine | None:
    """The ledger, or None where the workdir has none yet. Commands that read or restore never
    create a workdir or a ledger, so a typo in --workdir stays visible instead of becoming one."""
    url = ledger_url(db, workdir)
    database = make_url(url).database
    if url.startswith("sqlite") and database and database != ":memory:":
        folder = Path(database).parent
        if not folder.is_dir():
            raise FaceoffError(
                "no such folder", where=str(folder), fix="pass the --workdir a campaign ran with"
            )
        if not Path(database).exists():
            return None
    try:
        return open_ledger(url)
    except DatabaseError as exc:  # unreachable server, or a file that is no database
        raise FaceoffError(
            f"cannot open the ledger: {str(exc.orig).splitlines()[0]}",
            where="--db" if db else str(Path(workdir) / "faceoff.db"),
            fix="check that the URL names a faceoff ledger and that its server runs",
        ) from None


def required_ledger(engine: Engine | None, db: str | None, workdir: Path) -> Engine:
    if engine is None:
        raise FaceoffError(
            "no ledger yet, so no campaign",
            where="--db" if db else str(Path(workdir) / "faceoff.db"),
            fix="pass the --workdir (or --db) a campaign ran with",
        )
    return engine
