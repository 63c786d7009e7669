"""The GPU sampler through its NVML interface: a fake device set, and the real library here.

Tests named ``..._with_fake_nvml_...`` substitute the device set (no GPU on this
machine or in CI); tests/gpu runs the real NVML on a GPU host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pynvml
import pytest

from collectors.gpu import GpuSampler
from collectors.memory_summary import gpu_summary
from collectors.nvml import MemoryInfo, PynvmlLibrary, Utilization
from collectors.records import CellWindow
from collectors.sampler import Clocks, Tick
from collectors.samples import GpuSample, ReadStatus
from collectors.settings import CollectorSettings
from collectors.summary import read_samples

GIB = 2**30
PERIOD = 2_000_000_000


def nvml_error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)  # the library's own exception subclass for that code


@dataclass
class FakeDevice:
    index: int
    used_gib: float
    total_gib: float = 96.0
    util: int = 50
    power: float = 300.0
    fail: dict[str, int] = field(default_factory=dict)  # reading -> NVML error code

    def _check(self, what: str) -> None:
        if what in self.fail:
            raise nvml_error(self.fail[what])

    def uuid(self) -> str:
        return f"GPU-fake-{self.index}"

    def name(self) -> str:
        return "Fake RTX PRO 6000"

    def memory(self) -> MemoryInfo:
        self._check("memory")
        used, total = int(self.used_gib * GIB), int(self.total_gib * GIB)
        return MemoryInfo(used, total - used, total)

    def utilization(self) -> Utilization:
        self._check("utilization")
        return Utilization(self.util, self.util // 2)

    def power_w(self) -> float:
        self._check("power")
        return self.power

    def temperature_c(self) -> int:
        self._check("temperature")
        return 61

    def processes(self) -> list[tuple[int, int | None]]:
        self._check("processes")
        return [(4242, int(self.used_gib * GIB) - GIB), (4343, None)]


@dataclass
class FakeNvml:
    devices: dict[int, FakeDevice]
    init_failures: int = 0  # init raises this many times, then works
    inits: int = 0
    shutdowns: int = 0

    def init(self) -> None:
        self.inits += 1
        if self.inits <= self.init_failures:
            raise nvml_error(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)

    def device(self, index: int) -> FakeDevice:
        if index not in self.devices:
            raise nvml_error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.devices[index]

    def shutdown(self) -> None:
        self.shutdowns += 1


def run_ticks(sampler: GpuSampler, count: int, between=None) -> list[GpuSample]:  # type: ignore[no-untyped-def]
    sampler.open()
    for seq in range(count):
        due = seq * PERIOD
        sampler.take(Tick(seq, due, due, PERIOD))
        if between:
            between(seq)
    sampler.close()
    found, bad = read_samples(sampler.path, GpuSample)
    assert bad == 0
    return found


def test_each_arm_gpu_is_read_with_fake_nvml(tmp_path: Path) -> None:
    nvml = FakeNvml({0: FakeDevice(0, 80.0), 1: FakeDevice(1, 93.4), 2: FakeDevice(2, 1.0)})
    found = run_ticks(GpuSampler(nvml, [0, 1], tmp_path, clocks=Clocks()), 3)
    assert [s.status for s in found] == [ReadStatus.OK] * 3
    readings = found[0].devices
    assert [r.index for r in readings] == [0, 1]  # only the arm's GPU ids
    first = readings[1]
    assert first.used_bytes == int(93.4 * GIB) and first.total_bytes == 96 * GIB
    assert first.free_bytes == first.total_bytes - first.used_bytes
    assert (first.util_percent, first.power_w, first.temperature_c) == (50, 300.0, 61)
    assert first.processes is not None and first.processes[1].used_bytes is None
    assert nvml.inits == 1 and nvml.shutdowns == 1


def test_missing_nvml_marks_samples_unavailable_and_recovers_with_fake_nvml(tmp_path: Path) -> None:
    # NVML fails at open and at the first two ticks, then the driver is back.
    nvml = FakeNvml({0: FakeDevice(0, 10.0)}, init_failures=3)
    found = run_ticks(GpuSampler(nvml, [0], tmp_path, clocks=Clocks()), 4)
    assert [s.status for s in found] == [ReadStatus.UNAVAILABLE] * 2 + [ReadStatus.OK] * 2
    assert found[0].error is not None
    assert found[0].error.startswith("NVML unavailable: NVMLError_DriverNotLoaded")
    assert found[0].devices == []


def test_an_unknown_gpu_id_is_unavailable_with_the_reason_with_fake_nvml(tmp_path: Path) -> None:
    nvml = FakeNvml({0: FakeDevice(0, 10.0)})
    found = run_ticks(GpuSampler(nvml, [0, 7], tmp_path, clocks=Clocks()), 1)
    assert found[0].status is ReadStatus.UNAVAILABLE
    assert "no handle for GPU ids [0, 7]" in (found[0].error or "")


def test_an_unsupported_reading_is_marked_not_fatal_with_fake_nvml(tmp_path: Path) -> None:
    quiet = FakeDevice(0, 10.0, fail={"power": pynvml.NVML_ERROR_NOT_SUPPORTED})
    found = run_ticks(GpuSampler(FakeNvml({0: quiet}), [0], tmp_path, clocks=Clocks()), 1)
    reading = found[0].devices[0]
    assert found[0].status is ReadStatus.OK
    assert reading.power_w is None and reading.used_bytes is not None
    assert reading.errors == ["power: NVMLError_NotSupported: Not Supported"]


def test_a_device_losing_its_memory_reading_makes_the_sample_partial_with_fake_nvml(
    tmp_path: Path,
) -> None:
    devices = {0: FakeDevice(0, 10.0), 1: FakeDevice(1, 20.0)}

    def gpu_falls_off_the_bus(seq: int) -> None:
        if seq == 0:
            devices[1].fail["memory"] = pynvml.NVML_ERROR_GPU_IS_LOST

    found = run_ticks(
        GpuSampler(FakeNvml(devices), [0, 1], tmp_path, clocks=Clocks()), 2, gpu_falls_off_the_bus
    )
    assert [s.status for s in found] == [ReadStatus.OK, ReadStatus.PARTIAL]
    assert found[1].devices[1].errors[0].startswith("memory: NVMLError_GpuIsLost")


def test_summary_names_the_worst_single_gpu_never_the_sum_with_fake_nvml(tmp_path: Path) -> None:
    devices = {0: FakeDevice(0, 80.0), 1: FakeDevice(1, 90.0)}

    def load(seq: int) -> None:
        devices[0].used_gib += 15.0 if seq == 1 else 0.0  # device 0: 80, 80, 95, 95
        devices[1].used_gib -= 1.0  # device 1: 90, 89, 88, 87

    found = run_ticks(GpuSampler(FakeNvml(devices), [0, 1], tmp_path, clocks=Clocks()), 4, load)
    window = CellWindow(start_ns=0, end_ns=3 * PERIOD)
    summary = gpu_summary(found, window, CollectorSettings(), unreadable=0)
    assert summary.worst_device == 0
    assert summary.worst_used_bytes == int(95.0 * GIB)  # one device; the sum would be 185 GiB
    assert summary.min_free_bytes == 96 * GIB - int(95.0 * GIB)
    assert [d.max_used_bytes for d in summary.devices] == [int(95.0 * GIB), int(90.0 * GIB)]
    assert summary.families["gpu_memory"].coverage == 1.0


def test_the_real_nvml_on_a_host_without_a_gpu_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this host has a working NVML; tests/gpu covers it")
    found = run_ticks(GpuSampler(PynvmlLibrary(), [0], tmp_path, clocks=Clocks()), 2)
    assert [s.status for s in found] == [ReadStatus.UNAVAILABLE] * 2
    assert (found[0].error or "").startswith("NVML unavailable: NVMLError_LibraryNotFound")
