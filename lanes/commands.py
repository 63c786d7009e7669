"""What a lane runs: the engine command of a host process, or the cmd of a container.

A simulator arm (``[arms.simulator]``) becomes simulator flags: after
``python -m simulator`` on the host, or as the container cmd of the simulator
image, whose entrypoint is ``python3 -m simulator``. An arm that runs vLLM gets the
``--host``/``--port``/``--served-model-name`` flags its command line lacks, last.
"""

from __future__ import annotations

import json

from matrix.arm import Arm, LaneKind
from matrix.engines import missing_binding


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
    if arm.gpu_ids:  # one virtual GPU per GPU id (collectors/gpu/virtual.py reads them)
        args += ["--gpus", str(len(arm.gpu_ids))]
    for key, value in sorted(sim.faults.items()):
        args += ["--fault", f"{key}={_fault_value(value)}"]
    return args


def host_command(arm: Arm, python: str) -> list[str]:
    """The argv of a host lane: the simulator under ``python``, or the arm's command."""
    if arm.lane is LaneKind.SIMULATOR:
        return [python, "-m", "simulator", *simulator_args(arm), *arm.engine_args]
    return [*(arm.command or []), *arm.engine_args, *binding_args(arm)]


def container_command(arm: Arm) -> list[str]:
    """The container cmd: the arm's command, simulator flags if any, then engine flags."""
    return [*(arm.command or []), *simulator_args(arm), *arm.engine_args, *binding_args(arm)]


def binding_args(arm: Arm) -> list[str]:
    """What faceoff adds so that a vLLM engine listens where the arm says; empty otherwise."""
    if not arm.runs_vllm:
        return []
    return missing_binding([*(arm.command or []), *arm.engine_args], arm.binding)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _fault_value(value: float | int | str | bool | list[str]) -> str:
    """Render as the TOML value the simulator's ``--fault k=v`` parses."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def binding_line(arm: Arm) -> str:
    """Where the arm's lane listens, on which GPUs, and how it comes to listen there."""
    gpus = ",".join(str(i) for i in arm.gpu_ids) or "none"
    where = f"arm {arm.name} ({arm.role.value}): {arm.host}:{arm.port}, GPUs {gpus}"
    if arm.simulator is not None:
        how = "the simulator listens there"
    elif arm.runs_vllm:
        added = binding_args(arm)
        how = f"vLLM; faceoff adds {' '.join(added)}" if added else "vLLM; its flags bind it"
    elif arm.engine is not None:
        how = f"engine {arm.engine!r}: launched as written, its command must listen there"
    else:
        how = 'engine not declared: its command must listen there (engine = "vllm" binds it)'
    return f"{where}; {how}"
