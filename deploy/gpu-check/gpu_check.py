"""Check a GPU host's NVML path as faceoff's collectors read it, and write a JSON report.

    deploy/gpu-check/gpu-check [--seconds 60] [--period 2] [--alloc-gib 2] [--out FILE]

For about a minute the collectors' own GPU sampler reads every GPU (NVML through
``collectors.gpu.nvml``, the process-owner check of ``collectors.gpu.owner``); through the
middle third it holds ``--alloc-gib`` on each GPU, allocated through the CUDA driver API
(libcuda via ctypes: cuInit, cuCtxCreate, cuMemAlloc; no framework, no network). The GPU
posture is read before and after. It then checks, per GPU, that every reading family was
read (ECC and Xid events may be unsupported on a consumer board: reported, not failed),
that the energy counter moved and gives an exact energy over the run, that the
clock-event reasons were readable, that the allocation showed in used memory and that
the process list named this process while it held it.

Exit status: 0 every check passed; 1 a check failed; 3 no NVIDIA GPU here (NVML or the
driver is missing, or it lists no GPU); 2 a usage error. The report is written in every
case.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from collectors.gpu.energy import cell_energy
from collectors.gpu.nvml import Nvml, PynvmlLibrary, why
from collectors.gpu.owner import LaneProcessOwner
from collectors.gpu.posture import collect_gpu_posture
from collectors.gpu.sampler import GpuSampler
from collectors.host import MemoryTarget
from collectors.sampler import Clocks, SamplerLoop
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples
from faceoff.artifact import Artifact, Spec
from faceoff.formats.attempt.collector_samples import GpuReading, GpuSample
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import CellEnergy
from faceoff.formats.gpu_posture import GpuPosture, gpu_posture_changes

EXIT_OK, EXIT_FAILED, EXIT_NO_GPU = 0, 1, 3
GIB = 2**30
# Reading families the collectors need on every GPU, and those a board may not support.
REQUIRED = ("memory", "utilization", "power", "temperature", "processes", "energy",
            "clock event reasons", "sm clock", "max sm clock", "uuid", "name")  # fmt: skip
OPTIONAL = ("ecc errors", "xid errors")
UNSUPPORTED = "NVMLError_NotSupported"


class NoGpu(RuntimeError):
    """No NVIDIA GPU can be used on this host."""


class Check(Spec):
    name: str = Field(description="What was checked.")
    ok: bool = Field(description="Whether it held.")
    detail: str = Field(description="The values behind it.")


class GpuCheckReport(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Report format version.")
    status: Literal["passed", "failed", "no_nvidia_gpu"] = Field(description="The result.")
    reason: str | None = Field(description="Why no GPU could be checked, when none could.")
    host: str = Field(description="Host name.")
    started_at: datetime = Field(description="When the check began (UTC).")
    seconds: float = Field(description="How long the GPUs were sampled.")
    alloc_bytes: int = Field(description="Device memory held on each GPU mid-run.")
    posture_start: GpuPosture | None = Field(description="GPU posture before sampling.")
    posture_end: GpuPosture | None = Field(description="GPU posture after sampling.")
    posture_changes: list[str] = Field(description="Settings that changed in between.")
    families: dict[int, dict[str, str]] = Field(
        description="GPU index -> reading family -> ok | unsupported | the first error."
    )
    energy: CellEnergy | None = Field(description="Energy over the run, per GPU.")
    samples: int = Field(description="GPU samples taken.")
    checks: list[Check] = Field(description="Every check, in order.")


class CudaDriver:
    """Just enough of the CUDA driver API to hold device memory."""

    def __init__(self) -> None:
        os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA ordinal = NVML index
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise NoGpu(f"CUDA driver library not found: {exc}") from exc
        self._check("cuInit", self.lib.cuInit(0))

    def _check(self, call: str, code: int) -> None:
        if code != 0:
            raise NoGpu(f"{call} failed with CUresult {code}")

    @contextmanager
    def allocation(self, ordinal: int, size: int) -> Iterator[None]:
        device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
        self._check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(device), ordinal))
        self._check("cuCtxCreate", self.lib.cuCtxCreate_v2(ctypes.byref(context), 0, device))
        try:
            self._check(
                "cuMemAlloc", self.lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size))
            )
            try:
                yield
            finally:
                self.lib.cuMemFree_v2(pointer)
        finally:
            self.lib.cuCtxDestroy_v2(context)


def gpu_ids(nvml: Nvml) -> list[int]:
    try:
        nvml.init()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        raise NoGpu(f"NVML unavailable: {why(exc)}") from exc
    try:
        count = nvml.device_count()
    finally:
        nvml.shutdown()
    if count == 0:
        raise NoGpu("NVML lists no GPU")
    return list(range(count))


def sample(
    nvml: Nvml, ids: Sequence[int], seconds: float, period_s: float, alloc_bytes: int
) -> tuple[list[GpuSample], CellWindow, Held]:
    """The collectors' sampler over ``ids``; memory held on each through the middle third."""
    driver = CudaDriver()
    settings = CollectorSettings(memory_period_s=period_s)
    owner = LaneProcessOwner(MemoryTarget(pid=os.getpid()))
    folder = Path(tempfile.mkdtemp(prefix="faceoff-gpu-check-"))
    sampler = GpuSampler(nvml, ids, folder, clocks=Clocks(), owner=owner)
    period = settings.memory_period_ns
    loop = SamplerLoop(sampler, period_ns=period, late_after_ns=settings.late_after_ns(period))
    loop.start()
    if not loop.wait_first(30):
        raise NoGpu("the GPU sampler took no first sample in 30 s")
    start = time.perf_counter_ns()  # the run: from after the first sample to before the drain
    time.sleep(seconds / 3)
    with ExitStack() as allocations:
        for index in ids:
            allocations.enter_context(driver.allocation(index, alloc_bytes))
        held_from = time.perf_counter_ns()
        time.sleep(seconds / 3)
        held = Held((held_from, time.perf_counter_ns()), alloc_bytes, os.getpid())
    time.sleep(seconds / 3)
    window = CellWindow(start_ns=start, end_ns=time.perf_counter_ns())
    loop.stop(timeout_s=30)
    samples, _ = read_samples(sampler.path, GpuSample)
    return samples, window, held


