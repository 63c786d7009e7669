"""The per-cell telemetry summary (telemetry.json), a pure function of the sample files.
The same concept at another layer: ``faceoff.formats.attempt.telemetry`` (its model).

``summarize`` takes the samples, the cell window and the settings and computes
everything the guards read: per source and per family the coverage and the
longest gap, cadence counts, engine counter and histogram deltas, sampled
maxima, the worst single GPU (never a sum) and lane/host memory extremes.
``faceoff audit`` recomputes it from the jsonl files and the recorded window
and settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from collectors.aliases import AliasTable
from collectors.cadence import cadence_summary, cell_ticks, family_coverage
from collectors.deltas import engine_deltas
from collectors.memory_summary import gpu_summary, host_summary
from collectors.settings import CollectorSettings
from collectors.stall_log import StallLog, read_stalls, summarize_stalls
from faceoff.files import read_jsonl
from faceoff.formats.attempt.collector_samples import (
    EngineSample,
    GpuSample,
    HostSample,
    SampleBase,
)
from faceoff.formats.attempt.stalls import ENGINE_FILE, GPU_FILE, HOST_FILE, STALLS_FILE, CellWindow
from faceoff.formats.attempt.telemetry import EngineSummary, SourceFiles, TelemetrySummary

S = TypeVar("S", bound=SampleBase)


def summarize(
    samples: CellSamples, *, window: CellWindow, settings: CollectorSettings, table: AliasTable
) -> TelemetrySummary:
    bad, gpu = samples.unreadable, samples.gpu
    return TelemetrySummary(
        window=window,
        settings=settings,
        engine=engine_summary(samples.engine, window, settings, table, bad.get("engine", 0)),
        gpu=None if gpu is None else gpu_summary(gpu, window, settings, bad.get("gpu", 0)),
        host=host_summary(samples.host, window, settings, bad.get("host", 0)),
        host_stalls=None if samples.stalls is None else summarize_stalls(samples.stalls, window),
    )


def engine_summary(
    samples: Sequence[EngineSample],
    window: CellWindow,
    settings: CollectorSettings,
    table: AliasTable,
    unreadable: int = 0,
) -> EngineSummary:
    period = settings.engine_period_ns
    ticks = cell_ticks(samples, window, period, settings.late_after_ns(period))
    in_cell = [s for s in ticks.cell_samples() if s.ok]
    deltas = engine_deltas(samples, window)
    config = _cache_config(samples)
    return EngineSummary(
        cadence=cadence_summary(ticks),
        files=SourceFiles(samples=len(samples), unreadable_lines=unreadable),
        families={name: family_coverage(ticks, _carries(name)) for name in table.expected},
        counters=deltas.counters,
        histograms=deltas.histograms,
        resets=deltas.resets,
        baseline_seq=deltas.baseline_seq,
        final_seq=deltas.final_seq,
        delta_notes=deltas.notes,
        max_running=_max_gauge(in_cell, "num_requests_running"),
        max_waiting=_max_gauge(in_cell, "num_requests_waiting"),
        max_kv_usage_perc=_max_gauge(in_cell, "kv_cache_usage_perc"),
        block_size=config.block_size,
        num_gpu_blocks=config.num_gpu_blocks,
        kv_pool_tokens=config.pool_tokens,
        aliased={k: v for s in samples if s.metrics for k, v in s.metrics.aliased.items()},
    )


def _carries(canonical: str) -> Callable[[EngineSample], bool]:
    def carries(sample: EngineSample) -> bool:
        return sample.ok and sample.metrics is not None and sample.metrics.carries(canonical)

    return carries


def _max_gauge(samples: Sequence[EngineSample], name: str) -> float | None:
    values = [s.metrics.gauges[name] for s in samples if s.metrics and name in s.metrics.gauges]
    return max(values) if values else None


@dataclass(frozen=True)
class CacheConfig:
    block_size: int | None = None
    num_gpu_blocks: int | None = None
    size_tokens: int | None = None  # the kv_cache_size_tokens label, where reported

    @property
    def pool_tokens(self) -> int | None:
        """The engine's own token count first: decode-context parallelism multiplies the
        pool beyond block × blocks, which only the engine knows."""
        if self.size_tokens:
            return self.size_tokens
        return (
            self.block_size * self.num_gpu_blocks
            if self.block_size and self.num_gpu_blocks
            else None
        )


def _cache_config(samples: Sequence[EngineSample]) -> CacheConfig:
    """cache_config_info's sizes from the latest sample that reports them."""
    for sample in reversed(samples):
        labels = sample.metrics.info.get("cache_config_info") if sample.metrics else None
        if labels:
            return CacheConfig(
                _int_label(labels.get("block_size")),
                _int_label(labels.get("num_gpu_blocks")),
                _int_label(labels.get("kv_cache_size_tokens")),
            )
    return CacheConfig()


def _int_label(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


@dataclass
class CellSamples:
    """The sample files of one cell folder, parsed; ``gpu`` is None where none was written."""

    engine: list[EngineSample] = field(default_factory=list)
    gpu: list[GpuSample] | None = None
    host: list[HostSample] = field(default_factory=list)
    unreadable: dict[str, int] = field(default_factory=dict)
    stalls: StallLog | None = None


def read_samples(path: Path, model: type[S]) -> tuple[list[S], int]:
    """Valid samples of a jsonl file, and how many lines were torn or not a sample."""
    contents = read_jsonl(path)
    bad = len(contents.bad_lines) + (1 if contents.torn_tail else 0)
    samples = []
    for record in contents.records:
        try:
            samples.append(model.model_validate(record))
        except ValidationError:
            bad += 1
    return samples, bad


def load_cell_samples(folder: Path) -> CellSamples:
    folder = Path(folder)
    engine, bad_engine = read_samples(folder / ENGINE_FILE, EngineSample)
    host, bad_host = read_samples(folder / HOST_FILE, HostSample)
    gpu, bad_gpu = None, 0
    if (folder / GPU_FILE).exists():
        gpu, bad_gpu = read_samples(folder / GPU_FILE, GpuSample)
    unreadable = {"engine": bad_engine, "gpu": bad_gpu, "host": bad_host}
    stalls = read_stalls(folder / STALLS_FILE)
    return CellSamples(engine=engine, gpu=gpu, host=host, unreadable=unreadable, stalls=stalls)


def summarize_folder(
    folder: Path, window: CellWindow, settings: CollectorSettings, table: AliasTable
) -> TelemetrySummary:
    """Recompute a cell's summary from its sample files (what ``faceoff audit`` does)."""
    return summarize(load_cell_samples(folder), window=window, settings=settings, table=table)
