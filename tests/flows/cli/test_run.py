"""How a `faceoff run` that stopped on an error says so: an incumbent the run left down is
exit 4, whatever stopped it; one that is serving (or was never touched) is exit 2.

Was: a run that stopped on an error after the take-over, its restoration failed too,
exited 2 like an error that touched nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from flows.cli.run import _run_stopped
from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.restoration import begin_attempt, finish_attempt, require_restoration


def now() -> datetime:
    return datetime.now(UTC)


def ledger_with(workdir: Path, *, restored: bool | None) -> None:
    """A campaign ``c`` whose restoration is required and then failed or done (None: the
    incumbent never touched)."""
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        row, _ = open_campaign(session, name="c", matrix_id="f" * 64,
                               evidence_dir=workdir / "c", now=now)  # fmt: skip
        if restored is None:
            return
        restoration, _ = require_restoration(session, row, incumbent_arm="inc",
                                             image_digest=None, now=now)  # fmt: skip
        begin_attempt(session, restoration)
        reason = None if restored else "port 8000 taken"
        finish_attempt(session, restoration, restored=restored, now=now, receipt_path=None,
                       receipt_sha256=None, reason=reason)  # fmt: skip


def stopped(workdir: Path) -> int:
    with pytest.raises(SystemExit) as ended, _run_stopped(workdir, None, [], "c"):
        raise FaceoffError("the candidate's lane could not start")
    return int(ended.value.code or 0)


def test_an_error_that_left_the_incumbent_down_is_exit_4_and_says_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger_with(tmp_path, restored=False)
    assert stopped(tmp_path) == Exit.NOT_RESTORED
    said = capsys.readouterr().err
    assert said.startswith("error: the candidate's lane could not start; the incumbent is not")
    assert "(failed: port 8000 taken)" in said and "`faceoff restore c`" in said


@pytest.mark.parametrize("restored", [True, None])
def test_an_error_with_the_incumbent_serving_or_untouched_stays_exit_2(
    tmp_path: Path, restored: bool | None
) -> None:
    ledger_with(tmp_path, restored=restored)
    with pytest.raises(FaceoffError), _run_stopped(tmp_path, None, [], "c"):
        raise FaceoffError("the candidate's lane could not start")
