"""The same 2-arm campaign with Docker lanes: the simulator image, pulled by digest.

The image comes from the local registry (``sim_image``: repo@sha256:…); each
lane is a container on the host network, found again by its labels. After the
run the restored incumbent is a container of purpose ``restore`` and no
candidate container is left.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.lane import LaneRecord
from faceoff.formats.receipt import verify_receipt
from flows.prefect.flow_runner import run_campaign
from tests.e2e.host_load import not_accepted_but_for_the_host
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.lanes.helpers import remove_campaign_containers

pytestmark = [pytest.mark.docker, pytest.mark.prefect]

NAME = "e2e-docker"


@pytest.fixture
def containers(docker_client: Any) -> Iterator[Any]:
    yield docker_client
    remove_campaign_containers(docker_client, NAME)


def test_a_two_arm_campaign_on_docker_lanes_by_digest(
    prefect_harness: None, containers: Any, sim_image: str, workdir: Path, tmp_path: Path
) -> None:
    arms = [arm("inc", "incumbent", image=sim_image), arm("cand", "candidate", image=sim_image)]
    path = write_matrix(tmp_path, matrix(NAME, arms))

    result = run_campaign(path, workdir)

    assert result.restored and not not_accepted_but_for_the_host(result.bundle)
    for lane in ("inc", "cand"):
        record = LaneRecord.read(result.bundle / "lanes" / lane / "campaign-001" / "lane.json")
        assert record.image_verified and record.running_image == sim_image
        assert record.state == "removed" and record.exit is not None
        assert (result.bundle / "lanes" / lane / "campaign-001" / "inspect.json").is_file()
    receipt = verify_receipt(result.bundle / "receipt.json")
    assert receipt.outcome == "restored" and receipt.running_image == sim_image
    left = containers.containers.list(all=True, filters={"label": f"faceoff.campaign={NAME}"})
    assert [(c.labels["faceoff.arm"], c.labels["faceoff.purpose"], c.status) for c in left] == [
        ("inc", "restore", "running")
    ]
    sums = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=result.bundle)
    assert sums.returncode == 0
    assert audit_bundle(result.bundle).ok
    host_sample = (result.bundle / "cells/natural-600-c1/inc/attempt-1/host.jsonl").read_text()
    assert '"lane":{' in host_sample  # the container's memory was found
