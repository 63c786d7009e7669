"""A valid receipt whose incumbent died since: `faceoff status` says so, and `faceoff restore`
brings it back again with a new receipt instead of saying "already restored"."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from faceoff.formats.lane import LaneRecord
from faceoff.formats.receipt import verify_receipt
from flows.campaign.restore import require_restoration, restore_incumbent, restore_tools
from matrix.arm import Arm
from tests.foundation.cli import faceoff
from tests.foundation.output_schemas import shaped
from tests.lanes import helpers
from tests.lanes.helpers import gone, now, wait_for
from tests.restore.campaign import matrix, open_test_campaign
from tests.restore.test_restore_process import tools


def test_a_dead_restored_incumbent_is_reported_and_restored_again(workdir: Path) -> None:
    incumbent = helpers.simulator_arm(name="inc")
    candidate = helpers.simulator_arm(name="cand", role="candidate")
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    frozen = matrix("dead-inc", arms, [])
    engine, campaign_dir = open_test_campaign(workdir, frozen)
    require_restoration(engine, campaign="dead-inc", frozen=frozen,
                        campaign_dir=campaign_dir, now=now)  # fmt: skip
    first = restore_incumbent(engine, "dead-inc", tools())
    assert first.state == "restored", first.details
    alive = restore_incumbent(engine, "dead-inc", restore_tools(os.environ))
    assert alive.state == "already_restored"
    assert alive.details == [
        f"incumbent inc at {incumbent.base_url}: answering (serves {incumbent.served_model})"
    ]

    # The operator's incumbent dies after the campaign: killed by hand.
    pid = verify_receipt(campaign_dir / "receipt.json").pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: gone(pid), "the restored incumbent to die")

    status = faceoff("status", "dead-inc", "--workdir", str(workdir))
    assert status.returncode == 0, status.stderr
    said = f"incumbent inc at {incumbent.base_url}: receipt valid, not answering (no answer"
    assert said in status.stdout, status.stdout
    assert "restoration: restored; receipt " in status.stdout
    shown = shaped(
        "status", faceoff("status", "dead-inc", "--workdir", str(workdir), "--json").stdout
    )
    assert shown["schema_version"] == 2
    (facts,) = shown["campaigns"]
    assert (facts["restoration"], facts["receipt_valid"]) == ("restored", True)
    assert facts["incumbent"]["answering"] is False and facts["status"] == "open"

    restored = faceoff("restore", "dead-inc", "--workdir", str(workdir))
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "campaign dead-inc: incumbent restored; receipt " in restored.stdout
    assert "receipt valid, incumbent not answering (no answer" in restored.stdout
    assert "restoring it again" in restored.stdout
    assert (campaign_dir / "receipt.superseded-1.json").is_file()
    receipt = verify_receipt(campaign_dir / "receipt.json")
    assert receipt.lane_run == "lanes/inc/restore-002"
    assert receipt.pid != pid and not gone(receipt.pid or 0)
    assert LaneRecord.read(campaign_dir / receipt.lane_run / "lane.json").pid == receipt.pid

    again = faceoff("status", "dead-inc", "--workdir", str(workdir))
    assert (
        f"incumbent inc at {incumbent.base_url}: answering (serves {incumbent.served_model})"
        in again.stdout
    )
    assert "decision: pending human review" in again.stdout and "started 20" in again.stdout
    listed = faceoff("status", "--workdir", str(workdir)).stdout
    header = next(line for line in listed.splitlines() if "name" in line)
    assert all(word in header for word in ("started", "duration", "decision")), listed
    assert "dead-inc" in listed

    bare_restore_after_another_death(workdir, campaign_dir, incumbent)


def bare_restore_after_another_death(workdir: Path, campaign_dir: Path, incumbent: Arm) -> None:
    """Bare `faceoff restore`: nothing is pending, so the incumbent the last restoration
    brought back is probed, found down and restored again, then found answering."""
    pid = verify_receipt(campaign_dir / "receipt.json").pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: gone(pid), "the restored incumbent to die again")
    bare = faceoff("restore", "--workdir", str(workdir))
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert "receipt valid, incumbent not answering (no answer" in bare.stdout
    assert "campaign dead-inc: incumbent restored; receipt " in bare.stdout
    third = verify_receipt(campaign_dir / "receipt.json")
    assert third.pid is not None and not gone(third.pid)
    assert third.lane_run == "lanes/inc/restore-003"
    assert (campaign_dir / "receipt.superseded-2.json").is_file()
    left = faceoff("restore", "--workdir", str(workdir))
    assert left.returncode == 0, left.stdout + left.stderr
    assert "campaign dead-inc: already restored at " in left.stdout
    assert f"answering (serves {incumbent.served_model})" in left.stdout
    assert verify_receipt(campaign_dir / "receipt.json") == third
    os.killpg(third.pid, signal.SIGKILL)  # the test's own incumbent, not left serving
