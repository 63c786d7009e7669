"""Lanes the take-over will stop: what may hold an arm's port or GPU memory tonight.

``flows.campaign.takeover`` stops every live lane of the campaign itself and the
incumbent another campaign under the workdir restored on the incumbent's address;
anything else on a port or a GPU is foreign to the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from faceoff.formats.lane import LaneRecord
from faceoff.ports import DockerClient
from flows.campaign.live_lanes import own_lanes, production_lanes
from matrix.arm import Arm


@dataclass(frozen=True)
class HeldLane:
    record: LaneRecord
    pids: frozenset[int]  # the lane's processes now (a container's, seen from the host)
    why: str  # how the take-over comes to stop it

    @property
    def name(self) -> str:
        r = self.record
        return f"{r.campaign}/{r.arm}/{r.run}"


def takeover_lanes(
    workdir: Path, campaign_dir: Path, incumbent: Arm, docker: DockerClient | None
) -> list[HeldLane]:
    """The live lanes ``take_over`` would stop, with their processes."""
    own = [
        (r, "a lane of this campaign, which the take-over removes")
        for r in own_lanes(campaign_dir, docker)
    ]
    earlier = [
        (r, f"the incumbent campaign {r.campaign} restored, which the take-over stops")
        for _, r in production_lanes(workdir, campaign_dir, incumbent, docker)
    ]
    return [HeldLane(r, frozenset(lane_pids(r, docker)), why) for r, why in own + earlier]


def lane_pids(record: LaneRecord, docker: DockerClient | None) -> set[int]:
    """The lane's leader (a host process, or a container's init as the host sees it) and
    everything below it."""
    leader = record.pid if record.container_id is None else _container_pid(record, docker)
    if leader is None:
        return set()
    try:
        process = psutil.Process(leader)
        return {leader, *(child.pid for child in process.children(recursive=True))}
    except psutil.Error:
        return set()


def _container_pid(record: LaneRecord, docker: DockerClient | None) -> int | None:
    if docker is None or record.container_id is None:
        return None
    try:
        attrs: dict[str, Any] = docker.containers.get(record.container_id).attrs
    except Exception:  # gone since: it holds nothing
        return None
    pid = attrs.get("State", {}).get("Pid")
    return int(pid) if pid else None
