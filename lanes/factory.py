"""Choosing the lane implementation for an arm."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping

from faceoff.errors import FaceoffError
from faceoff.ports import DockerClient
from lanes.commands import host_command
from lanes.docker import DockerLane
from lanes.environment import LaneEnv, host_process_env, resolve_env
from lanes.lane import Lane
from lanes.lane_context import LaneContext
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


def check_startable(arm: Arm, environ: Mapping[str, str], python: str = sys.executable) -> None:
    """Raise, naming the variable or program, unless a lane of ``arm`` could be started with
    ``environ``: its secrets set, and a host lane's program found on its PATH. What a run
    asks of every arm before it stops the serving incumbent."""
    check_program(arm, resolve_env(arm, environ), environ, python)


def check_program(arm: Arm, env: LaneEnv, environ: Mapping[str, str], python: str) -> None:
    """Raise unless a host lane's program is found on the PATH its process would get (the
    arm's knobs over the allow-listed host variables); a Docker lane has none here."""
    if arm.lane is LaneKind.DOCKER:
        return
    program = host_command(arm, python)[0]
    path = host_process_env(arm, env, environ).get("PATH")
    if shutil.which(program, path=path) is None:
        raise FaceoffError(
            f"the program {program!r} of arm {arm.name!r} is not found on its PATH ({path})",
            where=f"arms[{arm.name}].command",
            fix="install the engine, or give its full path in the command",
        )
