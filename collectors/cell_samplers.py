"""The facade the cell flow calls: start the samplers around a cell, stop, summarize.

    collectors = CellCollectors(metrics_url=..., target=MemoryTarget(container_id=...),
                                gpu_ids=arm.gpu_ids, folder=attempt_dir, settings=...)
    collectors.start()          # returns once every sampler has its baseline sample
    ... the client process runs the cell ...
    report = collectors.stop()  # drains one final sample per source
    summary = collectors.summarize(CellWindow(start_ns=..., end_ns=...))

Samplers run in threads of the calling (orchestrator) process, one per source;
the host-stall monitor (``collectors.stall``) runs as its own process, started
before them and stopped after their drain, so its watch spans the cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from collectors.aliases import AliasTable, vllm_aliases
from collectors.engine import EngineSampler, HttpMetricsSource
from collectors.gpu.nvml import Nvml, PynvmlLibrary
from collectors.gpu.owner import LaneProcessOwner
from collectors.gpu.sampler import GpuSampler
from collectors.host import HostSampler, MemoryTarget
from collectors.sampler import CadenceStats, Clocks, Sampler, SamplerLoop
from collectors.settings import CollectorSettings
from collectors.stall_monitor import StallMonitor
from collectors.telemetry import summarize_folder
from faceoff.artifact import Spec
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.stalls import ENGINE_FILE, GPU_FILE, HOST_FILE, STALLS_FILE, CellWindow
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.ports import DockerApi


class SourceReport(Spec):
    source: str = Field(description="engine, gpu or host.")
    path: str = Field(description="The sample file written.")
    ticks: int = Field(description="Ticks taken on schedule.")
    on_time: int = Field(description="Of those, within the lateness slack.")
    late: int = Field(description="Of those, later than the slack.")
    missed: int = Field(description="Ticks skipped because the previous one overran.")
    max_deviation_ns: int = Field(description="Largest start-minus-schedule.")
    sampler_errors: int = Field(description="Ticks whose sampler raised (a bug, recorded).")
    last_error: str | None = Field(description="The last such error.")


class CollectionReport(Spec):
    folder: str = Field(description="The cell attempt folder the samples are in.")
    sources: list[SourceReport] = Field(description="Live cadence counts per source.")


def _report(name: str, path: Path, stats: CadenceStats) -> SourceReport:
    return SourceReport(
        source=name,
        path=str(path),
        ticks=stats.ticks,
        on_time=stats.on_time,
        late=stats.late,
        missed=stats.missed,
        max_deviation_ns=stats.max_deviation_ns,
        sampler_errors=stats.sampler_errors,
        last_error=stats.last_error,
    )


class CellCollectors:
    """Engine, GPU (when the arm has GPU ids) and host samplers for one cell attempt."""

    def __init__(
        self,
        *,
        metrics_url: str,
        target: MemoryTarget,
        gpu_ids: Sequence[int],
        folder: Path,
        settings: CollectorSettings | None = None,
        clocks: Clocks | None = None,
        table: AliasTable | None = None,
        nvml: Nvml | None = None,
        docker: DockerApi | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.settings = settings or CollectorSettings()
        self.clocks = clocks or Clocks()
        self.table = table or vllm_aliases()
        self._samplers = self._build(metrics_url, target, gpu_ids, nvml, docker)
        self._loops: list[SamplerLoop] = []
        self._monitor = StallMonitor(
            self.folder / STALLS_FILE,
            threshold_ns=self.settings.stall_threshold_ns,
            client_marker=str(self.folder / JOURNAL_NAME),  # as the flow gives it to the client
        )

    def _build(
        self,
        metrics_url: str,
        target: MemoryTarget,
        gpu_ids: Sequence[int],
        nvml: Nvml | None,
        docker: DockerApi | None,
    ) -> list[tuple[Sampler, Path, int]]:
        s, clocks = self.settings, self.clocks
        source = HttpMetricsSource(metrics_url, s.scrape_timeout_s)
        engine = EngineSampler(
            source, self.folder, self.table, clocks=clocks, drain_timeout_s=s.drain_timeout_s
        )
        host = HostSampler(target, self.folder, clocks=clocks, docker=docker)
        built: list[tuple[Sampler, Path, int]] = [
            (engine, self.folder / ENGINE_FILE, s.engine_period_ns),
            (host, self.folder / HOST_FILE, s.memory_period_ns),
        ]
        if gpu_ids:
            gpu = GpuSampler(
                nvml or PynvmlLibrary(),
                gpu_ids,
                self.folder,
                clocks=clocks,
                owner=LaneProcessOwner(target),
            )
            built.append((gpu, self.folder / GPU_FILE, s.memory_period_ns))
        return built

    def start(self) -> None:
        """Start every sampler; return once each has taken its first (baseline) sample."""
        self._refuse_used_folder()
        self._monitor.start()
        for sampler, _, period in self._samplers:
            loop = SamplerLoop(
                sampler,
                period_ns=period,
                late_after_ns=self.settings.late_after_ns(period),
                mono_ns=self.clocks.mono_ns,
            )
            loop.start()
            self._loops.append(loop)
        first_within = self.settings.scrape_timeout_s + 5.0
        for loop in self._loops:
            if not loop.wait_first(first_within) or not loop.running:
                self.stop(drain=False)
                why = loop.stats.last_error or f"no first sample within {first_within} s"
                raise FaceoffError(
                    f"the {loop.sampler.name} sampler could not start: {why}",
                    where=str(self.folder),
                    fix="check the lane's /metrics endpoint and that the folder is writable",
                )

    def stop(self, *, drain: bool = True) -> CollectionReport:
        """Stop every sampler (each drains one final sample) and report live cadence counts."""
        for loop in self._loops:
            loop.request_stop(drain=drain)
        timeout = self.settings.drain_timeout_s + self.settings.scrape_timeout_s + 10.0
        try:
            reports = [
                _report(sampler.name, path, loop.stop(drain=drain, timeout_s=timeout))
                for loop, (sampler, path, _) in zip(self._loops, self._samplers, strict=False)
            ]
        finally:
            self._monitor.stop()
        self._loops = []
        return CollectionReport(folder=str(self.folder), sources=reports)

    def summarize(self, window: CellWindow, *, replace: bool = False) -> TelemetrySummary:
        """Compute the cell's telemetry summary from the sample files and write telemetry.json."""
        summary = summarize_folder(self.folder, window, self.settings, self.table)
        summary.write(self.folder / TELEMETRY_FILE, replace=replace)
        return summary

    def _refuse_used_folder(self) -> None:
        for path in [self.folder / STALLS_FILE, *(path for _, path, _ in self._samplers)]:
            if path.exists():
                raise FaceoffError(
                    f"{path.name} already exists; samples of two runs would mix",
                    where=str(self.folder),
                    fix="collect each cell attempt into a fresh attempt folder",
                )

    def __enter__(self) -> CellCollectors:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loops:
            self.stop()
