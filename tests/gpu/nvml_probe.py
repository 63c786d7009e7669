"""Exercise the real NVML path of the GPU sampler on a GPU host and print what it saw.

    .venv/bin/python -m tests.gpu.nvml_probe [--seconds 24] [--period 2] [--gpus 0,1]
                                            [--alloc-gib 4]

It samples the chosen GPUs (default: all) on the collectors' cadence loop, and
in the middle of the run allocates ``--alloc-gib`` on the first of them through
the CUDA driver API (libcuda via ctypes, no framework needed), holds it, and
frees it. It prints every sample, the cadence counts and the telemetry summary,
then checks that the sampled memory of that device rose by the allocation and
fell back. Exit status: 0 all checks passed, 1 a check failed, 2 no usable NVML
or CUDA driver on this host. It finishes well inside 3 minutes with the defaults.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pynvml

from collectors.gpu import GpuSampler
from collectors.memory_summary import GpuSummary, gpu_summary
from collectors.nvml import PynvmlLibrary
from collectors.records import CellWindow
from collectors.sampler import CadenceStats, Clocks, SamplerLoop
from collectors.samples import GpuSample, ReadStatus
from collectors.settings import CollectorSettings
from collectors.summary import read_samples

GIB = 2**30


class NoGpu(RuntimeError):
    """NVML or the CUDA driver is not usable here."""


@dataclass
class ProbeResult:
    samples: list[GpuSample]
    stats: CadenceStats
    summary: GpuSummary
    alloc_index: int
    alloc_bytes: int
    held: tuple[int, int] | None = None  # perf_counter_ns while the allocation was held
    checks: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(ok for _, ok in self.checks)


def device_count() -> int:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise NoGpu(f"NVML unavailable: {exc}") from exc
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


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
            alloc = self.lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size))
            self._check("cuMemAlloc", alloc)
            try:
                yield
            finally:
                self.lib.cuMemFree_v2(pointer)
        finally:
            self.lib.cuCtxDestroy_v2(context)


def probe(seconds: float, period_s: float, gpu_ids: Sequence[int], alloc_gib: float) -> ProbeResult:
    """Sample for ``seconds``; hold an allocation on gpu_ids[0] through the middle third."""
    driver = CudaDriver()
    folder = Path(tempfile.mkdtemp(prefix="faceoff-nvml-probe-"))
    settings = CollectorSettings(memory_period_s=period_s)
    period_ns = settings.memory_period_ns
    sampler = GpuSampler(PynvmlLibrary(), gpu_ids, folder, clocks=Clocks())
    loop = SamplerLoop(
        sampler, period_ns=period_ns, late_after_ns=settings.late_after_ns(period_ns)
    )
    size = int(alloc_gib * GIB)
    start = time.perf_counter_ns()
    loop.start()
    if not loop.wait_first(30):
        raise NoGpu("the GPU sampler took no first sample in 30 s")
    time.sleep(seconds / 3)
    with driver.allocation(gpu_ids[0], size):
        held_from = time.perf_counter_ns()
        time.sleep(seconds / 3)
        held = (held_from, time.perf_counter_ns())
    time.sleep(seconds / 3)
    stats = loop.stop(timeout_s=30)
    samples, _ = read_samples(sampler.path, GpuSample)
    window = CellWindow(start_ns=start, end_ns=time.perf_counter_ns())
    summary = gpu_summary(samples, window, settings, unreadable=0)
    result = ProbeResult(samples, stats, summary, gpu_ids[0], size, held)
    result.checks = checks(result)
    return result


def _used(sample: GpuSample, index: int) -> int | None:
    return next((r.used_bytes for r in sample.devices if r.index == index), None)


def checks(result: ProbeResult) -> list[tuple[str, bool]]:
    assert result.held is not None
    begin, end = result.held
    inside = [s for s in result.samples if begin + 1e8 <= s.actual_ns <= end and not s.final]
    outside = [s for s in result.samples if s.actual_ns < begin or s.actual_ns > end + 1e9]
    held_used = [u for s in inside if (u := _used(s, result.alloc_index)) is not None]
    free_used = [u for s in outside if (u := _used(s, result.alloc_index)) is not None]
    rise = (min(held_used) - max(free_used)) if held_used and free_used else None
    return [
        ("every sample ok", all(s.status is ReadStatus.OK for s in result.samples)),
        ("samples while the allocation was held", bool(held_used)),
        (
            f"GPU {result.alloc_index} used rose by >= 90% of {result.alloc_bytes / GIB:g} GiB",
            rise is not None and rise >= 0.9 * result.alloc_bytes,
        ),
        ("no missed ticks", result.stats.missed == 0),
        ("gpu_memory coverage >= 0.9", result.summary.families["gpu_memory"].coverage >= 0.9),
    ]


def report(result: ProbeResult, out: Callable[[str], None]) -> None:
    for sample in result.samples:
        tag = "drain" if sample.final else f"tick {sample.seq:3d}"
        dev = f"{sample.deviation_ns / 1e6:7.2f} ms late"
        out(f"{tag} {dev} {sample.status.value} {sample.error or ''}".rstrip())
        for r in sample.devices:
            used = "?" if r.used_bytes is None else f"{r.used_bytes / GIB:7.2f}"
            free = "?" if r.free_bytes is None else f"{r.free_bytes / GIB:7.2f}"
            total = "?" if r.total_bytes is None else f"{r.total_bytes / GIB:.2f}"
            procs = [(p.pid, p.used_bytes) for p in r.processes or []]
            out(
                f"    GPU {r.index} {r.name}: used {used} / free {free} / total {total} GiB, "
                f"util {r.util_percent}%, {r.power_w} W, {r.temperature_c} C, "
                f"processes {procs} {r.errors or ''}"
            )
    s = result.stats
    out(f"cadence: {s.ticks} ticks, {s.on_time} on time, {s.late} late, {s.missed} missed, "
        f"max deviation {s.max_deviation_ns / 1e6:.2f} ms")  # fmt: skip
    out("summary: " + result.summary.model_dump_json(exclude={"cadence"}))
    for name, ok in result.checks:
        out(f"{'PASS' if ok else 'FAIL'}  {name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=24.0)
    parser.add_argument("--period", type=float, default=2.0)
    parser.add_argument("--gpus", type=str, default=None, help="comma-separated NVML indices")
    parser.add_argument("--alloc-gib", type=float, default=4.0)
    args = parser.parse_args(argv)
    try:
        count = device_count()
        ids = [int(i) for i in args.gpus.split(",")] if args.gpus else list(range(count))
        if not ids:
            raise NoGpu("NVML reports no devices")
        result = probe(args.seconds, args.period, ids, args.alloc_gib)
    except NoGpu as exc:
        print(f"SKIP  {exc}")
        return 2
    report(result, print)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
