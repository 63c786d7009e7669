"""``telemetry.json``: the per-cell telemetry summary the guards read, recomputable from the
sample files. The same concept at another layer: ``collectors.telemetry`` (which computes it).

Its parts are the views of one source each: the cadence and the family coverage
(``collectors.cadence``), the engine's counter and histogram deltas (``collectors.deltas``),
the GPU and host memory extremes (``collectors.memory_summary``) and the host stalls over the
window (``collectors.stall_log``).

Format history of ``schema_version``:
  1 — first release.
  2 — a family is carried at a tick by its sample on time *or late* (version 1 counted only
      on-time samples); ``FamilyCoverage`` gains ``late`` and ``max_lateness_ns``; the
      summary gains ``host_stalls`` (the host-stall monitor over the window). Later in 2,
      ``kv_pool_tokens`` is the ``kv_cache_size_tokens`` label of ``cache_config_info``
      where the engine reports it (with decode-context parallelism the pool holds more
      tokens than block_size × num_gpu_blocks), else that product; the shape is unchanged.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from collectors.settings import CollectorSettings
from faceoff.artifact import Artifact, Spec
from faceoff.formats.attempt.stalls import CellWindow

TELEMETRY_FILE = "telemetry.json"


class CadenceSummary(Spec):
    period_ns: int = Field(description="The schedule's period.")
    late_after_ns: int = Field(description="Slack after which a tick counts as late.")
    ticks: int = Field(description="Ticks scheduled inside the cell window.")
    on_time: int = Field(description="Of those, ticks sampled within the slack.")
    late: int = Field(description="Ticks sampled, but later than the slack.")
    missed: int = Field(description="Ticks with no sample at all.")
    samples: int = Field(description="All samples in the file, drain included.")
    deviation_p50_ns: int | None = Field(description="Median start-minus-schedule of the ticks.")
    deviation_p99_ns: int | None = Field(description="p99 (nearest rank) of the same.")
    deviation_max_ns: int | None = Field(description="Largest deviation in the window.")


class FamilyCoverage(Spec):
    carried: int = Field(description="Ticks whose sample, on time or late, carries the family.")
    coverage: float = Field(description="carried / ticks of the cell (0 when no tick).")
    max_consecutive_misses: int = Field(
        description="Longest run of ticks not carrying it (no sample, a failed one, or without it)."
    )
    late: int = Field(description="Of the carried ticks, those whose sample was late.")
    max_lateness_ns: int = Field(
        description="Largest start-minus-schedule of a carried tick's sample (0 when none)."
    )


class CounterDelta(Spec):
    delta: float = Field(description="Increase over the cell; post-reset values added.")
    baseline: float | None = Field(description="Value at the baseline sample (None if absent).")
    final: float | None = Field(description="Value at the final sample (None if absent).")
    resets: int = Field(description="Resets seen on this series between baseline and final.")
    exact: bool = Field(description="Baseline before the cell, final after it, nothing lost.")
    why_inexact: str | None = Field(default=None, description="Why not exact, when not.")


class HistogramDelta(Spec):
    sum_delta: float = Field(description="Increase of _sum over the cell.")
    count_delta: float = Field(description="Increase of _count over the cell.")
    mean: float | None = Field(description="sum_delta / count_delta; None when no count.")
    resets: int = Field(description="Resets seen between baseline and final.")
    exact: bool = Field(description="As for counters.")
    why_inexact: str | None = Field(default=None, description="Why not exact, when not.")


class SourceFiles(Spec):
    samples: int = Field(description="Sample lines read.")
    unreadable_lines: int = Field(description="Lines that were torn, not JSON, or not a sample.")


class GpuDevicePeak(Spec):
    index: int = Field(description="NVML device index.")
    uuid: str | None = Field(description="Device UUID, as last read.")
    name: str | None = Field(description="Device name, as last read.")
    samples: int = Field(description="Cell samples that read this device's memory.")
    max_used_bytes: int | None = Field(description="Sampled max memory used.")
    min_free_bytes: int | None = Field(description="Sampled min memory free.")
    total_bytes: int | None = Field(description="Device memory total.")
    max_util_percent: int | None = Field(description="Sampled max GPU utilization.")
    max_power_w: float | None = Field(description="Sampled max power draw.")
    max_temperature_c: int | None = Field(description="Sampled max temperature.")


class GpuSummary(Spec):
    cadence: CadenceSummary = Field(description="Ticks, lateness and misses in the window.")
    files: SourceFiles = Field(description="What gpu.jsonl held.")
    families: dict[str, FamilyCoverage] = Field(description="'gpu_memory' -> coverage.")
    devices: list[GpuDevicePeak] = Field(description="Per device, by index.")
    worst_device: int | None = Field(description="Index of the device with the highest used.")
    worst_used_bytes: int | None = Field(description="That device's sampled max used.")
    min_free_bytes: int | None = Field(description="Lowest free memory of any single device.")
    unavailable: list[str] = Field(description="Distinct reasons samples were not ok.")


class HostSummary(Spec):
    cadence: CadenceSummary = Field(description="Ticks, lateness and misses in the window.")
    files: SourceFiles = Field(description="What host.jsonl held.")
    families: dict[str, FamilyCoverage] = Field(
        description="'lane_memory' and 'host_available_memory' -> coverage."
    )
    lane_sources: list[str] = Field(description="Where lane memory came from (cgroup_v1, ...).")
    lane_peak_bytes: int | None = Field(description="Sampled max lane memory (cgroups: + cache).")
    lane_peak_anon_bytes: int | None = Field(description="Sampled max without page cache.")
    lane_limit_bytes: int | None = Field(description="The lane's memory limit, if any.")
    lane_kernel_peak_bytes: int | None = Field(
        description="The kernel's own peak for the lane's cgroup, since it began."
    )
    host_available_min_bytes: int | None = Field(description="Sampled min host available.")
    host_total_bytes: int | None = Field(description="Host total memory.")
    unavailable: list[str] = Field(description="Distinct reasons readings failed.")


class StallSummary(Spec):
    threshold_ns: int = Field(description="The monitor's stall threshold.")
    cpu: int | None = Field(description="The CPU the monitor was pinned to.")
    watched: bool = Field(description="The monitor's watch spans the whole cell window.")
    stopped: bool = Field(description="The monitor wrote its stop line (it was not killed).")
    stalls: int = Field(description="Stalls overlapping the window.")
    stalled_ns: int = Field(description="Part of the window covered by stalls.")
    longest_ns: int = Field(description="Longest stall overlapping the window (0 when none).")
    stalled_share: float = Field(description="stalled_ns / window length (0 for an empty window).")
    client_wait_ns: int | None = Field(
        description="The client's CPU wait inside the window; None unless readings bracket it."
    )
    client_wait_share: float | None = Field(
        description="client_wait_ns / the time between the readings that bracket the window."
    )
    unreadable_lines: int = Field(description="Lines of stalls.jsonl that are not stall lines.")


class EngineSummary(Spec):
    cadence: CadenceSummary = Field(description="Ticks, lateness and misses in the window.")
    files: SourceFiles = Field(description="What engine.jsonl held.")
    families: dict[str, FamilyCoverage] = Field(description="Canonical family -> coverage.")
    counters: dict[str, CounterDelta] = Field(description="Counter -> delta over the cell.")
    histograms: dict[str, HistogramDelta] = Field(description="Histogram -> sum/count deltas.")
    resets: int = Field(description="Counter resets (lane restarts) between baseline and final.")
    baseline_seq: int | None = Field(description="Sample the deltas start from.")
    final_seq: int | None = Field(description="Sample the deltas end at (the drain, normally).")
    delta_notes: list[str] = Field(description="Why deltas are inexact, if they are.")
    max_running: float | None = Field(description="Sampled max of num_requests_running.")
    max_waiting: float | None = Field(description="Sampled max of num_requests_waiting.")
    max_kv_usage_perc: float | None = Field(description="Sampled max KV usage (1.0 = full).")
    block_size: int | None = Field(description="cache_config_info block_size.")
    num_gpu_blocks: int | None = Field(description="cache_config_info num_gpu_blocks.")
    kv_pool_tokens: int | None = Field(
        description="kv_cache_size_tokens where reported, else block_size × num_gpu_blocks."
    )
    aliased: dict[str, str] = Field(description="Canonical -> older wire name read in the cell.")


class TelemetrySummary(Artifact):
    schema_version: Literal[2] = Field(default=2, description="Telemetry summary format version.")
    window: CellWindow = Field(description="The cell window the summary was computed over.")
    settings: CollectorSettings = Field(description="Cadence settings the samples were taken on.")
    engine: EngineSummary = Field(description="Engine /metrics samples.")
    gpu: GpuSummary | None = Field(description="NVML samples; None when the arm has no GPU ids.")
    host: HostSummary = Field(description="Host and lane memory samples.")
    host_stalls: StallSummary | None = Field(
        description="Host stalls over the window; None where no monitor ran (no stalls.jsonl)."
    )
