"""``posture/gpu-start.json``, ``gpu-end.json`` and a lane run's ``gpu-posture.json``: GPU
posture as recorded, the snapshot's model, and what changed between two. Pure.
The same concept at another layer: ``flows.campaign.gpu_posture``.

Here, apart from reading NVML (``collectors.gpu.posture``), so that the evidence that reads
and compares the snapshots loads neither NVML nor pynvml, as ``faceoff.formats.attempt.stalls``
keeps the sample files' names apart from the samplers.

Format history of ``GpuPosture.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.formats.attempt.collector_samples import ReadStatus

GPU_START_FILE, GPU_END_FILE = "gpu-start.json", "gpu-end.json"  # beside the host posture's
LANE_GPU_FILE = "gpu-posture.json"  # in a lane run's folder, read when the lane is ready
COMPARED = (
    "name",
    "vbios_version",
    "persistence_mode",
    "power_limit_w",
    "default_power_limit_w",
    "enforced_power_limit_w",
    "application_sm_clock_mhz",
    "application_memory_clock_mhz",
    "max_sm_clock_mhz",
    "mig_mode",
    "mig_mode_pending",
    "ecc_mode",
    "ecc_mode_pending",
)


class GpuDevicePosture(Spec):
    index: int = Field(description="NVML device index.")
    uuid: str | None = Field(description="Device UUID: what a change is matched on.")
    name: str | None = Field(description="Device name.")
    vbios_version: str | None = Field(description="VBIOS version.")
    persistence_mode: bool | None = Field(description="Persistence mode on.")
    power_limit_w: float | None = Field(description="Power management limit as set (W).")
    default_power_limit_w: float | None = Field(description="The board's default limit (W).")
    enforced_power_limit_w: float | None = Field(
        description="The limit in force, the lowest of every limiter (W)."
    )
    application_sm_clock_mhz: int | None = Field(description="Application SM clock (MHz).")
    application_memory_clock_mhz: int | None = Field(description="Application memory clock (MHz).")
    max_sm_clock_mhz: int | None = Field(description="Maximum SM clock (MHz).")
    mig_mode: bool | None = Field(description="MIG enabled now.")
    mig_mode_pending: bool | None = Field(description="MIG enabled after the next reset.")
    ecc_mode: bool | None = Field(description="ECC enabled now.")
    ecc_mode_pending: bool | None = Field(description="ECC enabled after the next reset.")
    errors: list[str] = Field(description="Settings that could not be read, and why.")


class GpuPosture(Artifact):
    schema_version: Literal[1] = Field(default=1, description="GPU posture format version.")
    taken_at: datetime = Field(description="When it was read (UTC).")
    simulated: bool = Field(description="True: a simulator lane's virtual GPUs, not hardware.")
    status: ReadStatus = Field(description="ok, partial (some settings unread) or unavailable.")
    error: str | None = Field(description="Why NVML could not be read at all.")
    driver_version: str | None = Field(description="NVIDIA driver version.")
    cuda_driver_version: str | None = Field(description="CUDA version the driver supports.")
    devices: list[GpuDevicePosture] = Field(description="One entry per GPU read.")


def gpu_posture_changes(start: GpuPosture | None, end: GpuPosture | None) -> list[str]:
    """Settings that differ between two snapshots, in words; devices matched by UUID."""
    if start is None or end is None:
        return []
    changes = [
        f"{name}: {getattr(start, name)!r} at the start, {getattr(end, name)!r} at the end"
        for name in ("driver_version", "cuda_driver_version")
        if getattr(start, name) != getattr(end, name)
    ]
    later = {_key(d): d for d in end.devices}
    for before in start.devices:
        after = later.pop(_key(before), None)
        if after is None:
            changes.append(f"GPU {before.index} ({before.uuid}): gone at the end")
            continue
        changes += [
            f"GPU {before.index} {name}: {getattr(before, name)!r} at the start, "
            f"{getattr(after, name)!r} at the end"
            for name in COMPARED
            if getattr(before, name) != getattr(after, name)
        ]
    changes += [f"GPU {d.index} ({d.uuid}): new at the end" for d in later.values()]
    return changes


def _key(device: GpuDevicePosture) -> str:
    return device.uuid or f"index {device.index}"


def write_gpu_posture(path: Path, posture: GpuPosture, *, keep_first: bool = False) -> None:
    """Write a snapshot; ``keep_first``: a resumed campaign keeps its opening one."""
    if keep_first and path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    posture.write(path, replace=True)


def read_gpu_posture(path: Path) -> GpuPosture | None:
    return GpuPosture.read(path) if path.is_file() else None