def families(samples: Sequence[GpuSample]) -> dict[int, dict[str, str]]:
    """Per GPU and reading family: ok, unsupported, or the first error seen."""
    found: dict[int, dict[str, str]] = {}
    for reading in (r for s in samples for r in s.devices):
        states = found.setdefault(reading.index, dict.fromkeys(REQUIRED + OPTIONAL, "ok"))
        for error in reading.errors:
            family, _, text = error.partition(": ")
            if states.get(family) == "ok":
                states[family] = "unsupported" if text.startswith(UNSUPPORTED) else text
    return found


@dataclass(frozen=True)
class Held:
    """What the run held on each GPU: from when to when, how many bytes, by which process."""

    span: tuple[int, int]  # perf_counter_ns
    bytes: int
    pid: int


def verify(
    samples: Sequence[GpuSample], window: CellWindow, held: Held
) -> tuple[list[Check], dict[int, dict[str, str]], CellEnergy]:
    """Every check over the samples of a run that held memory on each GPU."""
    by_family = families(samples)
    energy = cell_energy(samples, window)
    checks = [Check(name="samples taken", ok=len(samples) >= 3, detail=f"{len(samples)} samples")]
    for index, states in sorted(by_family.items()):
        readings = [(s.actual_ns, r) for s in samples for r in s.devices if r.index == index]
        checks += _device_checks(index, states, readings, held)
    exact = [d.index for d in energy.devices if d.method is not None and d.spans_window]
    checks.append(
        Check(name="exact energy over the run", ok=energy.exact,
              detail=f"{energy.joules} J over {energy.window_s:.1f} s; by counter on GPUs {exact}")
    )  # fmt: skip
    return checks, by_family, energy


