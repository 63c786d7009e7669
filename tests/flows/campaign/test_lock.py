"""What keeps one run safe on its host: the campaign lock, held by one live process."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evidence.folder.layout import RUN_LOCK
from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from flows.campaign.lock import CampaignLock, run_in_progress
from tests.e2e.matrices import arm, campaign, write_matrix
from tests.foundation.cli import faceoff

REPO = Path(__file__).resolve().parents[3]

HOLDER = """
import sys, time
from pathlib import Path
from flows.campaign.lock import CampaignLock, run_in_progress
CampaignLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_a_second_run_of_the_campaign_is_refused_until_the_first_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(FaceoffError, match=f"being run right now \\(pid {holder.pid}\\)"):
            CampaignLock(tmp_path).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    with CampaignLock(tmp_path):  # the kernel released it with the process
        pass


def test_a_run_is_in_progress_only_while_a_live_process_holds_the_lock(tmp_path: Path) -> None:
    assert not run_in_progress(tmp_path)  # never run: nothing created either
    assert not (tmp_path / RUN_LOCK).exists()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert run_in_progress(tmp_path)
        assert run_in_progress(tmp_path)  # the probe took nothing from the holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    assert not run_in_progress(tmp_path)  # killed: the ledger may say running, nothing runs


def test_a_refused_second_run_starts_no_prefect_server_and_writes_nothing(tmp_path: Path) -> None:
    """Was: the lock was taken inside the flow, so a second `faceoff run` of a running
    campaign first started its own Prefect server on the same Prefect home, then printed a
    traceback and left a failed flow run."""
    workdir = tmp_path / "runs"
    path = write_matrix(tmp_path, campaign("held", [arm("inc", "incumbent"),
                                                   arm("cand", "candidate")]))  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(workdir / "held")], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        second = faceoff("run", str(path), "--workdir", str(workdir))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    assert second.returncode == Exit.REFUSED, second.stdout + second.stderr
    assert f"being run right now (pid {holder.pid}); this run started nothing" in second.stderr
    assert "Traceback" not in second.stderr
    assert sorted(p.name for p in workdir.iterdir()) == ["held"]  # no .prefect, no ledger
