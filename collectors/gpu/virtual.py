"""A virtual NVML for simulator lanes: the collectors' ``Nvml`` interface over ``/_sim/gpu``.

A simulator lane has no GPU, yet its arm's GPU path (energy, clock events, processes,
posture) must run end to end in the demo and the tests. The simulator models its GPUs
from its own engine steps (``simulator/gpu.py``); this provider reads that model over
HTTP, one fetch per sampler tick shared by every reading of the tick, and answers as
NVML would. Everything read through it is marked ``simulated``.

The arm's GPU ids map in order onto the simulator's devices. The simulator reports its
own process by the pid it sees, which in a container is not the host's; the lane's root
pid, when given, stands in for it, as NVML reports host pids. GPU utilization is the
share of the time between two fetches that the engine spent in steps.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from collectors.gpu.nvml import EccCounts, MemoryInfo, Modes, NvmlDevice, Utilization, XidCount

GPU_PATH = "/_sim/gpu"
MAX_AGE_NS = 250_000_000  # a tick's readings share one fetch; the next tick fetches anew


class VirtualGpuError(RuntimeError):
    """The simulator's GPU model could not be read (lane down, no such device)."""


def fetch_json(url: str, timeout_s: float) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:
        body: dict[str, Any] = json.load(answer)
        return body


@dataclass
class Busy:
    busy_ns: int
    at_ns: int


class VirtualNvml:
    simulated = True

    def __init__(
        self,
        base_url: str,
        gpu_ids: Sequence[int],
        *,
        lane_pid: int | None = None,
        timeout_s: float = 1.0,
        clock: Callable[[], int] = time.perf_counter_ns,
        fetch: Callable[[str, float], dict[str, Any]] = fetch_json,
    ) -> None:
        self.url = base_url.rstrip("/") + GPU_PATH
        self.gpu_ids = list(gpu_ids)
        self.lane_pid = lane_pid
        self.timeout_s = timeout_s
        self.clock = clock
        self._fetch = fetch
        self._snapshot: dict[str, Any] | None = None
        self._fetched_ns = 0
        self._busy: dict[int, Busy] = {}
        self._util: dict[int, int] = {}

    def init(self) -> None:
        self.snapshot(fresh=True)

    def device(self, index: int) -> NvmlDevice:
        if index not in self.gpu_ids:
            raise VirtualGpuError(f"GPU id {index} is not one of the arm's ({self.gpu_ids})")
        position = self.gpu_ids.index(index)
        if position >= self.device_count():
            raise VirtualGpuError(
                f"the simulator models {self.device_count()} GPU(s); GPU id {index} is the "
                f"arm's GPU number {position + 1} (start it with --gpus {len(self.gpu_ids)})"
            )
        return VirtualDevice(self, position)

    def device_count(self) -> int:
        return len(self.snapshot()["devices"])

    def driver_version(self) -> str:
        return f"{self.snapshot()['driver_version']} (simulated)"

    def cuda_driver_version(self) -> str:
        return str(self.snapshot()["cuda_driver_version"])

    def shutdown(self) -> None:
        self._snapshot = None

    def snapshot(self, *, fresh: bool = False) -> dict[str, Any]:
        now = self.clock()
        if fresh or self._snapshot is None or now - self._fetched_ns > MAX_AGE_NS:
            try:
                self._snapshot = self._fetch(self.url, self.timeout_s)
            except (OSError, ValueError) as exc:  # refused, timed out, not JSON
                raise VirtualGpuError(f"{self.url}: {exc}") from exc
            self._fetched_ns = now
            self._note_busy(self._snapshot)
        return self._snapshot

    def _note_busy(self, snapshot: dict[str, Any]) -> None:
        """Utilization of each device over the time since the previous fetch."""
        at = int(snapshot["now_ns"])
        for device in snapshot["devices"]:
            index, busy = int(device["index"]), int(device["busy_ns"])
            before = self._busy.get(index, Busy(0, 0))
            span = at - before.at_ns
            if span > 0:
                self._util[index] = round(100 * (busy - before.busy_ns) / span)
            self._busy[index] = Busy(busy, at)

    def reading(self, position: int) -> dict[str, Any]:
        device: dict[str, Any] = self.snapshot()["devices"][position]
        return device

    def utilization(self, position: int) -> int:
        self.snapshot()
        return self._util.get(position, 0)


class VirtualDevice:
    """One of the simulator's GPUs, read as NVML reads a device."""

    def __init__(self, nvml: VirtualNvml, position: int) -> None:
        self.nvml = nvml
        self.position = position

    def _get(self, key: str) -> Any:
        return self.nvml.reading(self.position)[key]

    def uuid(self) -> str:
        return str(self._get("uuid"))

    def name(self) -> str:
        return f"{self._get('name')} (simulated)"

    def memory(self) -> MemoryInfo:
        used, total = int(self._get("used_bytes")), int(self._get("total_bytes"))
        return MemoryInfo(used, total - used, total)

    def utilization(self) -> Utilization:
        busy = self.nvml.utilization(self.position)
        return Utilization(busy, busy // 2)

    def power_w(self) -> float:
        return float(self._get("power_w"))

    def temperature_c(self) -> int:
        return int(self._get("temperature_c"))

    def processes(self) -> list[tuple[int, int | None]]:
        found = [(int(pid), int(used)) for pid, used in self._get("processes")]
        own, lane = found[0][0], self.nvml.lane_pid
        return [(lane if pid == own and lane is not None else pid, used) for pid, used in found]

    def energy_mj(self) -> int:
        return int(self._get("energy_mj"))

    def clock_event_reasons(self) -> int:
        return int(self._get("clock_event_reasons"))

    def sm_clock_mhz(self) -> int:
        return int(self._get("sm_clock_mhz"))

    def max_sm_clock_mhz(self) -> int:
        return int(self._get("max_sm_clock_mhz"))

    def ecc_errors(self) -> EccCounts:
        return EccCounts(int(self._get("ecc_corrected")), int(self._get("ecc_uncorrected")))

    def xid_errors(self) -> XidCount:
        last = self._get("last_xid")
        return XidCount(int(self._get("xid_errors")), None if last is None else int(last))

    def persistence_mode(self) -> bool:
        return bool(self._get("persistence_mode"))

    def power_limit_w(self) -> float:
        return float(self._get("power_limit_w"))

    def default_power_limit_w(self) -> float:
        return float(self._get("default_power_limit_w"))

    def enforced_power_limit_w(self) -> float:
        return float(self._get("enforced_power_limit_w"))

    def application_sm_clock_mhz(self) -> int:
        return int(self._get("application_sm_clock_mhz"))

    def application_memory_clock_mhz(self) -> int:
        return int(self._get("application_memory_clock_mhz"))

    def vbios_version(self) -> str:
        return str(self._get("vbios_version"))

    def mig_mode(self) -> Modes:
        current, pending = self._get("mig_mode")
        return Modes(bool(current), bool(pending))

    def ecc_mode(self) -> Modes:
        current, pending = self._get("ecc_mode")
        return Modes(bool(current), bool(pending))


def nvml_for_arm(
    *, simulator: bool, base_url: str, gpu_ids: Sequence[int], lane_pid: int | None
) -> VirtualNvml | None:
    """The virtual NVML for a simulator arm with GPU ids; None: the real one applies."""
    if not simulator or not gpu_ids:
        return None
    return VirtualNvml(base_url, gpu_ids, lane_pid=lane_pid)
