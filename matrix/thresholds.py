"""Validity thresholds of a campaign: what the guard allows before it fails or blocks a cell."""

from __future__ import annotations

from pydantic import Field

from faceoff.artifact import Spec
from matrix.fields import MAX_PERIOD_S, MIN_PERIOD_S, omitted_at

STALL_THRESHOLD_MS = 20.0

MAX_REQUEST_STALL_MS = 50.0

MAX_STALLED_REQUESTS = 0.1

MAX_CLIENT_CPU_WAIT = 0.1

MAX_SCHEDULE_LAG_MS = 100.0
MAX_GPU_SLOWDOWN_SHARE = 0.1


class Thresholds(Spec):
    max_error_rate: float = Field(default=0.0, ge=0, le=1, description="Errored/scored requests.")
    max_oom: int = Field(default=0, ge=0, description="OOM observations allowed.")
    max_preemptions: int = Field(default=0, ge=0, description="Engine preemptions allowed.")
    max_refusals: int = Field(default=0, ge=0, description="Refused requests allowed.")
    require_finish_reason: bool = Field(
        default=False,
        exclude_if=omitted_at(False),
        description="Count a stream that ended with usage and [DONE] but no finish_reason "
        "(journaled ok, its reason null) as an error in error_rate.",
    )
    counter_tolerance_tokens: int = Field(default=0, ge=0, description="Reconciliation slack.")
    cold_cache_max_hit_ratio: float = Field(
        default=0.0, ge=0, le=1, description="Prefix-cache hits/queries allowed in a cold cell."
    )
    input_tolerance: float = Field(default=0.05, ge=0, le=1, description="Actual vs target input.")
    needle_max_missed: float = Field(
        default=0.0,
        ge=0,
        le=1,
        exclude_if=omitted_at(0.0),
        description="Share of answered scored needle requests allowed to miss the marker.",
    )
    engine_period_s: float = Field(
        default=0.5, ge=MIN_PERIOD_S, le=MAX_PERIOD_S, description="Engine scrape cadence."
    )
    memory_period_s: float = Field(
        default=2.0, ge=MIN_PERIOD_S, le=MAX_PERIOD_S, description="GPU/host sampling cadence."
    )
    min_coverage: float = Field(
        default=0.95, ge=0, le=1, description="Share of ticks sampled (on time or late)."
    )
    max_consecutive_misses: int = Field(
        default=2, ge=0, description="Ticks in a row never sampled, failed or without the family."
    )
    # Host stalls (docs/guards.md "Host stalls"); defaults chosen from measurements there.
    stall_threshold_ms: float = Field(
        default=STALL_THRESHOLD_MS,
        gt=0,
        exclude_if=omitted_at(STALL_THRESHOLD_MS),
        description="A host-stall monitor wake-up this late (ms) is recorded as a stall.",
    )
    max_request_stall_ms: float = Field(
        default=MAX_REQUEST_STALL_MS,
        ge=0,
        exclude_if=omitted_at(MAX_REQUEST_STALL_MS),
        description="A scored request overlapping more stall than this (ms) is affected.",
    )
    max_stalled_requests: float = Field(
        default=MAX_STALLED_REQUESTS,
        ge=0,
        le=1,
        exclude_if=omitted_at(MAX_STALLED_REQUESTS),
        description="Share of scored requests affected by stalls beyond which the cell is blocked "
        "host_stall (any fewer affected are flagged).",
    )
    max_client_cpu_wait: float = Field(
        default=MAX_CLIENT_CPU_WAIT,
        ge=0,
        le=1,
        exclude_if=omitted_at(MAX_CLIENT_CPU_WAIT),
        description="The client's CPU wait as a share of the cell window beyond which the cell "
        "is blocked host_stall.",
    )
    max_schedule_lag_ms: float = Field(
        default=MAX_SCHEDULE_LAG_MS,
        gt=0,
        exclude_if=omitted_at(MAX_SCHEDULE_LAG_MS),
        description="Open loop: p99 of send − due (ms) over the scored requests beyond which "
        "the cell is blocked schedule_lag (the load offered was not the load declared).",
    )
    # GPU validity (docs/guards.md "GPU validity").
    max_gpu_slowdown_share: float = Field(
        default=MAX_GPU_SLOWDOWN_SHARE,
        ge=0,
        le=1,
        exclude_if=omitted_at(MAX_GPU_SLOWDOWN_SHARE),
        description="Share of a GPU's readings in the cell window with a thermal or "
        "power-delivery slowdown beyond which the cell is blocked gpu_throttled (any fewer "
        "are flagged).",
    )
