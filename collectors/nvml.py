"""NVML behind a small interface, so the GPU sampler runs against a fake device set in tests.

The real implementation calls ``pynvml`` (nvidia-ml-py). Importing it is safe on
a host without a driver: the library is only loaded by ``init``, which raises
there, and the sampler records that as "unavailable" instead of crashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pynvml


@dataclass(frozen=True)
class MemoryInfo:
    used_bytes: int
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class Utilization:
    gpu_percent: int
    memory_percent: int


class NvmlDevice(Protocol):
    """One GPU. Each call may raise (NVMLError on a real device); the sampler records why."""

    def uuid(self) -> str: ...

    def name(self) -> str: ...

    def memory(self) -> MemoryInfo: ...

    def utilization(self) -> Utilization: ...

    def power_w(self) -> float: ...

    def temperature_c(self) -> int: ...

    def processes(self) -> list[tuple[int, int | None]]: ...


class Nvml(Protocol):
    """The library: init once per sampler, a handle per GPU id, shutdown at the end."""

    def init(self) -> None: ...

    def device(self, index: int) -> NvmlDevice: ...

    def shutdown(self) -> None: ...


class PynvmlDevice:
    def __init__(self, handle: object) -> None:
        self._handle = handle

    def uuid(self) -> str:
        return _text(pynvml.nvmlDeviceGetUUID(self._handle))

    def name(self) -> str:
        return _text(pynvml.nvmlDeviceGetName(self._handle))

    def memory(self) -> MemoryInfo:
        info = pynvml.nvmlDeviceGetMemoryInfo(self._handle)
        return MemoryInfo(int(info.used), int(info.free), int(info.total))

    def utilization(self) -> Utilization:
        rates = pynvml.nvmlDeviceGetUtilizationRates(self._handle)
        return Utilization(int(rates.gpu), int(rates.memory))

    def power_w(self) -> float:
        return float(pynvml.nvmlDeviceGetPowerUsage(self._handle)) / 1000.0

    def temperature_c(self) -> int:
        return int(pynvml.nvmlDeviceGetTemperature(self._handle, pynvml.NVML_TEMPERATURE_GPU))

    def processes(self) -> list[tuple[int, int | None]]:
        found = pynvml.nvmlDeviceGetComputeRunningProcesses(self._handle)
        return [(int(p.pid), _used(p.usedGpuMemory)) for p in found]


class PynvmlLibrary:
    """The real NVML, through nvidia-ml-py."""

    def init(self) -> None:
        pynvml.nvmlInit()

    def device(self, index: int) -> NvmlDevice:
        return PynvmlDevice(pynvml.nvmlDeviceGetHandleByIndex(index))

    def shutdown(self) -> None:
        pynvml.nvmlShutdown()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _used(value: int | None) -> int | None:
    # NVML reports "not available" (e.g. no access to another pid namespace) as None or ~0.
    if value is None or value >= 2**63:
        return None
    return int(value)
