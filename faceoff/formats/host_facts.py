"""The host facts MANIFEST.json carries: typed records, apart from their collection.

Here, apart from :mod:`collectors.inventory` (which reads them through psutil, NVML and Docker),
so that writing and auditing a manifest loads none of those.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec

Availability = Literal["ok", "unavailable"]


class CpuFacts(Spec):
    model: str | None = Field(description="CPU model name from /proc/cpuinfo, where readable.")
    logical_cores: int | None = Field(description="Logical CPUs of the host.")
    physical_cores: int | None = Field(description="Physical cores, where psutil can tell.")
    architecture: str = Field(description="Machine architecture, e.g. x86_64.")


class HostMemory(Spec):
    total_bytes: int = Field(description="Host memory total.")
    available_bytes: int = Field(description="Host memory available when the bundle was written.")


class KernelFacts(Spec):
    system: str = Field(description="Operating system, e.g. Linux.")
    release: str = Field(description="Kernel release.")
    version: str = Field(description="Kernel build version string.")


class GpuDevice(Spec):
    index: int = Field(description="NVML device index.")
    name: str = Field(description="Device name.")
    uuid: str | None = Field(description="Device UUID.")
    memory_total_bytes: int | None = Field(description="Device memory total.")


class GpuFacts(Spec):
    status: Availability = Field(description="ok, or unavailable (no driver, no device).")
    detail: str | None = Field(description="Why NVML could not be read, when it could not.")
    driver_version: str | None = Field(description="NVIDIA driver version.")
    devices: list[GpuDevice] = Field(description="Every device NVML lists.")


class DockerFacts(Spec):
    status: Availability = Field(description="ok, or unavailable (no daemon reachable).")
    detail: str | None = Field(description="Why the daemon could not be asked.")
    server_version: str | None = Field(description="Docker Engine version.")
    api_version: str | None = Field(description="Docker API version.")


class SourceFacts(Spec):
    git_sha: str | None = Field(description="Commit of faceoff's checkout, when it is one.")
    git_dirty: bool | None = Field(description="The checkout had uncommitted changes.")
    detail: str | None = Field(description="Why the commit is unknown, when it is.")


class HostFacts(Spec):
    hostname: str = Field(description="Host name.")
    python: str = Field(description="Python version faceoff ran under.")
    cpu: CpuFacts = Field(description="Processor.")
    memory: HostMemory = Field(description="Host memory.")
    kernel: KernelFacts = Field(description="Kernel.")
    gpu: GpuFacts = Field(description="GPUs and driver through NVML.")
    docker: DockerFacts = Field(description="Docker Engine.")
