"""Bringing a ledger to this faceoff's revision: Alembic migrations, run on every open.

An empty ledger gets every revision; one made before migrations is stamped 0001 (its tables
are that revision's) and upgraded; an older revision is upgraded; one that a newer faceoff
wrote is refused untouched. The check and the upgrade run in one transaction under a lock,
so that hosts and processes opening one ledger at once migrate it once: the others wait,
then find it at head. A ledger is never downgraded. In full: docs/ledger.md, "Migrations".
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

from faceoff.errors import FaceoffError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).with_name("migrations")
FIRST = "0001"  # the schema of every ledger made before migrations
HEAD = "head"
# The newest revision under migrations/versions, named here so that a ledger at it opens
# without loading Alembic (a fifth of a second of `faceoff status`); a test holds it to
# Alembic's own head.
HEAD_REVISION = "0003"
LEDGER_SCHEMA_VERSION = 1  # the ledger's format (its history: ledger/tables.py)
# Any constant does: PostgreSQL scopes advisory locks to the database.
_LOCK_KEY = 0x66616365
# Alembic's ``context`` and ``op`` are module-wide: one migration at a time in a process.
_IN_PROCESS = threading.Lock()


@cache
def revisions() -> ScriptDirectory:
    from alembic.script import ScriptDirectory  # noqa: PLC0415  (see HEAD_REVISION)

    return ScriptDirectory(str(MIGRATIONS))


def head_revision() -> str:
    head = revisions().get_current_head()
    assert head is not None, f"no revisions under {MIGRATIONS}"
    return head


def migrate(engine: Engine, *, where: str, target: str = HEAD) -> None:
    """Upgrade the ledger to ``target`` (its newest revision unless a test names another)."""
    if target == HEAD and _at_head(engine, where):
        return
    from alembic import command  # noqa: PLC0415  (see HEAD_REVISION)
    from alembic.runtime.migration import MigrationContext  # noqa: PLC0415

    with _IN_PROCESS, engine.connect() as conn:
        _lock(conn)
        current = MigrationContext.configure(conn).get_current_revision()
        _refuse_unknown(current, where)
        _refuse_newer_format(conn, where)
        config = _config(conn)
        if current is None and inspect(conn).has_table("ledger_meta"):
            command.stamp(config, FIRST)  # made before migrations: kept, not created again
        command.upgrade(config, target)
        conn.commit()


def _at_head(engine: Engine, where: str) -> bool:
    """Most opens find the ledger at the newest revision: they take no lock (`faceoff status`
    does not wait for a running campaign's writes) and load no Alembic. Any other ledger
    (none yet, older, newer) takes the locked path, which refuses a newer one."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return False
        stored = list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        if stored != [HEAD_REVISION]:
            return False
        _refuse_newer_format(conn, where)
        return True


def _lock(conn: Connection) -> None:
    """Hold the ledger's migration lock until the transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    elif conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _refuse_unknown(current: str | None, where: str) -> None:
    script = revisions()
    known = {rev.revision for rev in script.walk_revisions()}
    if current is not None and current not in known:
        raise FaceoffError(
            f"ledger revision {current} is newer than this faceoff "
            f"(which knows revisions up to {script.get_current_head()})",
            where=where,
            fix="upgrade faceoff",
        )


def _refuse_newer_format(conn: Connection, where: str) -> None:
    if not inspect(conn).has_table("ledger_meta"):
        return
    query = text("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
    stored = conn.execute(query).scalar()
    if stored is not None and int(stored) > LEDGER_SCHEMA_VERSION:
        raise FaceoffError(
            f"ledger format {stored} is newer than this faceoff ({LEDGER_SCHEMA_VERSION})",
            where=where,
            fix="upgrade faceoff",
        )


def _config(conn: Connection) -> Config:
    """Alembic's configuration, in code: the shipped revisions, run on ``conn``."""
    from alembic.config import Config  # noqa: PLC0415  (see HEAD_REVISION)

    config = Config(attributes={"connection": conn})
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("path_separator", "os")
    return config


def stored_revision(conn: Connection) -> str | None:
    """The revision a ledger is at (None: no ``alembic_version``), read without changing it."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def known_revision(revision: str) -> bool:
    """Whether this faceoff ships ``revision`` (an unknown one was written by a newer one)."""
    return revision in {rev.revision for rev in revisions().walk_revisions()}
