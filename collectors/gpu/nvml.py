"""NVML behind a small interface, so the GPU sampler runs against a real or a virtual device set.

The real implementation calls ``pynvml`` (nvidia-ml-py). Importing it is safe on
a host without a driver: the library is only loaded by ``init``, which raises
there, and the sampler records that as "unavailable" instead of crashing. Every
reading may raise on its own (``NVMLError_NotSupported`` on a consumer board);
callers record which reading failed and why, and keep the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import pynvml

MW_PER_W = 1000.0
VOLATILE = pynvml.NVML_VOLATILE_ECC  # since the driver loaded (not the lifetime total)
ENABLED = pynvml.NVML_FEATURE_ENABLED
T = TypeVar("T")


@dataclass(frozen=True)
class MemoryInfo:
    used_bytes: int
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class Utilization:
    gpu_percent: int
    memory_percent: int


@dataclass(frozen=True)
class EccCounts:
    """Volatile ECC error totals (since the driver loaded)."""

    corrected: int
    uncorrected: int


@dataclass(frozen=True)
class XidCount:
    """Xid critical-error events seen since the device was opened, and the last one's code."""

    count: int
    last: int | None


@dataclass(frozen=True)
class Modes:
    """A setting that takes effect at the next reset: what holds now, and what is pending."""

    current: bool
    pending: bool


class NvmlDevice(Protocol):
    """One GPU. Each call may raise (NVMLError on a real device); callers record why."""

    # What the sampler reads every tick.
    def uuid(self) -> str: ...

    def name(self) -> str: ...

    def memory(self) -> MemoryInfo: ...

    def utilization(self) -> Utilization: ...

    def power_w(self) -> float: ...

    def temperature_c(self) -> int: ...

    def processes(self) -> list[tuple[int, int | None]]: ...

    def energy_mj(self) -> int: ...

    def clock_event_reasons(self) -> int: ...

    def sm_clock_mhz(self) -> int: ...

    def max_sm_clock_mhz(self) -> int: ...

    def ecc_errors(self) -> EccCounts: ...

    def xid_errors(self) -> XidCount: ...

    # What the GPU posture reads at the start and end of a campaign and of a lane.
    def persistence_mode(self) -> bool: ...

    def power_limit_w(self) -> float: ...

    def default_power_limit_w(self) -> float: ...

    def enforced_power_limit_w(self) -> float: ...

    def application_sm_clock_mhz(self) -> int: ...

    def application_memory_clock_mhz(self) -> int: ...

    def vbios_version(self) -> str: ...

    def mig_mode(self) -> Modes: ...

    def ecc_mode(self) -> Modes: ...


class Nvml(Protocol):
    """The library: init once per reader, a handle per GPU id, shutdown at the end.

    ``simulated`` is True for the virtual provider of a simulator lane: every sample
    and posture read through it says so.
    """

    simulated: bool

    def init(self) -> None: ...

    def device(self, index: int) -> NvmlDevice: ...

    def device_count(self) -> int: ...

    def driver_version(self) -> str: ...

    def cuda_driver_version(self) -> str: ...

    def shutdown(self) -> None: ...


