"""What a lane runs: the engine command of a host process, or the cmd of a container.

A simulator arm (``[arms.simulator]``) becomes simulator flags: after
``python -m simulator`` on the host, or as the container cmd of the simulator
image, whose entrypoint is ``python3 -m simulator``.
"""

from __future__ import annotations

import json

from matrix.model import Arm, LaneKind


def simulator_args(arm: Arm) -> list[str]:
    """The simulator's flags for this arm; empty when the arm has no simulator table."""
    sim = arm.simulator
    if sim is None:
        return []
    args = ["--profile", sim.profile, "--host", arm.host, "--port", str(arm.port)]
    args += ["--time-scale", _number(sim.time_scale), "--served-model-name", arm.served_model]
    if arm.weights_manifest is not None:  # so /v1/models reports it as root, like vLLM's path
        args += ["--model-path", arm.weights_manifest]
    if sim.legacy_names:
        args.append("--legacy-names")
    for key, value in sorted(sim.faults.items()):
        args += ["--fault", f"{key}={_fault_value(value)}"]
    return args


def host_command(arm: Arm, python: str) -> list[str]:
    """The argv of a host lane: the simulator under ``python``, or the arm's command."""
    if arm.lane is LaneKind.SIMULATOR:
        return [python, "-m", "simulator", *simulator_args(arm), *arm.engine_args]
    return [*(arm.command or []), *arm.engine_args]


def container_command(arm: Arm) -> list[str]:
    """The container cmd: the arm's command, simulator flags if any, then engine flags."""
    return [*(arm.command or []), *simulator_args(arm), *arm.engine_args]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _fault_value(value: float | int | str | bool | list[str]) -> str:
    """Render as the TOML value the simulator's ``--fault k=v`` parses."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)
