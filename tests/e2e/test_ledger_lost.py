"""`faceoff run` whose PostgreSQL ledger stops mid-cell: one error line naming the ledger
(its password hidden) and the fix, exit 2, not a traceback's exit 1; what the client
journaled stays on disk, and once the database is back the same run resumes: it restores
the incumbent and runs the interrupted cell again, nothing lost.

The ledger is a PostgreSQL of the test's own (root only; skipped elsewhere), never the
shared one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from faceoff.formats.attempt.verdict import VERDICT_FILE
from flows.campaign.unjournaled import unjournaled
from flows.cli.run import ledger_lost
from tests.e2e.test_ephemeral_server import faceoff, run_env
from tests.e2e.test_interruptions import FIRST, lines, slow_matrix, wait_for
from tests.e2e.throwaway import throwaway_postgres


def test_a_lost_ledger_connection_is_recognised_behind_the_errors_that_wrap_it() -> None:
    lost = OperationalError("SELECT 1", {}, Exception("connection refused\nIs it running?"))
    wrapped = RuntimeError("task failed")
    wrapped.__cause__ = lost
    assert ledger_lost(wrapped) == "connection refused"
    assert ledger_lost(RuntimeError("something else")) is None


@pytest.fixture
def ledger() -> Iterator[tuple[str, list[str]]]:
    if os.geteuid() != 0:
        pytest.skip("a PostgreSQL of the test's own runs as user postgres: needs root")
    with throwaway_postgres() as found:
        yield found


@pytest.mark.prefect
def test_a_ledger_stopped_mid_cell_is_one_error_and_a_resume_completes(
    ledger: tuple[str, list[str]], workdir: Path, tmp_path: Path
) -> None:
    url, pg_ctl = ledger
    planted = url.replace("postgres@", "postgres:planted-pw@")  # trust auth: any password
    path, log = slow_matrix(tmp_path, "e2e-ledger"), tmp_path / "run.log"
    env = run_env(tmp_path / "prefect")
    args = ["run", str(path), "--workdir", str(workdir), "--db", planted]
    try:
        run = faceoff(args, env, log)
        journal = workdir / "e2e-ledger" / FIRST / "attempt-1" / "journal.jsonl"
        wait_for(lambda: len(lines(journal)) >= 2 or run.poll() is not None, "two lines", 300)
        subprocess.run([*pg_ctl, "-m", "immediate", "stop"], check=True, capture_output=True)
        assert run.wait(300) == 2, log.read_text()[-3000:]
        said = log.read_text().strip().splitlines()[-1]
        assert said.startswith("error: postgresql+psycopg://postgres:***@127.0.0.1:"), said
        assert "the ledger stopped answering" in said and "run the same `faceoff run`" in said
        assert "planted-pw" not in log.read_text()  # exit 2: faceoff's error, no crash

        subprocess.run([*pg_ctl, "-w", "start"], check=True, capture_output=True)
        assert faceoff(args, env, log).wait(300) in (0, 3), log.read_text()[-3000:]
        cell = workdir / "e2e-ledger" / FIRST
        planned, missing = unjournaled(cell / "attempt-1")
        assert planned == 6 and (not missing or (cell / "attempt-1" / VERDICT_FILE).exists())
        assert unjournaled(cell / "attempt-2") == (6, [])
    finally:
        faceoff(["teardown", "--workdir", str(workdir)], env, log).wait(120)
