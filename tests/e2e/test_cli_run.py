"""`faceoff run` refusing what it must refuse, with exit status 2 and one clear paragraph."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.conftest import REPO, faceoff_run
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix


def test_a_bad_matrix_fails_before_prefect_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[campaign]\nname = "x"\nseed = 1\n')
    done = subprocess.run(
        [sys.executable, "-m", "flows", "run", str(bad), "--workdir", str(tmp_path / "runs")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "arms" in done.stderr
    assert not (tmp_path / "runs" / ".prefect").exists()


@pytest.mark.prefect
def test_a_changed_matrix_under_the_same_campaign_name_is_refused(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    path = write_matrix(
        tmp_path, matrix("e2e-changed", [arm("inc", "incumbent"), arm("c", "candidate")])
    )
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        open_campaign(
            session, name="e2e-changed", matrix_id="d" * 64, evidence_dir=workdir / "e2e-changed",
            now=lambda: datetime.now(UTC),
        )  # fmt: skip
    log = tmp_path / "run.log"
    assert faceoff_run(path, workdir, harness_api, log=log).wait(120) == 2
    said = log.read_text()
    assert "error: campaign.name: campaign 'e2e-changed' exists with matrix dddddddddddd" in said
    assert "Rename the campaign to start anew" in said
    assert not (workdir / "e2e-changed" / "lanes").exists()  # nothing was touched
