"""A `faceoff run` killed while it seals its bundle: the ledger says so (`faceoff status`:
sealing interrupted), the next `faceoff run` seals the bundle, and says what it did to the
incumbent: nothing, an earlier run restored it.

Was: the ledger said complete before the bundle was sealed, so `status` showed a complete
campaign over an unsealed bundle; the next run refused it as a stripped seal (or, sealed,
said "the incumbent was never touched" though the earlier run had touched it).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from ledger.campaigns import CLOSED, SEALING, find_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.conftest import faceoff_run
from tests.e2e.matrices import arm, campaign, write_matrix
from tests.foundation.cli import faceoff
from tests.lanes.helpers import wait_for

pytestmark = pytest.mark.prefect


def status_of(workdir: Path, name: str) -> str | None:
    if not (workdir / "faceoff.db").is_file():
        return None
    with session_scope(open_ledger(resolve_url(None, workdir))) as session:
        row = find_campaign(session, name)
        return row.status if row is not None else None


def test_a_kill_while_sealing_is_shown_and_the_next_run_seals_the_bundle(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    data = campaign("e2e-sealing", [arm("inc", "incumbent", warmups=0),
                                   arm("cand", "candidate", warmups=0)])  # fmt: skip
    data["cells"] = data["cells"][:1]
    path = write_matrix(tmp_path, data)
    log = tmp_path / "run.log"
    first = faceoff_run(path, workdir, harness_api, log=log)
    wait_for(lambda: status_of(workdir, "e2e-sealing") == SEALING or first.poll() is not None,
             "the run to start sealing", timeout=600)  # fmt: skip
    first.send_signal(signal.SIGKILL)
    first.wait(60)
    assert first.returncode == -signal.SIGKILL, log.read_text()[-2000:]

    shown = faceoff("status", "--workdir", str(workdir))
    assert "sealing interrupted" in shown.stdout, shown.stdout + shown.stderr

    second = faceoff_run(path, workdir, harness_api, log=log)
    # 3: the shared host may leave a cell blocked (host_stall, a missed /metrics tick)
    assert second.wait(600) in (0, 3), log.read_text()[-3000:]
    assert status_of(workdir, "e2e-sealing") in CLOSED
    assert (workdir / "e2e-sealing" / "SHA256SUMS").is_file()
    said = log.read_text()
    assert "resumed to seal its bundle (a run was killed while sealing it)" in said
    assert "restoration: this run did not touch the incumbent; an earlier run restored it" in said
    audited = faceoff("audit", str(workdir / "e2e-sealing"))
    assert audited.returncode == 0, audited.stdout
