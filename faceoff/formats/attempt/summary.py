"""``summary.json``: the request summary of one cell attempt, recomputable from its journal
and its plan. The same concept at another layer: ``evidence.attempt.summary`` (which computes it).

Its parts are each computed beside their statistic: the energy figures (``evidence.attempt.energy``
over ``collectors.gpu.energy``), goodput (``evidence.attempt.goodput``), a needle search
(``evidence.attempt.needle_search``), an open-loop load (``evidence.attempt.open_loop``, the
schedule lag of ``workload.lag``) and the tails (``evidence.attempt.tails``).

Format history of ``RequestSummary.schema_version`` (in full: docs/evidence.md, "Format histories"):
  1 — first release; later in 1, ``contract_violations`` (breaches only) and ``open_loop``.
  2 — ``roles``, ``length_limited``, ``length_rule`` (version 1 reads with the rule ``exclude``).
  3 — ``goodput`` (None without an SLO); later in 3, ``needle_search``; later in 3,
      ``unnamed_finishes`` (scored requests ok without a finish_reason), absent while none.
  4 — ``energy`` (the arm's GPU joules over the scored window, per output token and per
      good request; absent without ``gpu.jsonl``) and ``tails`` (TTFT, E2E and inter-token
      latency p50/p95/p99/max, each p99 with its n and whether it can be claimed).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from matrix.arrival import Arrival
from matrix.cell import LengthRule
from matrix.fields import omitted_at
from matrix.slo import Slo

SUMMARY_FILE = "summary.json"


class Stats(Spec):
    """A distribution over requests, and why some requests have no value."""

    n: int = Field(description="Requests with a value.")
    mean: float | None = Field(description="Arithmetic mean; None when n = 0.")
    min: float | None = Field(description="Smallest value.")
    max: float | None = Field(description="Largest value.")
    p50: float | None = Field(description="Median (type-7 interpolation).")
    p95: float | None = Field(description="95th percentile (type-7 interpolation).")
    undefined: dict[str, int] = Field(
        default_factory=dict, description="Reason the metric is undefined -> requests."
    )


class JournalHealth(Spec):
    torn_tail: bool = Field(description="The last line is unterminated (a kill mid-write).")
    bad_lines: list[int] = Field(description="1-based lines that are not JSON.")
    invalid: list[str] = Field(description="JSON lines that are not valid outcomes, and why.")


class EnergyMethod(StrEnum):
    COUNTER = "counter"  # NVML's total-energy counter, read at the window's edges
    INTEGRATED_POWER = "integrated_power"  # trapezoid over the power samples


class DeviceEnergy(Spec):
    index: int = Field(description="NVML device index (one of the arm's GPU ids).")
    joules: float | None = Field(description="Energy over the window; None when unknown.")
    method: EnergyMethod | None = Field(description="counter or integrated_power; None: neither.")
    readings: int = Field(description="Readings of the chosen source the result rests on.")
    spans_window: bool = Field(
        description="A reading at or before the start and one at or after the end (else the "
        "missing edge is extrapolated flat)."
    )
    note: str | None = Field(description="Why integrated, or why unknown, or what was missed.")


class CellEnergy(Spec):
    window_s: float = Field(description="Length of the cell window (s).")
    simulated: bool = Field(description="True: from a simulator's virtual GPU.")
    devices: list[DeviceEnergy] = Field(description="One entry per GPU of the arm.")
    joules: float | None = Field(description="Sum over the arm's GPUs; None if one is unknown.")
    exact: bool = Field(description="Every GPU by its counter, over readings spanning the window.")

    @property
    def mean_power_w(self) -> float | None:
        return None if self.joules is None or self.window_s <= 0 else self.joules / self.window_s


EnergySource = Literal["counter", "integrated_power", "mixed"]


class EnergyFigures(Spec):
    gpu: CellEnergy = Field(description="Joules per GPU and in all over the scored window.")
    method: EnergySource | None = Field(
        description="counter (every GPU by NVML's energy counter), integrated_power (every "
        "GPU by its power samples), mixed; None when no GPU's energy is known."
    )
    output_tokens: int = Field(description="Completion tokens of scored requests with usage.")
    energy_per_token_j: float | None = Field(description="Joules per output token.")
    output_tokens_per_j: float | None = Field(description="Output tokens per joule.")
    goodput_per_joule: float | None = Field(
        description="Requests that met the cell's SLO per joule; None without an SLO."
    )
    goodput_tokens_per_j: float | None = Field(
        description="Their completion tokens per joule; None without an SLO."
    )

    @property
    def simulated(self) -> bool:
        return self.gpu.simulated


class Goodput(Spec):
    slo: Slo = Field(description="The SLO the cell was judged against.")
    scored: int = Field(description="Scored requests judged (every terminal status).")
    good: int = Field(description="Of those, succeeded and met every bound.")
    attainment: float | None = Field(description="good / scored; None with no scored request.")
    within_slo: bool | None = Field(
        description="attainment ≥ slo.attainment; None with no scored request."
    )
    requests_per_s: float | None = Field(description="Good requests per second of the window.")
    output_tps: float | None = Field(
        description="Completion tokens of good requests per second of the window."
    )
    window_s: float | None = Field(description="First scored send to last scored end.")


class SearchProbe(Spec):
    index: int = Field(description="Probe number, from 0, in the order sent.")
    target_input_tokens: int = Field(description="Input target the bisection asked for.")
    input_tokens: int = Field(description="Prompt tokens the lane counted.")
    status: str = Field(description="Terminal status of the probe's request.")
    recalled: bool | None = Field(
        description="The marker came back verbatim; False: garbled or refused; None: no answer."
    )


class SearchSummary(Spec):
    probes: list[SearchProbe] = Field(description="Every probe, in the order sent.")
    verified_tokens: int | None = Field(
        description="Longest input (lane tokens) whose marker came back; None: none did."
    )
    failed_tokens: int | None = Field(
        description="Shortest input that missed; None: every answered probe recalled."
    )
    resolution_tokens: int | None = Field(
        description="failed − verified: how precisely the search bracketed the edge."
    )


class StepSummary(Spec):
    step: int = Field(description="Step index, in the order run.")
    rate_rps: float | None = Field(description="Arrival rate on the step's lines (req/s).")
    planned: int = Field(description="Scored requests planned in the step.")
    ok: int = Field(description="Scored requests of the step that ended ok.")
    ttft_p50_s: float | None = Field(description="Visible TTFT p50 of its ok requests.")
    ttft_p95_s: float | None = Field(description="Visible TTFT p95 of its ok requests.")
    attainment: float | None = Field(description="Share of planned requests meeting the SLO.")
    within_slo: bool | None = Field(description="attainment ≥ the SLO's; None without an SLO.")


class SweepResult(Spec):
    max_rate_within_slo: float | None = Field(
        description="Highest passing rate below the lowest failing one; None: none passed."
    )
    breaks_at_rate: float | None = Field(
        description="Lowest failing rate: the SLO breaks between the two; None: none failed."
    )
    ladder_followed: bool = Field(description="Every step ran the rate the sweep's rule gives.")


class Lag(Spec):
    n: int = Field(description="Sent scored requests.")
    p50_ms: float | None = Field(description="Median send − due (type-7), ms.")
    p99_ms: float | None = Field(description="99th percentile send − due (type-7), ms.")
    max_ms: float | None = Field(description="Largest send − due, ms.")


class LoadSummary(Spec):
    arrival: Arrival = Field(description="poisson or constant.")
    max_in_flight: int = Field(description="Bound on requests in flight (the concurrency).")
    schedule_lag: Lag = Field(description="send − due over the sent scored requests.")
    steps: list[StepSummary] = Field(description="One per step (one for a single run).")
    sweep: SweepResult | None = Field(description="A sweep's result; None for a single run.")


class TailStats(Spec):
    """A distribution's tail, and whether its p99 can be claimed."""

    n: int = Field(description="Values (requests; for ITL, chunk gaps).")
    p50: float | None = Field(description="Median (type-7 interpolation); None when n = 0.")
    p95: float | None = Field(description="95th percentile (type-7).")
    p99: float | None = Field(description="99th percentile (type-7).")
    max: float | None = Field(description="Largest value.")
    confidence: float = Field(description="Confidence a p99 claim is made at.")
    p99_floor: int = Field(
        description="Fewest values whose second-largest bounds the p99 at that confidence."
    )
    p99_claimed: bool = Field(
        description="Its independent blocks (n over the values' block length) reach the "
        "floor: the p99 can be claimed."
    )


