"""The registry is down (an outage, an air-gapped GPU host) but the incumbent's image is in
the local store by its pinned digest: restoration uses it instead of failing on a pull."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from faceoff.formats.receipt import verify_receipt
from flows.campaign.restore import require_restoration, restore_incumbent
from lanes.http import UrllibHttp
from lanes.images import local_pinned, parse_pinned
from lanes.restoration import RestoreTools
from tests.conftest import free_port
from tests.lanes import helpers
from tests.lanes.helpers import (
    checkpoint,
    docker_simulator_arm,
    kill_recorded_processes,
    now,
    remove_campaign_containers,
    wait_for,
)
from tests.restore.campaign import matrix, open_test_campaign

pytestmark = pytest.mark.docker

REGISTRY_CONFIG = """version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
http:
  addr: 127.0.0.1:{port}
"""


@pytest.fixture
def offline_image(docker_client: Any, sim_image: str, tmp_path: Path) -> Iterator[str]:
    """The simulator image pulled by digest from a registry of its own, which is then stopped."""
    port = free_port()
    config = tmp_path / "registry.yml"
    config.write_text(REGISTRY_CONFIG.format(root=tmp_path / "registry", port=port))
    registry = subprocess.Popen(
        ["docker-registry", "serve", str(config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    repo = f"127.0.0.1:{port}/faceoff/sim-offline"
    try:
        wait_for(lambda: UrllibHttp().get(f"http://127.0.0.1:{port}/v2/", timeout=2).ok,
                 "the test registry")  # fmt: skip
        docker_client.images.get(sim_image).tag(repo, tag="pushed")
        docker_client.images.push(repo, tag="pushed")
        digest = sim_image.split("@", 1)[1]  # same manifest, same digest in any registry
        docker_client.images.pull(repo, tag=digest)  # the host's one pull, while it was up
    finally:
        registry.terminate()
        registry.wait(30)
    pinned = f"{repo}@{digest}"
    assert local_pinned(docker_client, parse_pinned(pinned, where="test")) is not None
    yield pinned
    for ref in (f"{repo}:pushed", pinned):
        with contextlib.suppress(Exception):
            docker_client.images.remove(ref)


def test_restoration_uses_the_local_image_when_the_registry_is_down(
    docker_client: Any, offline_image: str, tmp_path: Path
) -> None:
    name = f"offline-{uuid.uuid4().hex[:8]}"
    workdir = tmp_path / "runs"
    try:
        incumbent = docker_simulator_arm(offline_image, checkpoint(tmp_path / "weights"))
        candidate = helpers.simulator_arm(name="cand", role="candidate")
        arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
        frozen = matrix(name, arms, [])
        engine, campaign_dir = open_test_campaign(workdir, frozen)
        require_restoration(engine, campaign=name, frozen=frozen,
                            campaign_dir=campaign_dir, now=now)  # fmt: skip
        tools = RestoreTools(
            environ={"OP_HF_TOKEN": "hf_offline_restore"}, now=now, http=UrllibHttp(),
            docker=lambda: docker_client, python=helpers.SIM_PYTHON, grace_s=2,
        )  # fmt: skip

        outcome = restore_incumbent(engine, name, tools)

        assert outcome.state == "restored", outcome.details
        receipt = verify_receipt(campaign_dir / "receipt.json")
        assert receipt.image == receipt.running_image == offline_image
        container = docker_client.containers.get(receipt.container_id)
        assert container.status == "running"
        assert receipt.json_smoke is not None and receipt.json_smoke.ok
    finally:
        remove_campaign_containers(docker_client, name)
        kill_recorded_processes(workdir / name)