def _device_checks(
    index: int, states: dict[str, str], readings: list[tuple[int, GpuReading]], held: Held
) -> list[Check]:
    failing = {f: s for f, s in states.items() if f in REQUIRED and s != "ok"}
    counter = [r.energy_mj for _, r in readings if r.energy_mj is not None]
    reasons = [r.clock_event_reasons for _, r in readings if r.clock_event_reasons is not None]
    inside = [r for at, r in readings if held.span[0] <= at <= held.span[1]]
    outside = [r for at, r in readings if at < held.span[0]]
    rise = min(_used(inside), default=0) - max(_used(outside), default=0)
    listed = [sorted({p.pid for p in r.processes or []}) for r in inside]
    return [
        Check(name=f"GPU {index}: every reading family", ok=not failing,
              detail=f"failing: {failing}" if failing else f"{states}"),
        Check(name=f"GPU {index}: the energy counter moved",
              ok=len(counter) >= 2 and counter[-1] > counter[0],
              detail=f"{counter[0] if counter else None} -> {counter[-1] if counter else None} mJ"),
        Check(name=f"GPU {index}: clock-event reasons readable", ok=len(reasons) == len(readings),
              detail=f"{len(reasons)} of {len(readings)} readings; masks {sorted(set(reasons))}"),
        Check(name=f"GPU {index}: used memory rose by the allocation",
              ok=bool(inside and outside) and rise >= 0.9 * held.bytes,
              detail=f"rose {rise / GIB:.2f} GiB for {held.bytes / GIB:.2f} GiB held"),
        Check(name=f"GPU {index}: the process list named this process",
              ok=bool(inside) and all(held.pid in pids for pids in listed),
              detail=f"pid {held.pid}; listed while held: {listed}"),
    ]  # fmt: skip


def _used(readings: list[GpuReading]) -> list[int]:
    return [r.used_bytes for r in readings if r.used_bytes is not None]


def run(args: argparse.Namespace) -> GpuCheckReport:
    started, nvml = datetime.now(UTC), PynvmlLibrary()
    alloc = int(args.alloc_gib * GIB)
    try:
        ids = gpu_ids(nvml)
        start = collect_gpu_posture(nvml, lambda: datetime.now(UTC), ids)
        samples, window, held = sample(nvml, ids, args.seconds, args.period, alloc)
    except NoGpu as exc:
        return GpuCheckReport(
            status="no_nvidia_gpu", reason=str(exc), host=platform.node(), started_at=started,
            seconds=0.0, alloc_bytes=alloc, posture_start=None, posture_end=None,
            posture_changes=[], families={}, energy=None, samples=0, checks=[],
        )  # fmt: skip
    end = collect_gpu_posture(nvml, lambda: datetime.now(UTC), ids)
    checks, by_family, energy = verify(samples, window, held)
    return GpuCheckReport(
        status="passed" if all(c.ok for c in checks) else "failed", reason=None,
        host=platform.node(), started_at=started, seconds=energy.window_s, alloc_bytes=alloc,
        posture_start=start, posture_end=end, posture_changes=gpu_posture_changes(start, end),
        families=by_family, energy=energy, samples=len(samples), checks=checks,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to sample")
    parser.add_argument("--period", type=float, default=2.0, help="the sampling period (s)")
    parser.add_argument("--alloc-gib", type=float, default=2.0, help="memory held per GPU")
    parser.add_argument("--out", type=Path, default=Path("gpu-check-report.json"))
    args = parser.parse_args(argv)
    report = run(args)
    report.write(args.out, replace=True)
    for check in report.checks:
        print(f"{'PASS' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    if report.status == "no_nvidia_gpu":
        print(f"gpu-check: no NVIDIA GPU: {report.reason} (report: {args.out})")
        return EXIT_NO_GPU
    print(f"gpu-check: {report.status} (report: {args.out})")
    return EXIT_OK if report.status == "passed" else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
