"""Host facts for MANIFEST.json: one small ``collect_<subsystem>()`` per subsystem.

Each collector returns a typed record and never raises: what cannot be read is
recorded as unavailable with the reason, because a bundle from a host without a
GPU or a Docker daemon is still a bundle. No environment variable is read or
recorded here, so no secret can reach the manifest through host facts.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import psutil
import pynvml

from faceoff.formats.host_facts import (
    CpuFacts,
    DockerFacts,
    GpuDevice,
    GpuFacts,
    HostFacts,
    HostMemory,
    KernelFacts,
    SourceFacts,
)
from faceoff.ports import DockerFactory

GIT_TIMEOUT_S = 5.0


class GpuInventory(Protocol):
    """The part of NVML host facts need (the sampler's interface has no inventory)."""

    def driver_version(self) -> str: ...

    def devices(self) -> list[GpuDevice]: ...


class PynvmlInventory:
    """The real NVML; each call opens and closes the library."""

    def driver_version(self) -> str:
        return str(self._call(lambda: _text(pynvml.nvmlSystemGetDriverVersion())))

    def devices(self) -> list[GpuDevice]:
        return list(self._call(lambda: [_device(i) for i in range(pynvml.nvmlDeviceGetCount())]))

    @staticmethod
    def _call(read: Callable[[], Any]) -> Any:
        pynvml.nvmlInit()
        try:
            return read()
        finally:
            pynvml.nvmlShutdown()


def _device(index: int) -> GpuDevice:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    return GpuDevice(
        index=index,
        name=_text(pynvml.nvmlDeviceGetName(handle)),
        uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
        memory_total_bytes=int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
    )


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def collect_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuFacts:
    return CpuFacts(
        model=_cpu_model(cpuinfo),
        logical_cores=os.cpu_count(),
        physical_cores=psutil.cpu_count(logical=False),
        architecture=platform.machine(),
    )


def _cpu_model(cpuinfo: Path) -> str | None:
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return None


def collect_memory() -> HostMemory:
    memory = psutil.virtual_memory()
    return HostMemory(total_bytes=int(memory.total), available_bytes=int(memory.available))


def collect_kernel() -> KernelFacts:
    uname = platform.uname()
    return KernelFacts(system=uname.system, release=uname.release, version=uname.version)


def collect_gpu(inventory: GpuInventory) -> GpuFacts:
    try:
        driver, devices = inventory.driver_version(), inventory.devices()
    except Exception as exc:  # NVMLError has many subclasses; any of them means "none here"
        return GpuFacts(
            status="unavailable", detail=f"NVML: {exc}", driver_version=None, devices=[]
        )
    return GpuFacts(status="ok", detail=None, driver_version=driver, devices=devices)


def collect_docker(client_factory: DockerFactory) -> DockerFacts:
    try:
        version = client_factory().version()
    except Exception as exc:  # docker.errors.DockerException or a connection error
        return DockerFacts(
            status="unavailable", detail=str(exc)[:500], server_version=None, api_version=None
        )
    return DockerFacts(
        status="ok",
        detail=None,
        server_version=version.get("Version"),
        api_version=version.get("ApiVersion"),
    )


def collect_source(checkout: Path) -> SourceFacts:
    """The git commit of faceoff's own checkout; unknown for an installed wheel."""
    try:
        sha = _git(checkout, "rev-parse", "HEAD")
        dirty = bool(_git(checkout, "status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError) as exc:
        return SourceFacts(git_sha=None, git_dirty=None, detail=f"git: {exc}"[:500])
    return SourceFacts(git_sha=sha, git_dirty=dirty, detail=None)


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=True,
    )
    return done.stdout.strip()


def collect_host(gpu: GpuInventory, docker_factory: DockerFactory) -> HostFacts:
    return HostFacts(
        hostname=platform.node(),
        python=platform.python_version(),
        cpu=collect_cpu(),
        memory=collect_memory(),
        kernel=collect_kernel(),
        gpu=collect_gpu(gpu),
        docker=collect_docker(docker_factory),
    )