class RequestSummary(Artifact):
    schema_version: Literal[1, 2, 3, 4] = Field(
        default=4, description="Request summary format version."
    )
    cell_id: str = Field(description="Cell of the plan.")
    arm: str = Field(description="Arm the requests went to.")
    attempt: int = Field(description="Attempt number of the cell run.")
    plan_sha256: str = Field(description="sha256 of requests.json's content.")
    quantile_method: str = Field(description="How p50 and p95 are computed.")
    planned_scored: int = Field(description="Scored requests in the plan.")
    journaled_scored: int = Field(description="Scored requests with a journal line.")
    missing_scored: list[int] = Field(description="Planned scored indices with no journal line.")
    foreign_lines: int = Field(
        description="Lines whose plan hash, cell, arm or attempt is not this attempt's."
    )
    statuses: dict[str, int] = Field(description="Scored lines by terminal status.")
    warmups: int = Field(description="Warmup lines (never scored).")
    diagnostics: int = Field(description="Diagnostic lines (never scored).")
    refusals: int = Field(description="Scored lines the server refused.")
    contract_violations: int = Field(
        description="Scored lines that overran their output contract (more words, or stopped "
        "at max_tokens), as the contract guard counts them; an under-run is no breach."
    )
    markers_missed: int = Field(description="Scored needle lines without the marker verbatim.")
    target_input_tokens: list[int] = Field(description="Distinct input targets of scored requests.")
    input_tokens: Stats = Field(description="usage.prompt_tokens of counted scored requests.")
    completion_tokens: Stats = Field(
        description="usage.completion_tokens of counted scored requests."
    )
    metrics: dict[str, Stats] = Field(description="Request metric -> its distribution.")
    roles: dict[str, dict[str, Stats]] = Field(
        default_factory=dict,
        description="Request role -> metric -> distribution; empty for a cell of one role.",
    )
    length_limited: int = Field(
        default=0, description="Scored requests that stopped at max_tokens unasked."
    )
    length_rule: LengthRule = Field(
        default="exclude", description="Whether the statistics count those requests."
    )
    unnamed_finishes: int = Field(
        default=0,
        exclude_if=omitted_at(0),
        description="Scored requests that ended ok without a finish_reason (usage and [DONE] "
        "only); counted as ok.",
    )
    aggregate_output_tps: float | None = Field(
        description="Σ completion / (last end − first send)."
    )
    first_send_ns: int | None = Field(description="perf_counter_ns of the first scored send.")
    last_end_ns: int | None = Field(
        description="perf_counter_ns the last sent scored request ended."
    )
    journal: JournalHealth = Field(description="What could not be read from the journal.")
    goodput: Goodput | None = Field(
        default=None, description="Requests meeting the cell's SLO; None when it declares none."
    )
    open_loop: LoadSummary | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Open loop: schedule lag p50/p99, each step against the SLO, a sweep's "
        "highest rate within SLO.",
    )
    needle_search: SearchSummary | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="needle_search: its probes (no latency samples) and the lengths they bound.",
    )
    energy: EnergyFigures | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The arm's GPU energy over the scored window, per output token and per "
        "good request (gpu.jsonl); absent where the arm has no GPU ids.",
    )
    tails: dict[str, TailStats] = Field(
        default_factory=dict,
        description="ttft_s, e2e_s and itl_s (inter-token latency, from the chunk times) -> "
        "p50/p95/p99/max, each p99 with its n and whether it can be claimed.",
    )
