"""The host sampler: host available memory and the lane's own memory, one HostSample per tick.
The same concept at another layer: ``flows.campaign.preflight.host``.

The lane is a Docker container (its cgroup, found from its pid, or the Docker
stats API one-shot when no cgroup directory is visible) or a local process (its
own cgroup when it has one apart from the orchestrator's, else the RSS summed
over its process tree). Every sample names the source it used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from collectors.cgroup import (
    CgroupMount,
    cgroup_of_pid,
    docker_cgroup_guesses,
    read_memory_mounts,
)
from collectors.sampler import Clocks, Tick, tick_fields
from faceoff.errors import FaceoffError
from faceoff.files import JsonlAppender
from faceoff.formats.attempt.collector_samples import (
    HostSample,
    LaneMemory,
    LaneMemorySource,
    ReadStatus,
)
from faceoff.formats.attempt.stalls import HOST_FILE
from faceoff.ports import DockerApi
from faceoff.result import Maybe


@dataclass(frozen=True)
class MemoryTarget:
    """What the lanes package hands over: a container id, a pid, or both."""

    container_id: str | None = None
    pid: int | None = None

    def __post_init__(self) -> None:
        if self.container_id is None and self.pid is None:
            raise FaceoffError(
                "a lane target needs a container id or a pid",
                fix="pass the lane's container id (Docker lanes) or its root pid (process lanes)",
            )


class LaneMemoryReader(Protocol):
    def read(self) -> LaneMemory: ...


class DockerStatsReader:
    """The Docker stats API in one-shot mode (no 1 s wait for a second CPU sample)."""

    def __init__(self, api: DockerApi, container_id: str) -> None:
        self.api = api
        self.container_id = container_id

    def read(self) -> LaneMemory:
        stats = self.api.stats(self.container_id, stream=False, one_shot=True)
        memory = stats.get("memory_stats") or {}
        if "usage" not in memory:
            raise LookupError(f"Docker reports no memory stats for {self.container_id[:12]}")
        detail = memory.get("stats", {})
        return LaneMemory(
            source=LaneMemorySource.DOCKER_STATS,
            where=self.container_id,
            usage_bytes=int(memory["usage"]),
            anon_bytes=_first(detail, "total_rss", "rss", "anon"),
            file_bytes=_first(detail, "total_cache", "cache", "file"),
            limit_bytes=_first(memory, "limit"),
            kernel_peak_bytes=_first(memory, "max_usage"),
        )


class ProcessTreeReader:
    """RSS summed over a process and its descendants; page cache is not in it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def read(self) -> LaneMemory:
        root = psutil.Process(self.pid)
        total, counted = 0, 0
        for proc in [root, *root.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
                counted += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue  # a child that exited between listing and reading
        return LaneMemory(
            source=LaneMemorySource.PROCESS_TREE_RSS,
            where=f"pid {self.pid} and {counted - 1} descendants",
            usage_bytes=total,
        )


def _first(values: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        if values.get(key) is not None:
            return int(values[key])
    return None


def lane_reader(
    target: MemoryTarget, docker: DockerApi | None = None, proc: Path = Path("/proc")
) -> LaneMemoryReader:
    """The best memory source for the lane; raises LookupError naming what was tried."""
    mounts = read_memory_mounts(proc)
    if target.container_id is not None:
        return _docker_reader(target.container_id, target.pid, docker, mounts, proc)
    assert target.pid is not None
    return _process_reader(target.pid, mounts, proc)


def _docker_reader(
    container_id: str,
    pid: int | None,
    docker: DockerApi | None,
    mounts: list[CgroupMount],
    proc: Path,
) -> LaneMemoryReader:
    if pid is None and docker is not None:
        pid = int(docker.inspect_container(container_id)["State"]["Pid"]) or None
    tried = []
    if pid is not None:
        try:
            found = cgroup_of_pid(pid, mounts, proc)
            # A daemon in another pid namespace gives pids that mean nothing here.
            if container_id in str(found.path):
                return found
            tried.append(f"pid {pid} is in {found.path}, not the container's cgroup")
        except (OSError, LookupError) as exc:
            tried.append(str(exc))
    guesses = docker_cgroup_guesses(container_id, mounts)
    if guesses:
        return guesses[0]
    if docker is not None:
        return DockerStatsReader(docker, container_id)
    raise LookupError(
        f"no memory source for container {container_id[:12]}: {'; '.join(tried) or 'no pid'};"
        " no cgroup directory under the usual paths; no Docker API client given"
    )


def _process_reader(pid: int, mounts: list[CgroupMount], proc: Path) -> LaneMemoryReader:
    try:
        lane = cgroup_of_pid(pid, mounts, proc)
        own = cgroup_of_pid(os.getpid(), mounts, proc)
    except (OSError, LookupError):
        return ProcessTreeReader(pid)
    # Only a cgroup of the lane's own counts the lane alone; a shared one counts us too.
    if lane.path != own.path and lane.path not in own.path.parents:
        return lane
    return ProcessTreeReader(pid)


class HostSampler:
    name = "host"

    def __init__(
        self,
        target: MemoryTarget,
        folder: Path,
        *,
        clocks: Clocks,
        docker: DockerApi | None = None,
        host_memory: Callable[[], Any] = psutil.virtual_memory,
    ) -> None:
        self.target = target
        self.folder = Path(folder)
        self.clocks = clocks
        self.docker = docker
        self._host_memory = host_memory
        self._reader: LaneMemoryReader | None = None
        self._appender: JsonlAppender | None = None

    @property
    def path(self) -> Path:
        return self.folder / HOST_FILE

    def open(self) -> None:
        self._appender = JsonlAppender(self.path)

    def take(self, tick: Tick) -> None:
        wall = self.clocks.wall()
        host, lane = self._read_host(), self._read_lane()
        available, total = host.value or (None, None)
        latency = self.clocks.mono_ns() - tick.actual_ns
        sample = HostSample(
            **tick_fields(tick, wall, latency),
            status=_status(host.value is not None, lane.value is not None),
            host_available_bytes=available,
            host_total_bytes=total,
            host_error=host.reason,
            lane=lane.value,
            lane_error=lane.reason,
        )
        assert self._appender is not None
        self._appender.append(sample)

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()

    def _read_host(self) -> Maybe[tuple[int, int]]:
        """The host's available and total memory in bytes."""
        try:
            memory = self._host_memory()
        except (OSError, RuntimeError) as exc:
            return Maybe.lacking(f"{type(exc).__name__}: {exc}")
        return Maybe.of((int(memory.available), int(memory.total)))

    def _read_lane(self) -> Maybe[LaneMemory]:
        try:
            if self._reader is None:  # resolved lazily, and again after a failure
                self._reader = lane_reader(self.target, self.docker)
            return Maybe.of(self._reader.read())
        except Exception as exc:  # a vanished cgroup, a Docker API error: the sample says so
            self._reader = None
            return Maybe.lacking(f"{type(exc).__name__}: {exc}")


def _status(host: bool, lane: bool) -> ReadStatus:
    if host and lane:
        return ReadStatus.OK
    return ReadStatus.PARTIAL if host or lane else ReadStatus.UNAVAILABLE
