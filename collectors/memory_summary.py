"""GPU and host parts of the telemetry summary (pure): peaks, minima, coverage.

GPU figures are per device and the worst single device is named; they are never
summed across devices. Sampled maxima are lower bounds on transient peaks; where
the kernel keeps its own peak (cgroup ``max_usage_in_bytes`` / ``memory.peak``)
it is reported beside them, for the lane's whole life so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from collectors.cadence import CellTicks, cadence_summary, cell_ticks, family_coverage
from collectors.settings import CollectorSettings
from faceoff.formats.attempt.collector_samples import GpuReading, GpuSample, HostSample, ReadStatus
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.telemetry import GpuDevicePeak, GpuSummary, HostSummary, SourceFiles

N = TypeVar("N", int, float)
M = TypeVar("M", GpuSample, HostSample)


def _memory_ticks(
    samples: Sequence[M], window: CellWindow, settings: CollectorSettings
) -> CellTicks[M]:
    period = settings.memory_period_ns
    return cell_ticks(samples, window, period, settings.late_after_ns(period))


def gpu_summary(
    samples: Sequence[GpuSample], window: CellWindow, settings: CollectorSettings, unreadable: int
) -> GpuSummary:
    ticks = _memory_ticks(samples, window, settings)
    cell = ticks.cell_samples()
    devices = [_device_peak(i, _readings(cell, i)) for i in _indices(samples)]
    worst = max(devices, key=lambda d: (d.max_used_bytes or -1, -d.index), default=None)
    frees = [d.min_free_bytes for d in devices if d.min_free_bytes is not None]
    return GpuSummary(
        cadence=cadence_summary(ticks),
        files=SourceFiles(samples=len(samples), unreadable_lines=unreadable),
        families={"gpu_memory": family_coverage(ticks, lambda s: s.status is ReadStatus.OK)},
        devices=devices,
        worst_device=worst.index if worst and worst.max_used_bytes is not None else None,
        worst_used_bytes=worst.max_used_bytes if worst else None,
        min_free_bytes=min(frees) if frees else None,
        unavailable=_distinct(e for s in cell for e in _gpu_errors(s)),
    )


def _indices(samples: Sequence[GpuSample]) -> list[int]:
    return sorted({r.index for s in samples for r in s.devices})


def _readings(samples: Sequence[GpuSample], index: int) -> list[GpuReading]:
    return [r for s in samples for r in s.devices if r.index == index]


def _device_peak(index: int, readings: list[GpuReading]) -> GpuDevicePeak:
    last = readings[-1] if readings else None
    return GpuDevicePeak(
        index=index,
        uuid=last.uuid if last else None,
        name=last.name if last else None,
        samples=sum(1 for r in readings if r.has_memory),
        max_used_bytes=_max(r.used_bytes for r in readings),
        min_free_bytes=_min(r.free_bytes for r in readings),
        total_bytes=_max(r.total_bytes for r in readings),
        max_util_percent=_max(r.util_percent for r in readings),
        max_power_w=_max(r.power_w for r in readings),
        max_temperature_c=_max(r.temperature_c for r in readings),
    )


def _gpu_errors(sample: GpuSample) -> list[str]:
    if sample.error:
        return [sample.error]
    return [f"GPU {r.index} {e}" for r in sample.devices if not r.has_memory for e in r.errors]


def host_summary(
    samples: Sequence[HostSample], window: CellWindow, settings: CollectorSettings, unreadable: int
) -> HostSummary:
    ticks = _memory_ticks(samples, window, settings)
    cell = ticks.cell_samples()
    lanes = [s.lane for s in cell if s.lane is not None]
    return HostSummary(
        cadence=cadence_summary(ticks),
        files=SourceFiles(samples=len(samples), unreadable_lines=unreadable),
        families={
            "lane_memory": family_coverage(ticks, lambda s: s.lane is not None),
            "host_available_memory": family_coverage(
                ticks, lambda s: s.host_available_bytes is not None
            ),
        },
        lane_sources=_distinct(lane.source.value for lane in lanes),
        lane_peak_bytes=_max(lane.usage_bytes for lane in lanes),
        lane_peak_anon_bytes=_max(lane.anon_bytes for lane in lanes),
        lane_limit_bytes=lanes[-1].limit_bytes if lanes else None,
        lane_kernel_peak_bytes=_max(lane.kernel_peak_bytes for lane in lanes),
        host_available_min_bytes=_min(s.host_available_bytes for s in cell),
        host_total_bytes=_max(s.host_total_bytes for s in cell),
        unavailable=_distinct(e for s in cell for e in (s.host_error, s.lane_error) if e),
    )


def _max(values: Iterable[N | None]) -> N | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _min(values: Iterable[N | None]) -> N | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _distinct(values: Iterable[str], limit: int = 5) -> list[str]:
    """Distinct reasons in first-seen order; a few are enough to say what went wrong."""
    return list(dict.fromkeys(values))[:limit]
