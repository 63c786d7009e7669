"""`faceoff run` whose workdir's disk fills up mid-cell: one error line naming the disk and
the fix (exit 2), not a traceback's exit 1; once space is freed, the same run resumes,
names in attempt 1's verdict the journal lines the disk refused, and runs the cell again.

The workdir is a small tmpfs (root only; skipped elsewhere); the Prefect home lies off it, as an
operator's does, so that the disk is full only once the test fills it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from faceoff.formats.attempt.verdict import VERDICT_FILE, Outcome, Verdict
from faceoff.formats.reasons import Reason
from flows.campaign.unjournaled import unjournaled
from flows.cli.run import disk_full
from tests.e2e.test_ephemeral_server import faceoff, run_env
from tests.e2e.test_interruptions import FIRST, lines, slow_matrix, wait_for


def test_a_full_disk_is_recognised_behind_the_errors_that_wrap_it() -> None:
    wrapped = RuntimeError("task failed")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert disk_full(wrapped)
    assert disk_full(RuntimeError("(sqlite3.OperationalError) database or disk is full"))
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    folder = tmp_path / "runs"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)]
    if subprocess.run(mount, check=False, capture_output=True).returncode != 0:
        pytest.skip("could not mount a tmpfs")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.prefect
def test_a_disk_full_mid_cell_is_one_error_and_a_resume_completes(
    small_disk: Path, tmp_path: Path
) -> None:
    path, log = slow_matrix(tmp_path, "e2e-full"), tmp_path / "run.log"
    env = run_env(tmp_path / ".prefect")
    # The preflight's disk check would refuse this small disk: the test fills it on purpose.
    waive = ["--waive", "disk", "--reason", "the test fills a small disk mid-cell"]
    args = ["run", str(path), "--workdir", str(small_disk), *waive]
    try:
        run = faceoff(args, env, log)
        journal = small_disk / "e2e-full" / FIRST / "attempt-1" / "journal.jsonl"
        wait_for(lambda: len(lines(journal)) >= 2 or run.poll() is not None, "two lines", 300)
        filler = small_disk / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as out:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        assert run.wait(300) == 2, log.read_text()[-3000:]
        said = log.read_text().strip().splitlines()[-1]
        assert said.startswith(f"error: {small_disk}: the disk is full"), said
        assert "run the same `faceoff run` again" in said

        filler.unlink(missing_ok=True)
        assert faceoff(args, env, log).wait(300) == 0, log.read_text()[-3000:]

        # Nothing lost: attempt 1's lines the full disk refused are named by its verdict as
        # not measured, and attempt 2 journals every planned request of the cell again.
        cell = small_disk / "e2e-full" / FIRST
        planned, missing = unjournaled(cell / "attempt-1")
        assert planned == 6
        if missing:
            verdict = Verdict.read(cell / "attempt-1" / VERDICT_FILE)
            assert verdict.reason is Reason.REQUESTS_NOT_TERMINAL or (
                verdict.rule(Reason.REQUESTS_NOT_TERMINAL).outcome is Outcome.FAILED
            )
        assert unjournaled(cell / "attempt-2") == (6, [])
    finally:
        faceoff(["teardown", "--workdir", str(small_disk)], env, log).wait(120)
