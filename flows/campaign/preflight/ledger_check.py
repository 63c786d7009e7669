"""The ledger: it answers, it is at this faceoff's revision (an older one is upgraded when
the run opens it, a newer one refused), a successor's source is closed there with its
bundle sealed and intact (hashed, as the run does before it starts), and the
campaign, if it knows it, was opened with this matrix. Read
only: nothing is created or migrated here. Its earlier nights give the time estimate, and
its closed campaigns' bundles the variances the power check plans with."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from faceoff.credentials import NOBODY, Credentials
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import fail, ok
from ledger.campaigns import find_campaign, refuse_changed_matrix
from ledger.durations import cell_durations
from ledger.history import closed_campaigns
from ledger.migrate import HEAD_REVISION, known_revision, stored_revision

CONNECT_TIMEOUT_S = 10
_SOURCE_FIX = "run from the workdir (or with the --db) of the source campaign, or drop successor_of"


@dataclass(frozen=True)
class LedgerSeen:
    check: CheckResult
    durations: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    closed: list[tuple[Path, date]] = field(default_factory=list)  # bundle, opening date


def ledger_check(url: str, frozen: FrozenMatrix, credentials: Credentials = NOBODY) -> LedgerSeen:
    """``credentials``: the operator's, with which a successor's source bundle is verified
    as the run verifies it."""
    shown = make_url(url).render_as_string(hide_password=True)
    sqlite_file = _sqlite_file(url)
    if sqlite_file is not None and not sqlite_file.exists():
        source = frozen.matrix.campaign.successor_of
        if source is not None:
            return LedgerSeen(fail("ledger", shown, f"no ledger yet, so no campaign {source!r} "
                                   "for successor_of to reuse", _SOURCE_FIX))  # fmt: skip
        return LedgerSeen(ok("ledger", shown, "no ledger yet: the run creates it"))
    try:
        with _connected(url) as (engine, conn):
            return _judged(shown, engine, conn, frozen, credentials)
    except SQLAlchemyError as exc:
        first = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return LedgerSeen(
            fail(
                "ledger",
                shown,
                f"does not answer: {first}",
                "start the database, or correct --db / FACEOFF_DB_URL",
            )
        )


def _judged(
    shown: str, engine: Engine, conn: Connection, frozen: FrozenMatrix, credentials: Credentials
) -> LedgerSeen:
    revision = stored_revision(conn)
    if revision is not None and not known_revision(revision):
        return LedgerSeen(
            fail(
                "ledger",
                shown,
                f"is at revision {revision}, newer than this faceoff's "
                f"{HEAD_REVISION}: the run would refuse it",
                "upgrade faceoff on this host",
            )
        )
    if revision != HEAD_REVISION:
        said = f"is at revision {revision or 'none'}; the run upgrades it to {HEAD_REVISION}"
        return LedgerSeen(ok("ledger", shown, said))
    try:
        _source_sealed(engine, frozen, credentials)
        _same_matrix(engine, frozen)
    except FaceoffError as exc:
        return LedgerSeen(fail("ledger", shown, exc.what, exc.fix or ""))
    durations = cell_durations(conn, [c.id for c in frozen.matrix.cells])
    nights = f"; earlier runs of {len(durations)} cell run(s) of this matrix" if durations else ""
    closed = [(Path(r.evidence_dir), r.created_at.date()) for r in closed_campaigns(conn)]
    return LedgerSeen(
        ok("ledger", shown, f"answers at revision {HEAD_REVISION}{nights}"), durations, closed
    )


def _source_sealed(engine: Engine, frozen: FrozenMatrix, credentials: Credentials) -> None:
    if frozen.matrix.campaign.successor_of is None:
        return
    # only a successor loads the succession, and the evidence it reads
    from flows.campaign.succession import check_source  # noqa: PLC0415

    check_source(engine, frozen, credentials)


def _same_matrix(engine: Engine, frozen: FrozenMatrix) -> None:
    with Session(engine) as session:
        row = find_campaign(session, frozen.matrix.campaign.name)
    if row is not None:
        refuse_changed_matrix(row, frozen.matrix_id)


@contextmanager
def _connected(url: str) -> Iterator[tuple[Engine, Connection]]:
    args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.startswith("postgresql") else {}
    engine = create_engine(url, connect_args=args)
    try:
        with engine.connect() as conn:
            yield engine, conn
    finally:
        engine.dispose()


def _sqlite_file(url: str) -> Path | None:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