class PynvmlDevice:
    def __init__(self, handle: object) -> None:
        self._handle = handle
        self._xid = XidWatch(handle)

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
        return float(pynvml.nvmlDeviceGetPowerUsage(self._handle)) / MW_PER_W

    def temperature_c(self) -> int:
        return int(pynvml.nvmlDeviceGetTemperature(self._handle, pynvml.NVML_TEMPERATURE_GPU))

    def processes(self) -> list[tuple[int, int | None]]:
        found = pynvml.nvmlDeviceGetComputeRunningProcesses(self._handle)
        return [(int(p.pid), _used(p.usedGpuMemory)) for p in found]

    def energy_mj(self) -> int:
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))

    def clock_event_reasons(self) -> int:
        try:
            return int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(self._handle))
        except pynvml.NVMLError_FunctionNotFound:  # drivers before 535 name it "throttle"
            return int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(self._handle))

    def sm_clock_mhz(self) -> int:
        return int(pynvml.nvmlDeviceGetClockInfo(self._handle, pynvml.NVML_CLOCK_SM))

    def max_sm_clock_mhz(self) -> int:
        return int(pynvml.nvmlDeviceGetMaxClockInfo(self._handle, pynvml.NVML_CLOCK_SM))

    def ecc_errors(self) -> EccCounts:
        def total(kind: int) -> int:
            return int(pynvml.nvmlDeviceGetTotalEccErrors(self._handle, kind, VOLATILE))

        corrected = total(pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED)
        return EccCounts(corrected, total(pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED))

    def xid_errors(self) -> XidCount:
        return self._xid.poll()

    def persistence_mode(self) -> bool:
        return bool(pynvml.nvmlDeviceGetPersistenceMode(self._handle) == ENABLED)

    def power_limit_w(self) -> float:
        return float(pynvml.nvmlDeviceGetPowerManagementLimit(self._handle)) / MW_PER_W

    def default_power_limit_w(self) -> float:
        return float(pynvml.nvmlDeviceGetPowerManagementDefaultLimit(self._handle)) / MW_PER_W

    def enforced_power_limit_w(self) -> float:
        return float(pynvml.nvmlDeviceGetEnforcedPowerLimit(self._handle)) / MW_PER_W

    def application_sm_clock_mhz(self) -> int:
        return int(pynvml.nvmlDeviceGetApplicationsClock(self._handle, pynvml.NVML_CLOCK_SM))

    def application_memory_clock_mhz(self) -> int:
        return int(pynvml.nvmlDeviceGetApplicationsClock(self._handle, pynvml.NVML_CLOCK_MEM))

    def vbios_version(self) -> str:
        return _text(pynvml.nvmlDeviceGetVbiosVersion(self._handle))

    def mig_mode(self) -> Modes:
        current, pending = pynvml.nvmlDeviceGetMigMode(self._handle)
        return Modes(current == ENABLED, pending == ENABLED)

    def ecc_mode(self) -> Modes:
        current, pending = pynvml.nvmlDeviceGetEccMode(self._handle)
        return Modes(current == ENABLED, pending == ENABLED)

    def close(self) -> None:
        self._xid.close()


class XidWatch:
    """Xid critical errors come as NVML events, not as a counter: a per-device event set,
    registered at the first poll and drained without waiting at each one, counts them."""

    def __init__(self, handle: object) -> None:
        self._handle = handle
        self._events: object | None = None
        self._count = 0
        self._last: int | None = None

    def poll(self) -> XidCount:
        if self._events is None:
            events = pynvml.nvmlEventSetCreate()
            try:
                pynvml.nvmlDeviceRegisterEvents(
                    self._handle, pynvml.nvmlEventTypeXidCriticalError, events
                )
            except pynvml.NVMLError:
                pynvml.nvmlEventSetFree(events)
                raise
            self._events = events
        self._drain()
        return XidCount(self._count, self._last)

    def _drain(self) -> None:
        while True:
            try:
                event = pynvml.nvmlEventSetWait_v2(self._events, 0)
            except pynvml.NVMLError_Timeout:  # no event pending
                return
            if event.eventType == pynvml.nvmlEventTypeXidCriticalError:
                self._count += 1
                self._last = int(event.eventData)

    def close(self) -> None:
        if self._events is not None:
            pynvml.nvmlEventSetFree(self._events)
            self._events = None


class PynvmlLibrary:
    """The real NVML, through nvidia-ml-py."""

    simulated = False

    def __init__(self) -> None:
        self._opened: list[PynvmlDevice] = []

    def init(self) -> None:
        pynvml.nvmlInit()

    def device(self, index: int) -> NvmlDevice:
        device = PynvmlDevice(pynvml.nvmlDeviceGetHandleByIndex(index))
        self._opened.append(device)
        return device

    def device_count(self) -> int:
        return int(pynvml.nvmlDeviceGetCount())

    def driver_version(self) -> str:
        return _text(pynvml.nvmlSystemGetDriverVersion())

    def cuda_driver_version(self) -> str:
        version = int(pynvml.nvmlSystemGetCudaDriverVersion())  # 12040 means 12.4
        return f"{version // 1000}.{version % 1000 // 10}"

    def shutdown(self) -> None:
        for device in self._opened:
            try:
                device.close()
            except pynvml.NVMLError:  # its event set went with a lost GPU: nothing to free
                continue
        self._opened = []
        pynvml.nvmlShutdown()


@dataclass
class Attempts:
    """Readings taken one by one: a failing one is None, and ``errors`` says which and why."""

    errors: list[str] = field(default_factory=list)

    def read(self, what: str, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except Exception as exc:  # NVMLError_NotSupported and friends: say which reading
            self.errors.append(f"{what}: {why(exc)}")
            return None


def why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _used(value: int | None) -> int | None:
    # NVML reports "not available" (e.g. no access to another pid namespace) as None or ~0.
    if value is None or value >= 2**63:
        return None
    return int(value)
