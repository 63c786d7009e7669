"""Sample records for the pure-function tests, shaped exactly as the samplers write them."""

from __future__ import annotations

from datetime import UTC, datetime

from faceoff.formats.attempt.collector_samples import (
    EngineMetrics,
    EngineSample,
    EngineStatus,
    GpuReading,
    GpuSample,
    HistogramPoint,
    HostSample,
    LaneMemory,
    LaneMemorySource,
    ReadStatus,
)

MS = 1_000_000
ANCHOR = 1_000_000 * MS  # tick 0 of every built schedule
WALL = datetime(2026, 10, 17, 12, 0, tzinfo=UTC)


def tick(seq: int, period_ms: int, late_ms: int = 0, final: bool = False) -> dict[str, object]:
    scheduled = ANCHOR + seq * period_ms * MS
    return {
        "seq": seq,
        "final": final,
        "period_ns": period_ms * MS,
        "scheduled_ns": scheduled,
        "actual_ns": scheduled + late_ms * MS,
        "wall_utc": WALL,
        "latency_ns": 3 * MS,
    }


def engine(
    seq: int,
    *,
    counters: dict[str, float] | None = None,
    histograms: dict[str, tuple[float, float]] | None = None,
    gauges: dict[str, float] | None = None,
    missing: list[str] | None = None,
    info: dict[str, dict[str, str]] | None = None,
    late_ms: int = 0,
    final: bool = False,
    status: EngineStatus = EngineStatus.OK,
    period_ms: int = 500,
) -> EngineSample:
    metrics = None
    if status is EngineStatus.OK:
        metrics = EngineMetrics(
            gauges=gauges or {},
            counters=counters or {},
            histograms={
                k: HistogramPoint(sum=s, count=c) for k, (s, c) in (histograms or {}).items()
            },
            info=info or {},
            missing=missing or [],
            aliased={},
        )
    return EngineSample(
        **tick(seq, period_ms, late_ms, final),  # type: ignore[arg-type]
        status=status,
        http_status=200 if status is EngineStatus.OK else None,
        error=None if status is EngineStatus.OK else "refused",
        metrics=metrics,
    )


def gpu(
    seq: int,
    devices: list[GpuReading],
    *,
    late_ms: int = 0,
    period_ms: int = 2000,
    final: bool = False,
    error: str | None = None,
) -> GpuSample:
    if error:
        status = ReadStatus.UNAVAILABLE
    elif all(d.has_memory for d in devices):
        status = ReadStatus.OK
    else:
        status = ReadStatus.PARTIAL
    return GpuSample(
        **tick(seq, period_ms, late_ms, final), status=status, error=error, devices=devices
    )  # type: ignore[arg-type]


def device(index: int, used_gib: float, total_gib: float = 96.0, **kw: object) -> GpuReading:
    used = int(used_gib * 2**30)
    total = int(total_gib * 2**30)
    return GpuReading(
        index=index,
        uuid=f"GPU-{index}",
        name="fake",
        used_bytes=used,
        free_bytes=total - used,
        total_bytes=total,
        **kw,
    )  # type: ignore[arg-type]


def host(
    seq: int,
    *,
    lane_mib: int | None,
    anon_mib: int | None = None,
    available_mib: int | None = 8000,
    late_ms: int = 0,
    period_ms: int = 2000,
    final: bool = False,
) -> HostSample:
    lane = None
    if lane_mib is not None:
        lane = LaneMemory(
            source=LaneMemorySource.CGROUP_V1,
            where="/sys/fs/cgroup/memory/docker/x",
            usage_bytes=lane_mib * 2**20,
            anon_bytes=None if anon_mib is None else anon_mib * 2**20,
            limit_bytes=52 * 2**30,
        )
    both = lane is not None and available_mib is not None
    status = ReadStatus.OK if both else ReadStatus.PARTIAL
    return HostSample(
        **tick(seq, period_ms, late_ms, final),  # type: ignore[arg-type]
        status=status,
        host_available_bytes=None if available_mib is None else available_mib * 2**20,
        host_total_bytes=16000 * 2**20,
        lane=lane,
        lane_error=None if lane else "cgroup gone",
    )


def window_ms(start_ms: int, end_ms: int):  # type: ignore[no-untyped-def]
    from faceoff.formats.attempt.stalls import CellWindow

    return CellWindow(start_ns=ANCHOR + start_ms * MS, end_ns=ANCHOR + end_ms * MS)
