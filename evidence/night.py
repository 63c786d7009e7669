"""One campaign as a night of the history: its host and each arm's p50/p95 per cell and
headline metric, with intervals (read from the bundle, and how the intervals are
derived: ``evidence.night_read``).

Format history of ``Night.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

Role = Literal["incumbent", "candidate"]


class Interval(Spec):
    low: float = Field(description="Lower bound.")
    high: float = Field(description="Upper bound.")


class NightMetric(Spec):
    cell: str = Field(description="Cell id.")
    arm: str = Field(description="Arm name.")
    role: Role = Field(description="The arm's role that night.")
    metric: str = Field(description="Headline request metric (workload.metrics).")
    n: int = Field(description="Requests the percentiles rest on.")
    p50: float = Field(description="Median of the metric over the cell's scored requests.")
    p95: float = Field(description="95th percentile.")
    p50_interval: Interval | None = Field(description="95 % interval of the p50, when known.")
    p95_interval: Interval | None = Field(description="95 % interval of the p95, when known.")


class Night(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Night format version.")
    campaign: str = Field(description="Campaign name.")
    host: str = Field(description="Host name the bundle was written on (MANIFEST.json).")
    night: date = Field(description="UTC date the campaign started observing.")
    coverage: str = Field(description="complete or closed_partial.")
    metrics: list[NightMetric] = Field(description="Accepted cell runs' headline percentiles.")
