"""Host posture read from a file tree shaped like /proc and /sys, and its changes flagged."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from faceoff.formats.host_posture import (
    START_FILE,
    HostPosture,
    changes,
    collect_posture,
    read_posture,
    write_posture,
)

DRIVER = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"


def now() -> datetime:
    return datetime(2026, 10, 17, tzinfo=UTC)


def host_tree(root: Path, *, swappiness: int, governor: str) -> Path:
    files = {
        "proc/sys/vm/swappiness": f"{swappiness}\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
        "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": f"{governor}\n",
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": f"{governor}\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 iommu=pt\n",
        "proc/driver/nvidia/version": DRIVER + "\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for node in ("node0", "node1"):
        (root / "sys/devices/system/node" / node).mkdir(parents=True, exist_ok=True)
    return root


def test_the_posture_is_read_from_proc_and_sys(tmp_path: Path) -> None:
    posture = collect_posture(now, host_tree(tmp_path, swappiness=60, governor="performance"),
                              runtime="nvidia")  # fmt: skip
    assert (posture.swappiness, posture.transparent_hugepages, posture.thp_defrag) == (
        60, "madvise", "madvise",
    )  # fmt: skip
    assert posture.cpu_governors == ["performance"] and posture.numa_nodes == 2
    assert posture.kernel_cmdline == "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 iommu=pt"
    assert (posture.gpu_driver, posture.container_runtime) == ("550.54.15", "nvidia")
    bare = collect_posture(now, tmp_path / "empty")
    assert (bare.swappiness, bare.numa_nodes, bare.gpu_driver) == (None, None, None)


def test_a_setting_changed_between_start_and_end_is_named(tmp_path: Path) -> None:
    start = collect_posture(now, host_tree(tmp_path / "a", swappiness=0, governor="powersave"))
    end = collect_posture(now, host_tree(tmp_path / "b", swappiness=60, governor="powersave"))
    assert changes(start, end) == ["swappiness: 0 at the start, 60 at the end"]
    campaign = tmp_path / "campaign"
    write_posture(campaign, START_FILE, start)
    write_posture(campaign, START_FILE, end)  # a resume keeps the first start
    write_posture(campaign, "end.json", end)
    view = read_posture(campaign)
    assert view is not None and view.changes == ["swappiness: 0 at the start, 60 at the end"]
    assert isinstance(view.start, HostPosture) and view.start.swappiness == 0
