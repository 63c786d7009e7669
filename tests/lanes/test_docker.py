"""Docker lanes against the real daemon and the local registry, by pinned digest."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.lane import InspectRecord, LaneRecord
from lanes.bringup import bring_up
from lanes.docker import DockerLane
from lanes.environment import resolve_env
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LanePurpose
from lanes.leftovers import campaign_containers, remove_containers
from lanes.probes import run_probes
from lanes.readiness import Waiting
from lanes.weights_manifest import build_manifest
from matrix.arm import Arm
from tests.lanes.helpers import (
    checkpoint,
    context,
    docker_simulator_arm,
    now,
    remove_campaign_containers,
)

pytestmark = pytest.mark.docker

SECRET = "hf_docker_lane_secret"


@pytest.fixture
def campaign(docker_client: Any) -> Iterator[str]:
    name = f"lanes-{uuid.uuid4().hex[:8]}"
    yield name
    remove_campaign_containers(docker_client, name)


def sim_arm(image: str, model: Path, **fields: Any) -> Arm:
    """Weights mounted under a path named nvfp4 that holds EXL3; a memory and /dev/shm limit."""
    target = "/models/glm-5.3-flash-nvfp4"
    limits = {"memory_limit": "1g", "shm_size": "64m"}
    return docker_simulator_arm(image, model, target, **(limits | fields))


def test_the_simulator_image_starts_by_digest_and_passes_identity(
    docker_client: Any, sim_image: str, tmp_path: Path, campaign: str
) -> None:
    the_arm = sim_arm(sim_image, checkpoint(tmp_path / "weights"))
    pinned = build_manifest(the_arm, "/models/glm-5.3-flash-nvfp4").sha256
    the_arm = the_arm.model_copy(update={"expected_weights_sha256": pinned})
    ctx = context(tmp_path / "c", the_arm, campaign=campaign, environ={"OP_HF_TOKEN": SECRET})
    lane = open_lane(the_arm, ctx, docker_client=docker_client)
    try:
        up = bring_up(lane, UrllibHttp(), Waiting(now=now))
        assert up.ok, up.reason
        record = lane.record
        assert record.image_verified and record.running_image == sim_image
        assert up.identity.observed.quantizations == ["exl3"]
        assert up.identity.observed.models[0].root == "/models/glm-5.3-flash-nvfp4"
        assert up.identity.observed.weights_sha256 == pinned
        for kind in ("smoke", "json_smoke"):
            probes = run_probes(
                UrllibHttp(), kind, base_url=record.base_url, model="llm.primary", count=2,
                settings=the_arm.probes,
            )  # fmt: skip
            assert probes.ok, probes.results
        target = lane.target()
        assert target.kind == "container" and target.container_id == record.container_id
        assert target.pid is not None and target.pid > 0
    finally:
        ended = lane.stop(grace_s=5)
        lane.remove()
    assert ended.oom_killed is False and ended.exit_code is not None
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(record.container_id)
    saved = LaneRecord.read(ctx.run_dir / "lane.json")
    assert saved.state == "removed" and saved.exit == ended and saved.env == {"HF_TOKEN": "***"}
    for name in ("lane.json", "inspect.json", "boot.log", "identity.json"):
        assert SECRET not in (ctx.run_dir / name).read_text(), name
    assert "quantization=exl3" in (ctx.run_dir / "boot.log").read_text()


def test_a_wrong_quantization_line_blocks_with_a_clear_reason(
    docker_client: Any, sim_image: str, tmp_path: Path, campaign: str
) -> None:
    the_arm = sim_arm(sim_image, checkpoint(tmp_path / "w"), expected_quantization="modelopt_fp4")
    ctx = context(tmp_path / "c", the_arm, campaign=campaign, environ={"OP_HF_TOKEN": SECRET})
    lane = open_lane(the_arm, ctx, docker_client=docker_client)
    try:
        up = bring_up(lane, UrllibHttp(), Waiting(now=now))
    finally:
        lane.remove()
    assert up.identity.readiness.ready and not up.ok
    assert [m.field for m in up.identity.verdict.mismatches] == ["quantization"]
    assert up.reason == (
        "identity of arm 'inc' does not match: quantization: expected 'modelopt_fp4', "
        "the boot log says 'exl3'"
    )


def test_a_tag_and_a_wrong_digest_are_refused(
    docker_client: Any, sim_image: str, tmp_path: Path, campaign: str
) -> None:
    the_arm = sim_arm(sim_image, tmp_path)
    ctx = context(tmp_path / "c", the_arm, campaign=campaign, environ={"OP_HF_TOKEN": SECRET})
    env = resolve_env(the_arm, ctx.environ)
    repo = sim_image.split("@", maxsplit=1)[0]
    tagged = the_arm.model_copy(update={"image": repo + ":latest"})
    with pytest.raises(FaceoffError, match="not pinned by digest"):
        DockerLane(tagged, ctx, docker_client, env)
    wrong = the_arm.model_copy(
        update={"image": sim_image.split("@", maxsplit=1)[0] + "@sha256:" + "0" * 64}
    )
    with pytest.raises(FaceoffError, match="the registry has no image") as err:
        DockerLane(wrong, ctx, docker_client, env).create()
    assert "0" * 64 in err.value.message
    assert campaign_containers(docker_client, campaign) == []


def test_the_created_container_carries_the_recipe_and_gpu_request(
    docker_client: Any, sim_image: str, tmp_path: Path, campaign: str
) -> None:
    # Created, never started: this host has no GPU, the request is checked in inspect. An
    # engine arm, not the simulator (whose GPUs are virtual and never requested).
    simulated = sim_arm(sim_image, tmp_path, gpu_ids=[0, 1], env={"VLLM_KNOB": "1"})
    the_arm = simulated.model_copy(update={"simulator": None, "command": ["sleep", "60"]})
    ctx = context(tmp_path / "c", the_arm, campaign=campaign, environ={"OP_HF_TOKEN": SECRET})
    lane = DockerLane(the_arm, ctx, docker_client, resolve_env(the_arm, ctx.environ))
    record = lane.create()
    try:
        live = docker_client.containers.get(record.container_id).attrs
        assert live["State"]["Status"] == "created"
        host = live["HostConfig"]
        requests = host["DeviceRequests"]
        assert [(r["DeviceIDs"], r["Capabilities"]) for r in requests] == [(["0", "1"], [["gpu"]])]
        assert (host["NetworkMode"], host["IpcMode"]) == ("host", "host")
        assert host["Memory"] == 1 << 30 and host["ShmSize"] == 64 << 20
        assert [(m["Target"], m["ReadOnly"]) for m in host["Mounts"]] == [
            ("/models/glm-5.3-flash-nvfp4", True)
        ]
        assert live["Config"]["Labels"]["faceoff.campaign"] == campaign
        assert f"HF_TOKEN={SECRET}" in live["Config"]["Env"]  # the lane gets it …
        saved = InspectRecord.read(ctx.run_dir / "inspect.json").inspect
        assert "HF_TOKEN=***" in saved["Config"]["Env"]  # … the record never does
        assert SECRET not in (ctx.run_dir / "inspect.json").read_text()
        assert record.gpu_ids == [0, 1] and record.state == "created"
    finally:
        lane.remove()
    virtual = DockerLane(simulated, ctx, docker_client, resolve_env(simulated, ctx.environ))
    created = virtual.create()
    try:
        host = docker_client.containers.get(created.container_id).attrs["HostConfig"]
        assert not host["DeviceRequests"]  # the simulator's GPUs are virtual
        assert created.gpu_ids == [0, 1]
    finally:
        virtual.remove()


def test_leftover_containers_are_found_by_label(
    docker_client: Any, sim_image: str, tmp_path: Path, campaign: str
) -> None:
    lanes = []
    for name, purpose in (("cand", LanePurpose.CAMPAIGN), ("inc", LanePurpose.RESTORE)):
        the_arm = sim_arm(sim_image, tmp_path, name=name)
        ctx = context(
            tmp_path / "c", the_arm, campaign=campaign, purpose=purpose,
            environ={"OP_HF_TOKEN": SECRET},
        )  # fmt: skip
        lanes.append(DockerLane(the_arm, ctx, docker_client, resolve_env(the_arm, ctx.environ)))
        lanes[-1].create()
    left = campaign_containers(docker_client, campaign)
    assert [c.labels["faceoff.arm"] for c in left] == ["cand"]  # a restored incumbent is kept
    assert len(campaign_containers(docker_client, campaign, keep_restore=False)) == 2
    removed = remove_containers(left, grace_s=1)
    assert [(r.arm, r.purpose, r.kind) for r in removed] == [("cand", "campaign", "container")]
    assert [
        c.labels["faceoff.arm"]
        for c in campaign_containers(docker_client, campaign, keep_restore=False)
    ] == ["inc"]
