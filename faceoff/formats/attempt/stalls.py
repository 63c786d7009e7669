"""``stalls.jsonl``: the host-stall monitor's lines; and the names of the files the collectors
leave in an attempt folder.

Here, apart from the samplers and the host-stall monitor, so that readers of those files
(the summary, the guards, the evidence audit) name and parse them without loading an HTTP
client, NVML or psutil.

Format history of the stall lines' ``schema_version`` (all four kinds):
  1 — first release.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from faceoff.artifact import Artifact, Spec

ENGINE_FILE = "engine.jsonl"
GPU_FILE = "gpu.jsonl"
HOST_FILE = "host.jsonl"
STALLS_FILE = "stalls.jsonl"
SCRAPE_FIRST = "scrape-first.txt"  # the engine's first /metrics answer, verbatim
SCRAPE_LAST = "scrape-last.txt"  # and its last


class MonitorStart(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Stall line format version.")
    event: Literal["start"] = Field(default="start", description="The monitor began watching.")
    pid: int = Field(description="The monitor's process id.")
    cpu: int | None = Field(description="The CPU it was pinned to; None where it could not be.")
    tick_ns: int = Field(gt=0, description="How long it sleeps between two looks at the clock.")
    threshold_ns: int = Field(gt=0, description="A wake-up later than this is recorded as a stall.")
    started_ns: int = Field(description="perf_counter_ns it began watching.")
    wall_utc: str = Field(description="Wall clock taken with started_ns (UTC, ISO 8601).")


class Stall(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Stall line format version.")
    event: Literal["stall"] = Field(default="stall", description="One stall.")
    start_ns: int = Field(description="perf_counter_ns the monitor was due to wake.")
    length_ns: int = Field(gt=0, description="How long past that it woke.")

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.length_ns


class ClientWait(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Stall line format version.")
    event: Literal["client_wait"] = Field(default="client_wait", description="A client reading.")
    pid: int = Field(description="The client process read.")
    at_ns: int = Field(description="perf_counter_ns of the reading.")
    cpu_ns: int = Field(ge=0, description="Its CPU time so far (schedstat field 1).")
    waited_ns: int = Field(ge=0, description="Its run-queue wait so far (schedstat field 2).")


class MonitorStop(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Stall line format version.")
    event: Literal["stop"] = Field(default="stop", description="The monitor stopped watching.")
    stopped_ns: int = Field(description="perf_counter_ns it stopped.")
    ticks: int = Field(ge=0, description="Wake-ups it saw.")
    stalls: int = Field(ge=0, description="Of those, stalls recorded.")
    stalled_ns: int = Field(ge=0, description="Sum of the stalls' lengths.")


StallLine = Annotated[MonitorStart | Stall | ClientWait | MonitorStop, Field(discriminator="event")]


class CellWindow(Spec):
    start_ns: int = Field(description="perf_counter_ns of the cell's first request send.")
    end_ns: int = Field(description="perf_counter_ns the cell's last request ended.")

    @model_validator(mode="after")
    def _ordered(self) -> CellWindow:
        if self.end_ns < self.start_ns:
            raise ValueError(f"window ends ({self.end_ns}) before it starts ({self.start_ns})")
        return self
