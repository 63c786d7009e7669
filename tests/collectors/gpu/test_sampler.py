"""The GPU sampler through its NVML interface: a fake device set, and the real library here.

Tests named ``..._with_fake_nvml_...`` substitute the device set (no GPU on this
machine or in CI); tests/gpu runs the real NVML on a GPU host.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pynvml
import pytest

from collectors.gpu.clock_events import HW_THERMAL_SLOWDOWN, SW_POWER_CAP, reason_names
from collectors.gpu.nvml import (
    EccCounts,
    MemoryInfo,
    Modes,
    PynvmlLibrary,
    Utilization,
    XidCount,
)
from collectors.gpu.owner import LaneProcessOwner
from collectors.gpu.sampler import GpuSampler
from collectors.host import MemoryTarget
from collectors.memory_summary import gpu_summary
from collectors.sampler import Clocks, Tick
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import GpuSample, ReadStatus
from faceoff.formats.attempt.stalls import CellWindow

GIB = 2**30
PERIOD = 2_000_000_000
NO_SUCH_PID = 4_194_303  # above any pid this host hands out in a test run


def nvml_error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)  # the library's own exception subclass for that code


@dataclass
class FakeDevice:
    index: int
    used_gib: float
    total_gib: float = 96.0
    util: int = 50
    power: float = 300.0
    energy: int = 5_000_000
    reasons: int = 0
    power_limit: float = 600.0
    listed: list[tuple[int, int | None]] = field(default_factory=list)
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
        return self.listed or [(4242, int(self.used_gib * GIB) - GIB), (4343, None)]

    def energy_mj(self) -> int:
        self._check("energy")
        return self.energy

    def clock_event_reasons(self) -> int:
        self._check("clock event reasons")
        return self.reasons

    def sm_clock_mhz(self) -> int:
        self._check("sm clock")
        return 1200 if self.reasons else 1980

    def max_sm_clock_mhz(self) -> int:
        self._check("max sm clock")
        return 1980

    def ecc_errors(self) -> EccCounts:
        self._check("ecc errors")
        return EccCounts(3, 0)

    def xid_errors(self) -> XidCount:
        self._check("xid errors")
        return XidCount(0, None)

    def persistence_mode(self) -> bool:
        self._check("persistence mode")
        return True

    def power_limit_w(self) -> float:
        return self.power_limit

    def default_power_limit_w(self) -> float:
        return 600.0

    def enforced_power_limit_w(self) -> float:
        return self.power_limit

    def application_sm_clock_mhz(self) -> int:
        return 1980

    def application_memory_clock_mhz(self) -> int:
        return 2619

    def vbios_version(self) -> str:
        return "97.00.5E.00.01"

    def mig_mode(self) -> Modes:
        self._check("mig mode")
        return Modes(current=False, pending=False)

    def ecc_mode(self) -> Modes:
        return Modes(current=True, pending=True)


@dataclass
class FakeNvml:
    devices: dict[int, FakeDevice]
    simulated = False
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

    def device_count(self) -> int:
        return len(self.devices)

    def driver_version(self) -> str:
        return "580.65.06"

    def cuda_driver_version(self) -> str:
        return "13.0"

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


def test_energy_clock_events_ecc_and_xid_are_read_each_tick_with_fake_nvml(tmp_path: Path) -> None:
    hot = FakeDevice(0, 10.0, energy=7_250_000, reasons=SW_POWER_CAP | HW_THERMAL_SLOWDOWN)
    found = run_ticks(GpuSampler(FakeNvml({0: hot}), [0], tmp_path, clocks=Clocks()), 1)
    reading = found[0].devices[0]
    assert found[0].schema_version == 2 and found[0].simulated is False
    assert reading.energy_mj == 7_250_000
    assert reading.clock_event_reasons == SW_POWER_CAP | HW_THERMAL_SLOWDOWN
    assert reason_names(reading.clock_event_reasons) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert reading.slowed_down is True
    assert (reading.sm_clock_mhz, reading.max_sm_clock_mhz) == (1200, 1980)
    assert (reading.ecc_corrected, reading.ecc_uncorrected) == (3, 0)
    assert (reading.xid_errors, reading.last_xid) == (0, None)
    assert reading.errors == []


def test_a_consumer_board_without_energy_ecc_or_events_degrades_per_reading_with_fake_nvml(
    tmp_path: Path,
) -> None:
    unsupported = pynvml.NVML_ERROR_NOT_SUPPORTED
    board = FakeDevice(
        0, 10.0, fail=dict.fromkeys(("energy", "ecc errors", "xid errors"), unsupported)
    )
    found = run_ticks(GpuSampler(FakeNvml({0: board}), [0], tmp_path, clocks=Clocks()), 1)
    reading = found[0].devices[0]
    assert found[0].status is ReadStatus.OK
    assert (reading.energy_mj, reading.ecc_uncorrected, reading.xid_errors) == (None, None, None)
    assert reading.clock_event_reasons == 0 and reading.slowed_down is False
    assert [e.split(":")[0] for e in reading.errors] == ["ecc errors", "xid errors", "energy"]


def test_a_version_1_gpu_line_still_reads(tmp_path: Path) -> None:
    line = {
        "schema_version": 1, "seq": 0, "final": False, "period_ns": PERIOD, "scheduled_ns": 0,
        "actual_ns": 5, "wall_utc": "2025-01-01T00:00:00Z", "latency_ns": 1, "status": "ok",
        "devices": [{"index": 0, "used_bytes": 1, "free_bytes": 2, "total_bytes": 3,
                     "processes": [{"pid": 7, "used_bytes": None}], "errors": []}],
    }  # fmt: skip
    path = tmp_path / "gpu.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (sample,), bad = read_samples(path, GpuSample)
    assert bad == 0 and sample.schema_version == 1 and sample.simulated is False
    reading = sample.devices[0]
    assert reading.energy_mj is None and reading.slowed_down is None
    assert reading.processes is not None and reading.processes[0].lane is None


def test_processes_are_told_apart_as_the_lane_s_or_foreign_with_fake_nvml(tmp_path: Path) -> None:
    # The lane is a real process tree: a shell and its child. NVML (faked) lists the child,
    # the orchestrator itself, and a pid that does not exist on this host.
    lane = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    try:
        child = wait_for_child(lane.pid)
        owner = LaneProcessOwner(MemoryTarget(pid=lane.pid))
        assert owner.owns(child) is True and owner.owns(lane.pid) is True
        assert owner.owns(os.getpid()) is False
        assert owner.owns(NO_SUCH_PID) is False
        device = FakeDevice(0, 10.0)
        device.listed = [(child, GIB), (os.getpid(), None)]
        found = run_ticks(
            GpuSampler(FakeNvml({0: device}), [0], tmp_path, clocks=Clocks(), owner=owner), 1
        )
    finally:
        lane.kill()
        lane.wait()
    processes = found[0].devices[0].processes or []
    assert [(p.pid, p.lane) for p in processes] == [(child, True), (os.getpid(), False)]


def test_a_container_lane_owns_the_processes_of_its_cgroup(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    for pid, cgroup in ((11, "0::/system.slice/docker-abc123.scope"), (12, "0::/user.slice")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(cgroup + "\n")
    owner = LaneProcessOwner(MemoryTarget(container_id="abc123"), proc=proc)
    assert (owner.owns(11), owner.owns(12), owner.owns(13)) == (True, False, False)


def wait_for_child(pid: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = psutil.Process(pid).children()
        if children:
            return int(children[0].pid)
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} started no child within 30 s")


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
