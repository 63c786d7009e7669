"""Lanes of the workdir that still run, from their ``lane.json`` records: this campaign's
own (a kill or a restoration left them) and the incumbent other campaigns restored. The
take-over stops them; the preflight asks before any campaign is opened. Light on purpose:
it loads the lane records, not the walk."""

from __future__ import annotations

from pathlib import Path

from docker import errors as docker_errors

from faceoff.formats.lane import LANE_FILE, LANES_DIR, LaneRecord
from faceoff.ports import DockerClient
from lanes.lane_context import LanePurpose
from lanes.process import is_same_process
from matrix.arm import Arm


def production_lanes(
    workdir: Path, campaign_dir: Path, arm: Arm, docker: DockerClient | None
) -> list[tuple[Path, LaneRecord]]:
    """``earlier_production`` from the folders alone, before any campaign is opened."""
    base_url = arm.base_url
    found = []
    pattern = f"*/{LANES_DIR}/{arm.name}/{LanePurpose.RESTORE.value}-*/{LANE_FILE}"
    for path in sorted(workdir.resolve().glob(pattern)):
        if path.parent.parent.parent.parent == campaign_dir.resolve():
            continue  # this campaign's own lanes are cleared by take_over
        record = LaneRecord.read(path)
        if record.base_url == base_url and lane_alive(docker, record):
            found.append((path.parent, record))
    return found


def lane_alive(docker: DockerClient | None, record: LaneRecord) -> bool:
    """Whether the lane a record describes still runs (its process, or its container)."""
    if record.container_id is None:
        return record.pid is not None and is_same_process(record.pid, record.pid_started_at)
    if docker is None:
        return False
    try:
        return bool(docker.containers.get(record.container_id).status == "running")
    except docker_errors.NotFound:
        return False


def own_lanes(campaign_dir: Path, docker: DockerClient | None) -> list[LaneRecord]:
    """This campaign's lanes that still run (a kill or a restoration left them): take_over
    removes them."""
    paths = sorted(campaign_dir.glob(f"{LANES_DIR}/*/*/{LANE_FILE}"))
    records = [LaneRecord.read(p) for p in paths]
    return [r for r in records if r.state != "removed" and lane_alive(docker, r)]
