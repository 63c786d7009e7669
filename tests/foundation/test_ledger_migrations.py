"""The ledger's Alembic migrations on a real SQLite file and a real PostgreSQL database.

A ledger made by faceoff before migrations is built from its frozen DDL and rows
(tests/data/ledger/), then opened by this faceoff: stamped, upgraded, rows kept, indexes
made. The first revision builds exactly that old schema; the newest builds what the
models declare; a newer ledger is refused; hosts opening one fresh ledger at once migrate
it once.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, inspect, text
from sqlmodel import SQLModel, select

from faceoff.errors import FaceoffError
from ledger.campaigns import cell_runs, list_campaigns, open_campaign, require_campaign
from ledger.cells import request_rows
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.migrate import FIRST, HEAD_REVISION, head_revision, migrate
from ledger.restoration import find_restoration
from ledger.tables import ReviewRow

DATA = Path(__file__).resolve().parents[1] / "data" / "ledger"
NEW_INDEXES = {
    "campaign": {"ix_campaign_created_at", "ix_campaign_host_created_at"},
    "cell_run": {"ix_cell_run_cell_id_arm", "ix_cell_run_arm", "ix_cell_run_started_at"},
}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def new_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """A URL of an empty ledger database on the backend, one per name asked for (on
    PostgreSQL a scratch database, never the shared test one)."""
    if request.param == "sqlite":

        def file(name: str) -> str:
            (tmp_path / name).mkdir(exist_ok=True)
            return resolve_url(None, tmp_path / name)

        return file
    scratch: Callable[[], str] = request.getfixturevalue("scratch_pg")
    made: dict[str, str] = {}

    def database(name: str) -> str:
        if name not in made:
            made[name] = resolve_url(scratch(), Path())
        return made[name]

    return database


def run_script(engine: Engine, path: Path) -> None:
    """The statements of a .sql file (split on ``;`` at line ends), in one transaction."""
    statements = [s.strip() for s in path.read_text().split(";\n")]
    with engine.begin() as conn:
        cursor = conn.connection.cursor()  # the driver's own: the text goes as it is, % too
        if conn.dialect.name == "postgresql":
            cursor.execute("SET TIME ZONE 'UTC'")  # the files' times are UTC, as faceoff's are
        for statement in statements:
            body = "\n".join(ln for ln in statement.splitlines() if not ln.startswith("--"))
            if body.strip():
                cursor.execute(body)


def legacy_ledger(url: str, *, rows: bool) -> None:
    """A ledger as faceoff made it before migrations: its frozen DDL, and its rows."""
    engine = create_engine(url)
    run_script(engine, DATA / f"v1_{engine.dialect.name}.sql")
    if rows:
        run_script(engine, DATA / "v1_rows.sql")
    engine.dispose()


def schema(url: str) -> dict[str, Any]:
    """What a database's tables are, as SQLAlchemy reflects them (Alembic's own table aside)."""
    engine = create_engine(url)
    found = inspect(engine)
    shape: dict[str, Any] = {}
    for table in sorted(set(found.get_table_names()) - {"alembic_version"}):
        shape[table] = {
            "columns": [
                (c["name"], repr(c["type"]), c["nullable"]) for c in found.get_columns(table)
            ],
            "primary_key": found.get_pk_constraint(table)["constrained_columns"],
            "foreign_keys": sorted(
                (tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                for f in found.get_foreign_keys(table)
            ),
            "indexes": sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                for i in found.get_indexes(table)
            ),
            "unique": sorted(
                (u["name"], tuple(u["column_names"])) for u in found.get_unique_constraints(table)
            ),
        }
    engine.dispose()
    return shape


def revision_of(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())


def test_a_ledger_from_before_migrations_is_upgraded_with_its_rows(
    new_url: Callable[[str], str],
) -> None:
    url = new_url("old")
    legacy_ledger(url, rows=True)

    engine = open_ledger(url)

    assert revision_of(engine) == [head_revision()]
    indexes = inspect(engine)
    for table, names in NEW_INDEXES.items():
        assert names <= {i["name"] for i in indexes.get_indexes(table)}, table
    with session_scope(engine) as session:
        closed, interrupted = list_campaigns(session)
        assert (closed.name, closed.status, closed.host) == (
            "glm53-exl3-vs-nvfp4-20261016", "complete", None,
        )  # fmt: skip
        assert (closed.accepted, closed.failed) == (3, 1)
        assert closed.closed_at is not None
        assert closed.closed_at.replace(tzinfo=None) == datetime(2026, 10, 16, 4, 11, 40, 500000)
        runs = cell_runs(session, closed)
        assert [(r.arm, r.disposition, r.reason_code) for r in runs] == [
            ("exl3-r11", "accepted", None), ("nvfp4-r2", "failed", "error_rate"),
        ]  # fmt: skip
        assert [(r.phase, r.ttft_s) for r in request_rows(session, runs[0])] == [
            ("warmup", 0.25), ("scored", 0.125),
        ]  # fmt: skip
        assert [r.interrupted for r in cell_runs(session, interrupted)] == [True]
        restored = find_restoration(session, closed)
        assert restored is not None and restored.state == "restored"
        pending = find_restoration(session, interrupted)
        assert pending is not None and pending.state == "required"
        (review,) = session.exec(select(ReviewRow)).all()
        assert (review.decision, review.campaign_id) == ("no_promotion", closed.id)
        # The upgraded ledger takes new campaigns, each with its host; the old ones have none
        # and so show on every host's default view.
        opened, resumed = open_campaign(
            session, name="glm53-exl3-vs-nvfp4-20261018", matrix_id="c" * 64,
            evidence_dir=Path("/var/lib/faceoff/runs/n3"), now=lambda: datetime.now(UTC),
            host="gpu-a",
        )  # fmt: skip
        assert not resumed and opened.id == 3
        assert [c.name for c in list_campaigns(session, host="gpu-b")] == [
            closed.name, interrupted.name,
        ]  # fmt: skip
        assert len(list_campaigns(session, host="gpu-a")) == 3
    with engine.connect() as conn:
        kept = conn.execute(text("SELECT value FROM ledger_meta WHERE key = 'schema_version'"))
        assert kept.scalar() == "1"  # faceoff from before migrations still opens it
    engine.dispose()

    reopened = open_ledger(url)  # at head already: nothing to do, nothing lost
    with session_scope(reopened) as session:
        assert require_campaign(session, "glm53-exl3-vs-nvfp4-20261018").host == "gpu-a"
    assert revision_of(reopened) == [head_revision()]
    reopened.dispose()


def test_the_first_revision_is_the_schema_ledgers_had_before_migrations(
    new_url: Callable[[str], str],
) -> None:
    frozen, migrated = new_url("frozen"), new_url("migrated")
    legacy_ledger(frozen, rows=False)
    engine = create_engine(migrated)
    migrate(engine, where="test", target=FIRST)
    assert revision_of(engine) == [FIRST]
    engine.dispose()

    before, first = schema(frozen), schema(migrated)
    assert set(first) == {
        "campaign", "cell_run", "lane_run", "ledger_meta", "request_record", "restoration",
        "review",
    }  # fmt: skip
    assert first == before


def test_the_migrations_build_what_the_models_declare(new_url: Callable[[str], str]) -> None:
    engine = open_ledger(new_url("fresh"))
    assert revision_of(engine) == [head_revision()]
    with engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert differences == []
    with engine.connect() as conn:
        meta = conn.execute(text("SELECT key, value FROM ledger_meta")).all()
    assert [tuple(m) for m in meta] == [("schema_version", "1")]
    engine.dispose()


def test_a_ledger_of_a_newer_revision_is_refused_untouched(tmp_path: Path) -> None:
    url = resolve_url(None, tmp_path)
    engine = open_ledger(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(FaceoffError) as refused:
        open_ledger(url)
    said = str(refused.value)
    assert f"ledger revision 9999 is newer than this faceoff (which knows revisions up to " \
           f"{head_revision()})" in said  # fmt: skip
    assert said.endswith("Upgrade faceoff.") and str(tmp_path / "faceoff.db") in said
    assert revision_of(create_engine(url)) == ["9999"]


# A host: it loads faceoff, says so, and opens the ledger once the test says go.
HOST = """
import sys, time
from pathlib import Path
from ledger.db import open_ledger
print("ready", flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.005)
open_ledger(sys.argv[1]).dispose()
"""


def test_hosts_opening_one_fresh_ledger_at_once_migrate_it_once(
    new_url: Callable[[str], str], tmp_path: Path
) -> None:
    url, go = new_url("shared"), tmp_path / "go"
    command = [sys.executable, "-c", HOST, url, str(go)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    hosts = [subprocess.Popen(command, **pipes) for _ in range(4)]
    for host in hosts:
        assert host.stdout is not None and host.stdout.readline() == "ready\n"
    go.touch()
    for host in hosts:
        _, said = host.communicate(timeout=300)
        assert host.returncode == 0, said
    engine = create_engine(url)
    assert revision_of(engine) == [head_revision()]
    with engine.connect() as conn:
        meta = conn.execute(text("SELECT count(*) FROM ledger_meta")).scalar()
    assert meta == 1
    engine.dispose()


def test_the_named_head_revision_is_alembics_head() -> None:
    """A ledger at ``HEAD_REVISION`` opens without Alembic: a new revision must move it."""
    assert head_revision() == HEAD_REVISION
