"""The GPU posture a campaign records: its hardware GPUs when it opens and when it closes,
and each lane run's GPUs once the lane is ready.
The same concept at another layer: ``faceoff.formats.gpu_posture``.

The campaign's snapshots (``posture/gpu-start.json``, kept on resume, and
``posture/gpu-end.json``) read NVML for the GPU ids of the arms that run on hardware; a
campaign of simulator arms only has none. A lane run's snapshot
(``lanes/<arm>/<run>/gpu-posture.json``) reads the arm's GPU ids through the NVML its
cells are sampled with: the real one, or a simulator lane's virtual GPUs (labelled
simulated). Reading never raises: what NVML cannot say is recorded with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from collectors.gpu.nvml import Nvml, PynvmlLibrary
from collectors.gpu.posture import collect_gpu_posture
from collectors.gpu.virtual import nvml_for_arm
from faceoff.formats.gpu_posture import GPU_START_FILE, LANE_GPU_FILE, write_gpu_posture
from faceoff.formats.host_posture import POSTURE_DIR
from matrix.arm import Arm
from matrix.model import Matrix


def hardware_gpu_ids(matrix: Matrix) -> list[int]:
    """The GPU ids of the arms that run on hardware (not a simulator's virtual GPUs)."""
    return sorted({g for arm in matrix.arms if arm.simulator is None for g in arm.gpu_ids})


def record_campaign_gpus(
    campaign_dir: Path,
    ids: Sequence[int],
    name: str,
    now: Callable[[], datetime],
    nvml: Callable[[], Nvml] = PynvmlLibrary,
) -> None:
    """``posture/<name>``: the posture of the GPUs ``ids`` (``hardware_gpu_ids``), nothing
    without any; the opening one is kept on resume."""
    if not ids:
        return
    posture = collect_gpu_posture(nvml(), now, ids)
    write_gpu_posture(campaign_dir / POSTURE_DIR / name, posture, keep_first=name == GPU_START_FILE)


def record_lane_gpus(
    run_dir: Path, arm: Arm, base_url: str, lane_pid: int | None, now: Callable[[], datetime]
) -> None:
    """The ready lane's GPUs, read as its cells will be sampled; nothing without GPU ids."""
    if not arm.gpu_ids:
        return
    virtual = nvml_for_arm(
        simulator=arm.simulator is not None,
        base_url=base_url,
        gpu_ids=arm.gpu_ids,
        lane_pid=lane_pid,
    )
    nvml = PynvmlLibrary() if virtual is None else virtual
    write_gpu_posture(run_dir / LANE_GPU_FILE, collect_gpu_posture(nvml, now, arm.gpu_ids))
