"""``posture/start.json``, ``end.json``: the host's posture, the kernel and runtime settings
that change what a lane can do.

Swappiness, transparent huge pages, the CPU frequency governor, the NUMA nodes, the
kernel command line, the container runtime and the GPU driver: an operator's report
traced two host wedges to swappiness alone. The flow records the posture when the
campaign opens (``posture/start.json``, once) and when it closes (``posture/end.json``);
the comparison carries both and names every setting that changed in between. Reading
is ``collect_posture`` (a file tree, ``/`` on a host); the rest is pure.

The view carries the GPU posture too (``faceoff.formats.gpu_posture``): the GPUs of the arms
that run on hardware at the start and the end (``posture/gpu-start.json``,
``gpu-end.json``), and each lane run's own GPUs when it was ready (a simulator lane's
virtual GPUs, labelled simulated), each compared with the arm's lane run before it.

Format history of ``HostPosture.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.formats.gpu_posture import (
    GPU_END_FILE,
    GPU_START_FILE,
    GpuPosture,
    gpu_posture_changes,
    read_gpu_posture,
)
from matrix.fields import omitted_at

POSTURE_DIR = "posture"
START_FILE, END_FILE = "start.json", "end.json"
COMPARED = (
    "swappiness",
    "transparent_hugepages",
    "thp_defrag",
    "cpu_governors",
    "numa_nodes",
    "kernel_cmdline",
    "container_runtime",
    "gpu_driver",
)


class HostPosture(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Host posture format version.")
    taken_at: datetime = Field(description="When it was read (UTC).")
    swappiness: int | None = Field(description="/proc/sys/vm/swappiness.")
    transparent_hugepages: str | None = Field(description="THP enabled: the bracketed mode.")
    thp_defrag: str | None = Field(description="THP defrag: the bracketed mode.")
    cpu_governors: list[str] = Field(description="Distinct scaling governors of the CPUs.")
    numa_nodes: int | None = Field(description="NUMA nodes the kernel lists.")
    kernel_cmdline: str | None = Field(description="/proc/cmdline.")
    container_runtime: str | None = Field(description="Docker's default runtime, if asked.")
    gpu_driver: str | None = Field(description="NVIDIA driver version, where loaded.")


class LaneGpuPosture(Spec):
    arm: str = Field(description="Arm name.")
    run: str = Field(description="lanes/<arm>/<run>, relative to the campaign folder.")
    posture: GpuPosture = Field(description="The lane's GPUs when it was ready.")
    changes: list[str] = Field(
        description="Settings that differ from the arm's lane run before it, in words."
    )


class PostureView(Spec):
    start: HostPosture | None = Field(description="When the campaign opened.")
    end: HostPosture | None = Field(description="When it closed.")
    changes: list[str] = Field(description="Settings that differ between the two, in words.")
    gpu_start: GpuPosture | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The hardware GPUs of the arms when the campaign opened.",
    )
    gpu_end: GpuPosture | None = Field(
        default=None, exclude_if=omitted_at(None), description="And when it closed."
    )
    gpu_changes: list[str] = Field(
        default_factory=list,
        exclude_if=omitted_at([]),
        description="GPU settings that differ between the two, in words.",
    )
    lanes: list[LaneGpuPosture] = Field(
        default_factory=list,
        exclude_if=omitted_at([]),
        description="Each lane run's GPU posture, in arm and run order.",
    )


def collect_posture(
    now: Callable[[], datetime], root: Path = Path("/"), runtime: str | None = None
) -> HostPosture:
    """The posture read under ``root``; a file that is missing reads as unknown."""
    governors = sorted(
        {
            text
            for path in (root / "sys/devices/system/cpu").glob("cpu*/cpufreq/scaling_governor")
            if (text := _read(path))
        }
    )
    nodes = list((root / "sys/devices/system/node").glob("node[0-9]*"))
    swappiness = _read(root / "proc/sys/vm/swappiness")
    return HostPosture(
        taken_at=now(),
        swappiness=int(swappiness) if swappiness and swappiness.isdigit() else None,
        transparent_hugepages=_mode(_read(root / "sys/kernel/mm/transparent_hugepage/enabled")),
        thp_defrag=_mode(_read(root / "sys/kernel/mm/transparent_hugepage/defrag")),
        cpu_governors=governors,
        numa_nodes=len(nodes) or None,
        kernel_cmdline=_read(root / "proc/cmdline"),
        container_runtime=runtime,
        gpu_driver=_driver(_read(root / "proc/driver/nvidia/version")),
    )


def write_posture(folder: Path, name: str, posture: HostPosture) -> None:
    """``posture/start.json`` once (a resume keeps the first), ``posture/end.json`` anew."""
    path = folder / POSTURE_DIR / name
    if name == START_FILE and path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    posture.write(path, replace=True)


def docker_runtime(client_factory: Callable[[], Any]) -> str | None:
    """Docker's default runtime (runc, nvidia, …); None when no daemon answers."""
    try:
        return str(client_factory().info().get("DefaultRuntime")) or None
    except Exception:  # docker.errors.DockerException or a connection error: unknown
        return None


def changes(start: HostPosture | None, end: HostPosture | None) -> list[str]:
    if start is None or end is None:
        return []
    return [
        f"{name}: {getattr(start, name)!r} at the start, {getattr(end, name)!r} at the end"
        for name in COMPARED
        if getattr(start, name) != getattr(end, name)
    ]


def read_posture(folder: Path) -> PostureView | None:
    """The host's and the GPUs' snapshots of a campaign folder, with their differences; None
    when none exists."""
    start, end = (_posture(folder / POSTURE_DIR / name) for name in (START_FILE, END_FILE))
    gpu_start, gpu_end = (
        read_gpu_posture(folder / POSTURE_DIR / name) for name in (GPU_START_FILE, GPU_END_FILE)
    )
    if start is None and end is None and gpu_start is None and gpu_end is None:
        return None
    return PostureView(
        start=start,
        end=end,
        changes=changes(start, end),
        gpu_start=gpu_start,
        gpu_end=gpu_end,
        gpu_changes=gpu_posture_changes(gpu_start, gpu_end),
    )


def lane_postures(runs: Sequence[tuple[str, str, GpuPosture]]) -> list[LaneGpuPosture]:
    """(arm, run, posture) in arm and run order -> each with what changed since the arm's
    lane run before it."""
    before: dict[str, GpuPosture] = {}
    found = []
    for arm, run, posture in runs:
        found.append(
            LaneGpuPosture(
                arm=arm,
                run=run,
                posture=posture,
                changes=gpu_posture_changes(before.get(arm), posture),
            )
        )
        before[arm] = posture
    return found


def with_lanes(view: PostureView | None, lanes: list[LaneGpuPosture]) -> PostureView | None:
    """The view with the lane runs' GPU posture (a view of its own where there was none)."""
    if not lanes:
        return view
    if view is None:
        return PostureView(start=None, end=None, changes=[], lanes=lanes)
    return view.model_copy(update={"lanes": lanes})


def _posture(path: Path) -> HostPosture | None:
    return HostPosture.read(path) if path.is_file() else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None


def _mode(text: str | None) -> str | None:
    """The selected mode of a sysfs choice line, ``always [madvise] never`` → ``madvise``."""
    if text is None:
        return None
    chosen = [word.strip("[]") for word in text.split() if word.startswith("[")]
    return chosen[0] if chosen else text


def _driver(text: str | None) -> str | None:
    """The version of ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  …``."""
    if text is None:
        return None
    words = text.split()
    if "Module" in words and words.index("Module") + 1 < len(words):
        return words[words.index("Module") + 1]
    return words[0] if words else None
