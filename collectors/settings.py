"""Cadence settings of a cell's collectors, recorded in telemetry.json for the audit."""

from __future__ import annotations

from pydantic import Field, model_validator

from faceoff.artifact import Spec
from matrix.thresholds import STALL_THRESHOLD_MS, Thresholds


class CollectorSettings(Spec):
    engine_period_s: float = Field(default=0.5, gt=0, description="Engine /metrics cadence.")
    engine_timeout_s: float | None = Field(
        default=None, gt=0, description="Total scrape deadline; default 0.8 × the engine period."
    )
    memory_period_s: float = Field(default=2.0, gt=0, description="GPU and host cadence.")
    late_fraction: float = Field(
        default=0.2, gt=0, lt=1, description="A tick starting later than this × period is late."
    )
    drain_timeout_s: float = Field(
        default=2.0, ge=0, description="How long the drain sample waits for an idle engine."
    )
    stall_threshold_ms: float = Field(
        default=STALL_THRESHOLD_MS,
        gt=0,
        description="The host-stall monitor records a wake-up this late (ms) as a stall.",
    )

    @model_validator(mode="after")
    def _timeout_inside_period(self) -> CollectorSettings:
        if self.scrape_timeout_s >= self.engine_period_s:
            raise ValueError(
                f"engine_timeout_s {self.scrape_timeout_s} must be shorter than engine_period_s "
                f"{self.engine_period_s}, or a hanging endpoint would stall the schedule"
            )
        return self

    @classmethod
    def from_thresholds(cls, thresholds: Thresholds) -> CollectorSettings:
        return cls(
            engine_period_s=thresholds.engine_period_s,
            memory_period_s=thresholds.memory_period_s,
            stall_threshold_ms=thresholds.stall_threshold_ms,
        )

    @property
    def scrape_timeout_s(self) -> float:
        return self.engine_timeout_s or 0.8 * self.engine_period_s

    @property
    def engine_period_ns(self) -> int:
        return round(self.engine_period_s * 1e9)

    @property
    def memory_period_ns(self) -> int:
        return round(self.memory_period_s * 1e9)

    @property
    def stall_threshold_ns(self) -> int:
        return round(self.stall_threshold_ms * 1e6)

    def late_after_ns(self, period_ns: int) -> int:
        return int(period_ns * self.late_fraction)
