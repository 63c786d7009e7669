"""Choosing the lane implementation for an arm."""

from __future__ import annotations

import sys

from faceoff.errors import FaceoffError
from faceoff.ports import DockerClient
from lanes.commands import host_command
from lanes.context import LaneContext
from lanes.docker import DockerLane
from lanes.environment import host_process_env, resolve_env
from lanes.lane import Lane
from lanes.process import ProcessLane
from matrix.arm import Arm, LaneKind


def open_lane(
    arm: Arm,
    ctx: LaneContext,
    *,
    docker_client: DockerClient | None = None,
    python: str = sys.executable,
) -> Lane:
    """A Docker lane for ``lane = "docker"``; a host process for ``process`` and ``simulator``.

    Secrets are resolved here, so a missing one fails before anything starts.
    """
    env = resolve_env(arm, ctx.environ)
    if arm.lane is LaneKind.DOCKER:
        if docker_client is None:
            raise FaceoffError(
                f"arm {arm.name!r} is a docker lane but no Docker client was given",
                fix="start the Docker daemon and check DOCKER_HOST",
            )
        return DockerLane(arm, ctx, docker_client, env)
    command = host_command(arm, python)
    return ProcessLane(arm, ctx, command, host_process_env(arm, env, ctx.environ), env)
