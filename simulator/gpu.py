"""The GPUs the simulated engine runs on: power that follows its steps, and GPU faults.

What ``GET /_sim/gpu`` reports and faceoff's virtual NVML (``collectors/gpu/virtual.py``)
turns into NVML readings. Every device of the lane is equally busy (tensor parallel):

- power: idle between steps; during a step idle + (max − idle) × intensity, where the
  intensity is ½ + ½ × the larger of the step's share of the prefill budget and of the
  decode slots (a GPU running any kernel draws well above idle). The energy counter
  integrates that power over real time, step by step, so it is exact where sampled power
  is not; like every time of a simulated lane it is of the scaled run (a time-scaled
  engine does its work, and spends its energy, ``time_scale`` times faster);
- memory: the weights and the KV pool split over the devices, plus a fixed overhead,
  reserved at start as vLLM does (it does not follow KV usage);
- faults (``[faults]``, counted in generation requests like the crash fault): a thermal
  slowdown (clock-event reasons set, SM clock down, steps longer by the clock ratio,
  dynamic power down with it), a foreign compute process on the first device, and an
  Xid 48 with an uncorrected ECC error.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.faults import FaultState
from simulator.profile import GpuSpec, Profile
from simulator.scheduler import Step

GIB = 2**30
NS = 1e9
BASE_INTENSITY = 0.5
FOREIGN_PID = 4_194_303  # no process of this host has it (the highest pid Linux allows)
XID_DOUBLE_BIT_ECC = 48
SW_THERMAL, HW_THERMAL, GPU_IDLE = 0x20, 0x40, 0x1  # NVML clock-event reason bits
DRIVER, CUDA = "580.65.06", "13.0"  # what a virtual GPU reports as its driver


@dataclass
class Meter:
    """Power of one device over time, and the energy and busy time it adds up to."""

    since_ns: int
    watts: float
    busy: bool = False
    energy_j: float = 0.0
    busy_ns: int = 0

    def switch(self, at_ns: int, watts: float, *, busy: bool) -> None:
        at_ns = max(at_ns, self.since_ns)
        self.energy_j += self.watts * (at_ns - self.since_ns) / NS
        self.busy_ns += (at_ns - self.since_ns) if self.busy else 0
        self.since_ns, self.watts, self.busy = at_ns, watts, busy

    def read(self, now_ns: int) -> tuple[float, int]:
        """Energy (J) and busy time (ns) up to ``now_ns``."""
        elapsed = max(now_ns - self.since_ns, 0)
        return self.energy_j + self.watts * elapsed / NS, self.busy_ns + (
            elapsed if self.busy else 0
        )


@dataclass
class VirtualGpus:
    profile: Profile
    devices: int
    faults: FaultState
    clock: Callable[[], int]
    started_ns: int = 0
    meter: Meter = field(init=False)

    def __post_init__(self) -> None:
        self.started_ns = self.started_ns or self.clock()
        self.meter = Meter(self.started_ns, self.spec.idle_w)

    @property
    def spec(self) -> GpuSpec:
        return self.profile.gpu

    @property
    def throttled(self) -> bool:
        spec, arrivals = self.faults.spec, self.faults.arrivals
        after, lasting = spec.gpu_throttle_after_requests, spec.gpu_throttle_requests
        return bool(after) and arrivals > after and (not lasting or arrivals <= after + lasting)

    @property
    def clock_ratio(self) -> float:
        """SM clock over its maximum: below 1 while throttled."""
        spec = self.spec
        return spec.throttled_sm_clock_mhz / spec.max_sm_clock_mhz if self.throttled else 1.0

    def step_started(self, at_ns: int, step: Step) -> None:
        self.meter.switch(at_ns, self._watts(step), busy=True)

    def idle(self, at_ns: int) -> None:
        self.meter.switch(at_ns, self.spec.idle_w, busy=False)

    def _watts(self, step: Step) -> float:
        engine, spec = self.profile.engine, self.spec
        prefill = sum(tokens for _seq, _start, tokens in step.prefill)
        share = max(prefill / engine.max_num_batched_tokens, len(step.decode) / engine.max_num_seqs)
        intensity = BASE_INTENSITY + (1 - BASE_INTENSITY) * min(share, 1.0)
        return spec.idle_w + (spec.max_w - spec.idle_w) * intensity * self.clock_ratio

    def snapshot(self) -> dict[str, Any]:
        """What ``GET /_sim/gpu`` answers."""
        now = self.clock()
        return {
            "simulated": True,
            "driver_version": DRIVER,
            "cuda_driver_version": CUDA,
            "now_ns": now - self.started_ns,
            "devices": [self._device(i, now) for i in range(self.devices)],
        }

    def _device(self, index: int, now: int) -> dict[str, Any]:
        spec, energy_j, busy_ns = self.spec, *self.meter.read(now)
        processes = [[os.getpid(), self._lane_bytes()], *self._foreign(index)]
        used = sum(b for _pid, b in processes)
        return {
            "index": index,
            "uuid": f"GPU-5e3a0000-0000-4000-8000-{index:012d}",
            "name": spec.name,
            "total_bytes": int(spec.memory_gib * GIB),
            "used_bytes": min(used, int(spec.memory_gib * GIB)),
            "power_w": self.meter.watts,
            "energy_mj": int(energy_j * 1000),
            "busy_ns": busy_ns,
            "temperature_c": self._temperature(),
            "sm_clock_mhz": round(spec.max_sm_clock_mhz * self.clock_ratio),
            "max_sm_clock_mhz": spec.max_sm_clock_mhz,
            "clock_event_reasons": self._reasons(),
            "processes": processes,
            **self._errors(index),
            **self._posture(),
        }

    def _lane_bytes(self) -> int:
        model, spec = self.profile.model, self.spec
        return int(
            ((model.model_load_gib + model.kv_cache_gib) / self.devices + spec.overhead_gib) * GIB
        )

    def _foreign(self, index: int) -> list[list[int]]:
        after = self.faults.spec.gpu_foreign_after_requests
        if index != 0 or not after or self.faults.arrivals <= after:
            return []
        return [[FOREIGN_PID, int(self.faults.spec.gpu_foreign_gib * GIB)]]

    def _errors(self, index: int) -> dict[str, Any]:
        after = self.faults.spec.gpu_xid_after_requests
        hit = index == 0 and bool(after) and self.faults.arrivals > after
        return {
            "ecc_corrected": 0,
            "ecc_uncorrected": int(hit),
            "xid_errors": int(hit),
            "last_xid": XID_DOUBLE_BIT_ECC if hit else None,
        }

    def _reasons(self) -> int:
        if self.throttled:
            return SW_THERMAL | HW_THERMAL
        return 0 if self.meter.busy else GPU_IDLE

    def _temperature(self) -> int:
        spec = self.spec
        if self.throttled:
            return 91
        load = (self.meter.watts - spec.idle_w) / (spec.max_w - spec.idle_w or 1.0)
        return round(34 + 40 * load)

    def _posture(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "persistence_mode": True,
            "power_limit_w": spec.max_w,
            "default_power_limit_w": spec.max_w,
            "enforced_power_limit_w": spec.max_w,
            "application_sm_clock_mhz": spec.max_sm_clock_mhz,
            "application_memory_clock_mhz": 14001,
            "vbios_version": "98.02.2E.00.01",
            "mig_mode": [False, False],
            "ecc_mode": [True, True],
        }
