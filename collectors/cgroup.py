"""Memory of a lane's cgroup, v1 or v2, read straight from the kernel's files.

A lane's cgroup is found from one of its processes: ``/proc/<pid>/cgroup`` names
the path in the memory hierarchy (v1) or the unified one (v2), and
``/proc/self/mountinfo`` says where that hierarchy is mounted. Docker lanes whose
pid is not visible fall back to the paths the cgroupfs and systemd drivers use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from faceoff.formats.attempt.collector_samples import LaneMemory, LaneMemorySource

# v1 reports "no limit" as the largest page-aligned signed 64-bit number.
_UNLIMITED_V1 = 2**62
_PREFERENCE: tuple[Literal[1, 2], ...] = (1, 2)


@dataclass(frozen=True)
class CgroupMount:
    version: Literal[1, 2]
    root: str  # the hierarchy path mounted there (field 4 of mountinfo)
    mount_point: Path


@dataclass(frozen=True)
class MemoryCgroup:
    """A resolved memory cgroup directory and the format of its files."""

    path: Path
    version: Literal[1, 2]

    def read(self) -> LaneMemory:
        return read_v1(self.path) if self.version == 1 else read_v2(self.path)


def memory_mounts(mountinfo: str) -> list[CgroupMount]:
    """The v1 memory hierarchy and the v2 unified hierarchy mounts, from mountinfo text."""
    mounts = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, extra = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(extra) < 3:
            continue
        fstype, options = extra[0], extra[2].split(",")
        if fstype == "cgroup2":
            mounts.append(CgroupMount(2, fields[3], Path(fields[4])))
        elif fstype == "cgroup" and "memory" in options:
            mounts.append(CgroupMount(1, fields[3], Path(fields[4])))
    return mounts


def read_memory_mounts(proc: Path = Path("/proc")) -> list[CgroupMount]:
    """The memory mounts this process sees; none where mountinfo cannot be read."""
    try:
        return memory_mounts((proc / "self" / "mountinfo").read_text())
    except OSError:
        return []


def memory_paths(proc_cgroup: str) -> dict[int, str]:
    """{1: memory hierarchy path, 2: unified path} from a /proc/<pid>/cgroup text."""
    paths: dict[int, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            paths[2] = path
        elif "memory" in controllers.split(","):
            paths[1] = path
    return paths


def cgroup_of_pid(pid: int, mounts: list[CgroupMount], proc: Path = Path("/proc")) -> MemoryCgroup:
    """The memory cgroup of a process; v1 where the memory controller is v1, else v2."""
    paths = memory_paths((proc / str(pid) / "cgroup").read_text())
    for version in _PREFERENCE:  # hybrid hosts mount v2 too, without the memory controller
        for mount in (m for m in mounts if m.version == version):
            found = _under(mount, paths.get(version))
            if found is not None and _has_memory_files(found, version):
                return MemoryCgroup(found, version)
    raise LookupError(f"no memory cgroup directory found for pid {pid} (cgroup paths {paths})")


def _under(mount: CgroupMount, path: str | None) -> Path | None:
    if path is None:
        return None
    inner = PurePosixPath(path)
    root = PurePosixPath(mount.root)
    if inner != root and root not in inner.parents:
        return None
    return mount.mount_point / inner.relative_to(root)


def _has_memory_files(path: Path, version: int) -> bool:
    return (path / ("memory.usage_in_bytes" if version == 1 else "memory.current")).exists()


def docker_cgroup_guesses(container_id: str, mounts: list[CgroupMount]) -> list[MemoryCgroup]:
    """Where the cgroupfs and systemd drivers put a container, under each memory mount."""
    found = []
    for mount in mounts:
        for rel in (f"docker/{container_id}", f"system.slice/docker-{container_id}.scope"):
            path = mount.mount_point / rel
            if _has_memory_files(path, mount.version):
                found.append(MemoryCgroup(path, mount.version))
    return found


def read_v1(path: Path) -> LaneMemory:
    stat = _stat(path / "memory.stat")
    limit = _int(path / "memory.limit_in_bytes")
    return LaneMemory(
        source=LaneMemorySource.CGROUP_V1,
        where=str(path),
        usage_bytes=_int(path / "memory.usage_in_bytes"),
        anon_bytes=stat.get("total_rss", stat.get("rss")),
        file_bytes=stat.get("total_cache", stat.get("cache")),
        limit_bytes=None if limit >= _UNLIMITED_V1 else limit,
        kernel_peak_bytes=_optional_int(path / "memory.max_usage_in_bytes"),
    )


def read_v2(path: Path) -> LaneMemory:
    stat = _stat(path / "memory.stat")
    limit = (path / "memory.max").read_text().strip()
    return LaneMemory(
        source=LaneMemorySource.CGROUP_V2,
        where=str(path),
        usage_bytes=_int(path / "memory.current"),
        anon_bytes=stat.get("anon"),
        file_bytes=stat.get("file"),
        limit_bytes=None if limit == "max" else int(limit),
        kernel_peak_bytes=_optional_int(path / "memory.peak"),  # kernels >= 5.19
    )


def _stat(path: Path) -> dict[str, int]:
    values = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            values[key] = int(value)
    return values


def _int(path: Path) -> int:
    return int(path.read_text().strip())


def _optional_int(path: Path) -> int | None:
    try:
        return _int(path)
    except (OSError, ValueError):
        return None
