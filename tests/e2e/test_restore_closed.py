"""A closed campaign whose restored incumbent died: bare `faceoff restore` brings it back
with a new receipt and seals the bundle again around it, so the bundle still audits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from faceoff.formats.receipt import verify_receipt
from flows.prefect.flow import campaign
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.foundation.cli import faceoff
from tests.lanes.helpers import gone, wait_for

pytestmark = pytest.mark.prefect


def test_a_closed_campaign_restored_again_is_sealed_again(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    data = matrix("closed-restore", [arm("inc", "incumbent", warmups=0),
                                     arm("cand", "candidate", warmups=0)])  # fmt: skip
    data["cells"] = data["cells"][:1]
    campaign(matrix=str(write_matrix(tmp_path, data)), workdir=str(workdir), return_state=True)
    bundle = workdir / "closed-restore"
    first = verify_receipt(bundle / "receipt.json")
    assert first.pid is not None and (bundle / "SHA256SUMS").is_file()
    os.killpg(first.pid, signal.SIGKILL)
    wait_for(lambda: gone(first.pid or 0), "the restored incumbent to die")

    done = faceoff("restore", "--workdir", str(workdir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "receipt valid, incumbent not answering" in done.stdout, done.stdout
    second = verify_receipt(bundle / "receipt.json")
    assert second.pid is not None and second.pid != first.pid and not gone(second.pid)
    assert (bundle / "receipt.superseded-1.json").is_file()

    sums = subprocess.run(["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=bundle,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert sums.returncode == 0, sums.stdout + sums.stderr
    assert "receipt.superseded-1.json: OK" in sums.stdout
    comparison = json.loads((bundle / "comparison.json").read_text(encoding="utf-8"))
    assert comparison["restoration"]["completed_at"].startswith(
        second.completed_at.strftime("%Y-%m-%dT%H:%M:%S")
    )
    audited = faceoff("audit", str(bundle))
    assert audited.returncode == 0, audited.stdout + audited.stderr
    os.killpg(second.pid, signal.SIGKILL)  # the test's own incumbent, not left serving
