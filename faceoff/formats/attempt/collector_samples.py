"""``engine.jsonl``, ``gpu.jsonl``, ``host.jsonl``: the collectors' native samples, one JSON
line per tick.

Every sample carries its tick (sequence, scheduled and actual monotonic time,
the period it was scheduled on) and its own wall-clock anchor, so cadence can be
recomputed from the file alone.

Format history of ``schema_version`` (all three sample kinds):
  1 — first release.
  2 — GPU samples only: each reading gains the energy counter, the clock-event reasons, SM
      clock and its maximum, ECC error totals and Xid events; each compute process whether
      it belongs to the lane; the sample whether it came from a simulator's virtual GPU.
      Every new field defaults to None (False for ``simulated``), so version-1 lines read.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, Field

from collectors.gpu.clock_events import slowed_down
from faceoff.artifact import Artifact, Spec


class SampleBase(Artifact):
    seq: int = Field(description="Tick index k (due at start + k·period); the drain follows.")
    final: bool = Field(description="True for the drain sample taken at stop, off schedule.")
    period_ns: int = Field(gt=0, description="The cadence this sample was scheduled on.")
    scheduled_ns: int = Field(description="perf_counter_ns the tick was due.")
    actual_ns: int = Field(description="perf_counter_ns the tick started.")
    wall_utc: AwareDatetime = Field(description="Wall clock taken with actual_ns (UTC).")
    latency_ns: int = Field(ge=0, description="How long taking the sample took.")

    @property
    def deviation_ns(self) -> int:
        return self.actual_ns - self.scheduled_ns


class EngineStatus(StrEnum):
    OK = "ok"
    HTTP_ERROR = "http_error"  # answered with a status other than 200
    TIMEOUT = "timeout"  # no full answer within the scrape timeout
    UNREACHABLE = "unreachable"  # connection refused, reset or dropped
    PARSE_ERROR = "parse_error"  # the body is not Prometheus text


class HistogramPoint(Spec):
    sum: float = Field(description="The histogram's _sum, summed over its series.")
    count: float = Field(description="The histogram's _count, summed over its series.")


class EngineMetrics(Spec):
    gauges: dict[str, float] = Field(description="Canonical gauge name -> value.")
    counters: dict[str, float] = Field(
        description='Canonical counter -> value; labelled ones as name{label="value"}.'
    )
    histograms: dict[str, HistogramPoint] = Field(description="Canonical histogram -> sum/count.")
    info: dict[str, dict[str, str]] = Field(description="Info family -> the labels it keeps.")
    missing: list[str] = Field(description="Expected canonical families absent from this scrape.")
    aliased: dict[str, str] = Field(
        description="Canonical -> wire name, where an older (renamed) name was read."
    )

    def carries(self, canonical: str) -> bool:
        return canonical not in self.missing

    @property
    def requests_in_engine(self) -> float:
        """Requests running or waiting; an engine at 0 has drained."""
        gauges = self.gauges
        return gauges.get("num_requests_running", 0.0) + gauges.get("num_requests_waiting", 0.0)


class EngineSample(SampleBase):
    schema_version: Literal[1] = Field(default=1, description="Engine sample format version.")
    status: EngineStatus = Field(description="ok, http_error, timeout, unreachable, parse_error.")
    http_status: int | None = Field(default=None, description="HTTP status, when one came back.")
    error: str | None = Field(default=None, description="What went wrong, for a failed scrape.")
    metrics: EngineMetrics | None = Field(default=None, description="Parsed values when ok.")

    @property
    def ok(self) -> bool:
        return self.status is EngineStatus.OK and self.metrics is not None


class ReadStatus(StrEnum):
    OK = "ok"  # everything this source reads was read
    PARTIAL = "partial"  # some readings failed; each says why
    UNAVAILABLE = "unavailable"  # nothing could be read; ``error`` says why


class GpuProcess(Spec):
    pid: int = Field(description="Process id as NVML reports it (host pid namespace).")
    used_bytes: int | None = Field(description="GPU memory of the process; None if not told.")
    lane: bool | None = Field(
        default=None,
        description="True: the lane's own (its cgroup or process tree); False: foreign; "
        "None: not told (no lane to compare with, or a version-1 line).",
    )


class GpuReading(Spec):
    index: int = Field(description="NVML device index (one of the arm's GPU ids).")
    uuid: str | None = Field(default=None, description="Device UUID.")
    name: str | None = Field(default=None, description="Device name.")
    used_bytes: int | None = Field(default=None, description="Device memory used.")
    free_bytes: int | None = Field(default=None, description="Device memory free.")
    total_bytes: int | None = Field(default=None, description="Device memory total.")
    util_percent: int | None = Field(
        default=None, description="GPU utilization over NVML's window."
    )
    memory_util_percent: int | None = Field(default=None, description="Memory controller busy %.")
    power_w: float | None = Field(default=None, description="Power draw in watts.")
    temperature_c: int | None = Field(default=None, description="GPU temperature in °C.")
    processes: list[GpuProcess] | None = Field(
        default=None, description="Compute processes and their memory; None where not available."
    )
    energy_mj: int | None = Field(
        default=None, description="NVML's total-energy counter (mJ since the driver loaded)."
    )
    clock_event_reasons: int | None = Field(
        default=None,
        description="NVML clock-event (throttle) reasons bitmask; names in collectors/"
        "clock_events.py.",
    )
    sm_clock_mhz: int | None = Field(default=None, description="Current SM clock (MHz).")
    max_sm_clock_mhz: int | None = Field(default=None, description="Maximum SM clock (MHz).")
    ecc_corrected: int | None = Field(
        default=None, description="Volatile corrected ECC errors (since the driver loaded)."
    )
    ecc_uncorrected: int | None = Field(
        default=None, description="Volatile uncorrected ECC errors (since the driver loaded)."
    )
    xid_errors: int | None = Field(
        default=None, description="Xid critical-error events since the sampler opened NVML."
    )
    last_xid: int | None = Field(default=None, description="The code of the last Xid seen.")
    errors: list[str] = Field(default_factory=list, description="Readings that failed, and why.")

    @property
    def has_memory(self) -> bool:
        return None not in (self.used_bytes, self.free_bytes, self.total_bytes)

    @property
    def slowed_down(self) -> bool | None:
        """A thermal or power-delivery slowdown at this reading; None where not read."""
        mask = self.clock_event_reasons
        return None if mask is None else slowed_down(mask)


class GpuSample(SampleBase):
    schema_version: Literal[1, 2] = Field(default=2, description="GPU sample format version.")
    status: ReadStatus = Field(description="ok, partial or unavailable.")
    error: str | None = Field(default=None, description="Why NVML could not be read at all.")
    devices: list[GpuReading] = Field(description="One reading per GPU id of the arm.")
    simulated: bool = Field(
        default=False,
        description="True: read from a simulator lane's virtual GPU, not from hardware.",
    )


class LaneMemorySource(StrEnum):
    CGROUP_V1 = "cgroup_v1"  # memory.usage_in_bytes + memory.stat of the lane's cgroup
    CGROUP_V2 = "cgroup_v2"  # memory.current + memory.stat of the lane's cgroup
    DOCKER_STATS = "docker_stats"  # the Docker stats API, one-shot
    PROCESS_TREE_RSS = "process_tree_rss"  # RSS summed over the lane's process tree


class LaneMemory(Spec):
    source: LaneMemorySource = Field(description="Where the numbers come from.")
    where: str = Field(description="The cgroup directory, container id or root pid read.")
    usage_bytes: int = Field(
        description="Lane memory as the source counts it; cgroups include page cache."
    )
    anon_bytes: int | None = Field(
        default=None, description="Without page cache (anon/rss), where the kernel tells."
    )
    file_bytes: int | None = Field(default=None, description="Page cache, where the kernel tells.")
    limit_bytes: int | None = Field(
        default=None, description="The cgroup limit; None if unlimited."
    )
    kernel_peak_bytes: int | None = Field(
        default=None, description="The kernel's own peak since the cgroup began, where kept."
    )


class HostSample(SampleBase):
    schema_version: Literal[1] = Field(default=1, description="Host sample format version.")
    status: ReadStatus = Field(description="ok, partial or unavailable.")
    host_available_bytes: int | None = Field(description="Host available memory (psutil).")
    host_total_bytes: int | None = Field(description="Host total memory (psutil).")
    host_error: str | None = Field(default=None, description="Why host memory was not read.")
    lane: LaneMemory | None = Field(description="The lane's memory, when read.")
    lane_error: str | None = Field(default=None, description="Why the lane was not read.")
