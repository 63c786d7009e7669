"""A night of ``.history/cache.json``: one campaign in the history, its host and each arm's
p50/p95 per cell and headline metric, with intervals (read from the bundle, and how the
intervals are derived: ``evidence.history.night_read``).

Format history of ``Night.schema_version``:
  1 — first release.
  2 — the figures as columns (``cell``, ``arm``, … ``p95_high``), a row per cell run and metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from faceoff.artifact import Artifact, Spec

Role = Literal["incumbent", "candidate"]


# The percentile columns a night's rows and a history series share, one value per row.
CountColumn = Annotated[list[int], Field(description="Requests the percentiles rest on.")]
P50Column = Annotated[list[float], Field(description="Median over the scored requests.")]
P95Column = Annotated[list[float], Field(description="95th percentile.")]
BoundColumn = Annotated[
    list[float | None], Field(description="A bound of the percentile's 95 % interval.")
]


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
    schema_version: Literal[2] = Field(default=2, description="Night format version.")
    campaign: str = Field(description="Campaign name.")
    host: str = Field(description="Host name the bundle was written on (MANIFEST.json).")
    night: date = Field(description="UTC date the campaign started observing.")
    coverage: str = Field(description="complete or closed_partial.")
    # Accepted cell runs' headline percentiles: one column per figure, a row per cell run
    # and metric (``NightMetric``'s fields, its intervals as low and high columns).
    cell: list[str] = Field(description="Cell id of each row.")
    arm: list[str] = Field(description="Arm name of each row.")
    role: list[Role] = Field(description="The arm's role that night.")
    metric: list[str] = Field(description="Headline request metric (workload.metrics).")
    n: CountColumn
    p50: P50Column
    p95: P95Column
    p50_low: BoundColumn
    p50_high: BoundColumn
    p95_low: BoundColumn
    p95_high: BoundColumn

    @model_validator(mode="after")
    def _one_row_per_index(self) -> Self:
        lengths = {len(getattr(self, name)) for name in COLUMNS}
        if len(lengths) > 1:
            raise ValueError(f"the columns {', '.join(COLUMNS)} differ in length")
        return self

    @classmethod
    def of(
        cls, *, campaign: str, host: str, night: date, coverage: str, metrics: Sequence[NightMetric]
    ) -> Night:
        def low(i: Interval | None) -> float | None:
            return i.low if i else None

        def high(i: Interval | None) -> float | None:
            return i.high if i else None

        return cls(
            campaign=campaign,
            host=host,
            night=night,
            coverage=coverage,
            cell=[m.cell for m in metrics],
            arm=[m.arm for m in metrics],
            role=[m.role for m in metrics],
            metric=[m.metric for m in metrics],
            n=[m.n for m in metrics],
            p50=[m.p50 for m in metrics],
            p95=[m.p95 for m in metrics],
            p50_low=[low(m.p50_interval) for m in metrics],
            p50_high=[high(m.p50_interval) for m in metrics],
            p95_low=[low(m.p95_interval) for m in metrics],
            p95_high=[high(m.p95_interval) for m in metrics],
        )

    @property
    def metrics(self) -> list[NightMetric]:
        """The rows as objects (a few nights' worth; the history reads the columns)."""
        return [
            NightMetric(
                cell=self.cell[i],
                arm=self.arm[i],
                role=self.role[i],
                metric=self.metric[i],
                n=self.n[i],
                p50=self.p50[i],
                p95=self.p95[i],
                p50_interval=_interval(self.p50_low[i], self.p50_high[i]),
                p95_interval=_interval(self.p95_low[i], self.p95_high[i]),
            )
            for i in range(len(self.cell))
        ]


COLUMNS = (
    *("cell", "arm", "role", "metric", "n", "p50", "p95"),
    *("p50_low", "p50_high", "p95_low", "p95_high"),
)


def _interval(low: float | None, high: float | None) -> Interval | None:
    return None if low is None or high is None else Interval(low=low, high=high)
