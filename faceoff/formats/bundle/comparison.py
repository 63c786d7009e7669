"""``comparison.json``: the machine-readable result of a campaign, and the card's only input.

Every number here was computed from a native artifact of the bundle, and each
entry names that artifact (``sources``), so a reader can trace any figure of
RESULT.md or report.html back to a file. The JSON Schema is exported to
``evidence/schemas/comparison.schema.json``.

Format history of ``Comparison.schema_version`` (in full: docs/evidence.md, "Format histories"):
  1 — first release.
  2 — block-bootstrap ratio intervals (``blocks_*``); ``aa``; arm cells gain ``host_stalls``.
  3 — ``replicated``: between-replicate intervals of replicated cells.
  4 — ratio and pair ``verdict``; each cell run's ``history``; reviews superseded, outstanding.
  5 — roles, length-limited, probe answers and streams, quality, cold start, variants, posture.
  6 — ``goodput`` (and its method), ``ruling``, ``overrode_rule``, ``statistic``, ``tail_ratios``.
  7 — expanded percentile intervals (wider where few blocks); same shape.
  8 — ``carried``; later in 8, a needle search's answer in ``tokens``, its pair ``not compared``;
      later in 8, ``unnamed_finishes`` (requests ok without a finish_reason); later in 8, a
      rule's ``candidates``, criteria on ``output_tps``, a rule without cells counting the
      cells its criteria judge (same shape).
  9 — ``preflight`` (each run's preflight report and the operator's waivers) and ``pilot``
      (what the pilot found before the scored cells, the runs it blocked); both empty without.
  10 — ``sequential``: each sequential cell's looks, its spending and why it stopped, and the
      passes record's budget; a ratio's ``statistic`` may be ``p99`` (where both arms have
      the requests to claim one); a sequential cell's passes that never ran are not cells;
      later in 10, a dataset or trace cell's ``reuse`` (the plan's offline prefix reuse beside
      each arm's measured prefix-cache hit ratio), left out elsewhere (same shape); later in
      10, the futility stop: ``sequential.futility``, a cell's ``futility`` wedge and a
      criterion's ``futile_at`` (defaults for older files).
  11 — arm cells gain ``energy`` (GPU joules over the scored window, per output token and per
      good request, its method, simulated or not), ``speculation`` (draft acceptance from the
      engine's counters) and ``tails`` (TTFT, E2E, ITL p50/p95/p99/max, each p99 with its n
      and whether it can be claimed); cells gain ``figure_ratios`` (energy point ratios);
      ``replicated`` may hold energy metrics; ``spec_pairs`` (structured against prose
      decode, arm by arm); ``posture`` gains the GPU posture at the start, the end and per
      lane run.
  12 — cells gain ``window_ratios`` (output throughput and goodput a rule judges, each with a
      time-block bootstrap interval); a sequential look gains ``descriptive`` (why it may not
      decide); the ruling decides only on calibrated intervals (a point ratio, a zero-width
      interval or one below its calibrated requests is descriptive); a ratio's or pair's
      ``verdict`` may be ``descriptive``; ``aa`` gains ``p_value`` (its verdict a binomial
      test over the calibrated intervals); ``ruling`` gains ``error_control`` (promote's
      error split across candidates, do not promote Holm-adjusted); later in 12,
      ``fidelity`` and ``fidelity_method`` (each fidelity cell's arms against the
      reference), left out without a fidelity cell, and the rule's fidelity criteria as
      criterion lines whose ``test`` is ``limit`` (same shape).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.summary import EnergyFigures, Goodput, Stats, TailStats
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from faceoff.formats.bundle.lane_facts import BootFacts, ColdStart, SpecAcceptance
from faceoff.formats.bundle.prefix_reuse import PrefixReuse
from faceoff.formats.bundle.probe_figures import ProbeAnswer, StreamLatency
from faceoff.formats.bundle.quality_results import QualityResult
from faceoff.formats.bundle.sequential_looks import SequentialView
from faceoff.formats.carried import Carryover
from faceoff.formats.host_posture import PostureView
from faceoff.formats.pilot import PilotRecord
from faceoff.formats.preflight import CheckResult, PreflightReport
from faceoff.formats.reasons import Disposition
from matrix.arm import Recipe
from matrix.cell import Sampling
from matrix.fields import omitted_at
from matrix.rule import Rule

COMPARISON_FILE = "comparison.json"
COMPARISON_VERSION = 12  # ``upgraded`` moves older files forward
CampaignStatus = Literal["complete", "closed_partial"]
RatioVerdict = Literal["better", "worse", "no difference", "descriptive"]
PairVerdict = Literal["better", "worse", "mixed", "no difference", "descriptive", "not compared"]


# How the card, the report and the ruling's sentences name each ratio metric.
RATIO_LABELS = {
    "effective_prefill_tps": "effective prefill",
    "ttfo_s": "TTFO",
    "ttft_s": "TTFT",
    "decode_tps": "decode",
    "e2e_s": "E2E",
    "tpot_s": "TPOT",
}
# How they name each energy figure (one value per arm and cell: point ratios) and each
# window figure a rule judges (with a time-block interval).
FIGURE_LABELS = {
    "energy_per_token_j": "energy per output token",
    "goodput_per_joule": "goodput per joule",
    "output_tps": "output throughput",
    "goodput_rps": "goodput (req/s)",
    "goodput_tps": "goodput (tok/s)",
    "slo_attainment": "SLO attainment",
}


def metric_label(metric: str) -> str:
    """'TTFT', 'energy per output token': a ratio's metric as the card names it."""
    return RATIO_LABELS.get(metric) or FIGURE_LABELS[metric]


class ArmIdentity(Spec):
    lane_run: str | None = Field(description="lanes/<arm>/<run> whose identity is shown.")
    verified: bool | None = Field(description="Identity matched every pin; None if never checked.")
    running_image: str | None = Field(description="Digest the running container was verified on.")
    served_model: str | None = Field(description="Model id /v1/models reported.")
    root: str | None = Field(description="Model root /v1/models reported.")
    quantizations: list[str] = Field(description="quantization= values of the boot log.")
    weights_sha256: str | None = Field(description="Hash of the weights manifest, if hashed.")


class SimulatorFacts(Spec):
    profile: str = Field(description="Simulator profile the lane ran.")
    time_scale: float = Field(description="The engine model ran this many times faster.")


class ArmEntry(Spec):
    name: str = Field(description="Arm name.")
    role: Literal["incumbent", "candidate"] = Field(description="incumbent or candidate.")
    lane: str = Field(description="docker, process or simulator.")
    image: str | None = Field(description="Pinned image repo@sha256:….")
    recipe: Recipe = Field(description="Recipe facts from the frozen matrix.")
    env_knobs: dict[str, str] = Field(description="Env knobs of the arm (secrets never appear).")
    engine_args: list[str] = Field(description="Engine flags of the arm.")
    memory_limit: str | None = Field(description="Container memory limit.")
    simulator: SimulatorFacts | None = Field(description="Set when the lane is the simulator.")
    identity: ArmIdentity = Field(description="What the lane proved about itself.")
    boot: BootFacts | None = Field(description="Startup memory report from the boot log.")
    sources: list[str] = Field(description="Bundle files these facts come from.")
    cold_start: ColdStart | None = Field(
        default=None, description="First warmup's TTFT after the start against the later ones."
    )


class EngineFacts(Spec):
    prefill_mean_s: float | None = Field(description="request_prefill_time_seconds sum/count.")
    queue_mean_s: float | None = Field(description="request_queue_time_seconds sum/count.")
    max_running: float | None = Field(description="Sampled max of num_requests_running.")
    max_waiting: float | None = Field(description="Sampled max of num_requests_waiting.")
    max_kv_usage_perc: float | None = Field(description="Sampled max KV usage (1.0 = full).")
    kv_pool_tokens: int | None = Field(description="Runtime-reported KV pool (block × blocks).")
    preemptions: float | None = Field(description="num_preemptions delta over the cell.")
    prefix_cache_hits: float | None = Field(description="prefix_cache_hits delta over the cell.")


class MemoryFacts(Spec):
    worst_gpu_index: int | None = Field(description="Device with the highest sampled use.")
    worst_gpu_used_bytes: int | None = Field(description="That device's sampled max used.")
    min_gpu_free_bytes: int | None = Field(description="Lowest sampled free of any one device.")
    lane_peak_bytes: int | None = Field(description="Sampled max lane (cgroup) memory.")
    lane_source: str | None = Field(description="Where lane memory came from.")
    host_available_min_bytes: int | None = Field(description="Sampled min host available.")


class StallFacts(Spec):
    stalls: int = Field(description="Host stalls the monitor saw in the window.")
    stalled_share: float = Field(description="Part of the window the host was stalled.")
    longest_ms: float = Field(description="Longest of those stalls (ms).")
    client_wait_share: float | None = Field(
        description="The client's CPU wait as a share of the window; None if not read."
    )


class AttemptEntry(Spec):
    attempt: int = Field(description="Attempt number; a rerun is a new attempt.")
    disposition: Disposition = Field(description="accepted, failed, blocked or pending.")
    reason_code: str | None = Field(description="Guard reason code, for failed or blocked.")
    reason: str | None = Field(description="The guard's sentence.")
    started_at: datetime | None = Field(description="When it began (cell.json); None if unknown.")
    stands: bool = Field(description="This attempt's verdict is the cell run's (the latest).")


class ArmCell(Spec):
    arm: str = Field(description="Arm name.")
    attempt: int | None = Field(description="Attempt whose verdict stands; None if never run.")
    disposition: Disposition = Field(description="accepted, failed, blocked or pending.")
    reason_code: str | None = Field(description="Guard reason code, for failed or blocked.")
    reason: str | None = Field(description="The guard's sentence.")
    oom: bool | None = Field(description="The lane was OOM-killed during the cell, where known.")
    planned: int = Field(description="Scored requests planned.")
    statuses: dict[str, int] = Field(description="Scored requests by terminal status.")
    refusals: int = Field(description="Scored requests refused.")
    input_tokens: Stats | None = Field(description="Actual prompt tokens (API usage).")
    completion_tokens: Stats | None = Field(description="Completion tokens (API usage).")
    metrics: dict[str, Stats] = Field(description="Request metric -> distribution.")
    roles: dict[str, dict[str, Stats]] = Field(
        default_factory=dict, description="Request role -> metric -> distribution (summary)."
    )
    length_limited: int = Field(
        default=0, description="Scored requests that stopped at max_tokens unasked."
    )
    unnamed_finishes: int = Field(
        default=0,
        exclude_if=omitted_at(0),
        description="Scored requests that ended ok without a finish_reason (summary).",
    )
    aggregate_output_tps: float | None = Field(description="Cell aggregate output throughput.")
    engine: EngineFacts | None = Field(description="From telemetry.json.")
    memory: MemoryFacts | None = Field(description="From telemetry.json.")
    host_stalls: StallFacts | None = Field(
        default=None, description="From telemetry.json; None where no stall monitor ran."
    )
    sources: dict[str, str] = Field(description="summary, telemetry, verdict, journal -> path.")
    history: list[AttemptEntry] = Field(description="Every attempt of the cell run, oldest first.")
    goodput: Goodput | None = Field(
        default=None, description="From summary.json; None where the cell declares no SLO."
    )
    energy: EnergyFigures | None = Field(
        default=None,
        description="From summary.json: GPU joules over the scored window, per output token "
        "and per good request; None where the arm has no GPU ids.",
    )
    speculation: SpecAcceptance | None = Field(
        default=None,
        description="Draft acceptance from the engine's spec_decode counter deltas "
        "(telemetry.json); None where the engine does not speculate.",
    )
    tails: dict[str, TailStats] = Field(
        default_factory=dict,
        description="From summary.json: ttft_s, e2e_s, itl_s -> p50/p95/p99/max, each p99 "
        "with its n and whether it can be claimed.",
    )


RatioStatistic = Literal["p50", "p95", "p99"]


class Ratio(Spec):
    metric: str = Field(description="Request metric compared.")
    candidate: str = Field(description="Candidate arm.")
    statistic: RatioStatistic = Field(
        default="p50", description="The percentile compared: p50, or p95 or p99 for a rule's tail."
    )
    ratio: float = Field(description="candidate / incumbent of the statistic (p50 unless p95).")
    low: float = Field(description="Lower bound of the bootstrap interval.")
    high: float = Field(description="Upper bound of the bootstrap interval.")
    confidence: float = Field(description="Interval confidence, e.g. 0.95.")
    resamples: int = Field(
        description="Bootstrap resamples the interval rests on: those drawn (2,000), less any "
        "whose incumbent median was zero."
    )
    seed: int = Field(description="Bootstrap seed.")
    n_incumbent: int = Field(description="Incumbent requests the ratio rests on.")
    n_candidate: int = Field(description="Candidate requests the ratio rests on.")
    blocks_incumbent: int = Field(
        description="Blocks of consecutive incumbent requests the interval resampled."
    )
    blocks_candidate: int = Field(
        description="Blocks of consecutive candidate requests the interval resampled."
    )
    higher_is_better: bool = Field(description="The metric is better higher (rates), else lower.")
    verdict: RatioVerdict = Field(
        description="For the candidate: better or worse when the interval excludes 1, else "
        "no difference; descriptive (no verdict) when the interval is not calibrated (fewer "
        "requests per arm than its method needs, or no width)."
    )


class FigureRatio(Spec):
    metric: str = Field(description="energy_per_token_j or goodput_per_joule.")
    candidate: str = Field(description="Candidate arm.")
    ratio: float = Field(
        description="candidate / incumbent: a point ratio of one value per arm, no interval "
        "within one cell (a replicated cell's interval is in ``replicated``)."
    )
    higher_is_better: bool = Field(description="The figure is better higher, else lower.")
    simulated: bool = Field(description="Either arm's energy is a simulator's virtual GPU's.")


class PairEntry(Spec):
    candidate: str = Field(description="Candidate arm of the pair.")
    comparable: bool = Field(description="Both arms accepted and the pair's plans match.")
    reason: str | None = Field(description="arm_not_accepted or pair_mismatch when not.")
    sentence: str = Field(description="The guard's sentence.")
    verdict: PairVerdict = Field(
        description="Over the pair's ratios: better or worse when every ratio that differs "
        "says so, mixed when they disagree, no difference when none differs; not compared "
        "when the pair is not comparable, or is a needle search (no latency ratio: its "
        "answer pairs the verified lengths)."
    )


class CellEntry(Spec):
    id: str = Field(description="Cell id.")
    kind: str = Field(description="Workload kind.")
    stratum: str = Field(
        description="kind/input target/load (cN, or arrival-rate); ratios never cross it."
    )
    input_target: int = Field(description="Nominal input target in tokens.")
    concurrency: int = Field(description="Client streams in flight.")
    requests: int = Field(description="Scored requests per arm.")
    warmups: int = Field(description="Unscored warmups before the cell.")
    sampling: Sampling = Field(description="Request parameters of the cell.")
    variants: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Sampling field -> arm -> value, declared by the cell."
    )
    arms: list[ArmCell] = Field(description="The cell on each arm that runs it.")
    pairs: list[PairEntry] = Field(description="Each candidate's pair with the incumbent.")
    ratios: list[Ratio] = Field(description="Per candidate and metric, for comparable pairs.")
    answers: list[ProbeAnswer] = Field(
        default_factory=list, description="What the probe cell answers, per comparable pair."
    )
    streams: list[StreamLatency] = Field(
        default_factory=list, description="Per-stream TTFO of a concurrent prefill probe."
    )
    tail_ratios: list[Ratio] = Field(
        default_factory=list,
        description="p95 ratios of the metrics a declared rule judges at p95; the card's tables "
        "show the p50 ones.",
    )
    reuse: PrefixReuse | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="A dataset or trace cell's prefix reuse: the plan's offline figure and "
        "each arm's measured hit ratio; None (left out) for synthetic prompts.",
    )
    figure_ratios: list[FigureRatio] = Field(
        default_factory=list,
        description="Energy point ratios per comparable candidate (energy per output token, "
        "goodput per joule), where both arms have the figure.",
    )
    window_ratios: list[Ratio] = Field(
        default_factory=list,
        description="Cell-window figures a declared rule judges (output_tps, goodput_rps, "
        "goodput_tps, slo_attainment), per comparable candidate, each with its time-block "
        "bootstrap interval; n and blocks count the window's requests and blocks.",
    )


class ReplicatedRatio(Spec):
    cell: str = Field(description="The cell as written, before replication.")
    candidate: str = Field(description="Candidate arm.")
    metric: str = Field(description="Request metric, or energy figure, compared.")
    replicates: int = Field(description="Replicates planned (K).")
    compared: list[str] = Field(description="Replicate cell ids whose pair has this ratio.")
    ratios: list[float] = Field(
        description="Their p50 ratios (an energy figure's point ratios), in replicate order."
    )
    ratio: float | None = Field(description="Geometric mean of the ratios.")
    low: float | None = Field(description="Lower bound of the between-replicate interval.")
    high: float | None = Field(description="Upper bound of the between-replicate interval.")
    confidence: float = Field(description="Interval confidence.")
    reason: str | None = Field(description="Why there is no interval, when there is none.")


class SpecPair(Spec):
    """One arm's decode_structured cell beside its decode_prose twin: speculative decoding
    accepts more drafts of predictable text."""

    arm: str = Field(description="Arm name.")
    structured_cell: str = Field(description="The decode_structured cell.")
    prose_cell: str = Field(description="Its decode_prose twin (same input and load).")
    structured: SpecAcceptance | None = Field(description="Acceptance in the structured cell.")
    prose: SpecAcceptance | None = Field(description="Acceptance in the prose cell.")
    structured_decode_tps: float | None = Field(description="Structured decode p50 (tok/s).")
    prose_decode_tps: float | None = Field(description="Prose decode p50 (tok/s).")


class ArmCoverage(Spec):
    arm: str = Field(description="Arm name.")
    planned: int = Field(description="Cell runs the plan gives the arm.")
    accepted: int = Field(description="Accepted cell runs.")
    failed: int = Field(description="Failed cell runs.")
    blocked: int = Field(description="Blocked cell runs.")
    pending: int = Field(description="Cell runs without a verdict.")
    scored_ok: int = Field(description="Successful scored requests in accepted cells.")


class Coverage(Spec):
    status: CampaignStatus = Field(description="complete only if every planned run is accepted.")
    sentence: str = Field(description="The guards' closure line with the counts.")
    planned: int = Field(description="Cell runs in the plan.")
    accepted: int = Field(description="Accepted cell runs.")
    failed: int = Field(description="Failed cell runs.")
    blocked: int = Field(description="Blocked cell runs.")
    pending: int = Field(description="Cell runs without a verdict.")
    matched_pairs: int = Field(description="Comparable pairs: both accepted, plans matching.")
    arms: list[ArmCoverage] = Field(description="Per arm.")


class FailureEntry(Spec):
    cell: str = Field(description="Cell id.")
    arm: str = Field(description="Arm.")
    disposition: Disposition = Field(description="failed or blocked.")
    reason_code: str | None = Field(description="Guard reason code.")
    reason: str | None = Field(description="The guard's sentence.")
    evidence: list[str] = Field(description="Bundle files that show it.")
    ticket: str | None = Field(description="Ticket id of its cluster.")


class RestorationEntry(Spec):
    present: bool = Field(description="receipt.json is in the bundle.")
    verified: bool = Field(description="Its own hash and judged outcome verify.")
    problem: str | None = Field(description="Why it does not verify, or is missing.")
    outcome: str | None = Field(description="restored | restored_with_changes | failed.")
    completed_at: datetime | None = Field(description="When the receipt was written.")
    lines: list[str] = Field(description="The receipt's own summary lines.")
    protected_total: int = Field(description="Protected operator files checked.")
    protected_changed: list[str] = Field(description="Protected files not proven unchanged.")
    problems: list[str] = Field(description="The receipt's problem sentences.")

    @property
    def proven(self) -> bool:
        """The incumbent's restoration is proven: a verified receipt that says restored."""
        return self.verified and self.outcome == "restored"


class ArmTotals(Spec):
    arm: str = Field(description="Arm name.")
    kv_pool_tokens: int | None = Field(description="Runtime KV pool of its first accepted cell.")
    kv_pool_cell: str | None = Field(description="The cell it is read from.")
    worst_gpu_used_bytes: int | None = Field(description="Highest sampled use of any device.")
    worst_gpu_cell: str | None = Field(description="The cell it was sampled in.")
    min_gpu_free_bytes: int | None = Field(description="Lowest sampled free of any device.")
    min_gpu_free_cell: str | None = Field(description="The cell it was sampled in.")
    lane_peak_bytes: int | None = Field(description="Largest sampled lane memory of any cell.")
    lane_peak_cell: str | None = Field(description="The cell it was sampled in.")
    scored_ok: int = Field(description="Successful scored requests in accepted cells.")
    oom_cells: int = Field(description="Cells whose lane was observed OOM-killed.")
    preemptions: float = Field(description="Engine preemptions summed over accepted cells.")
    refusals: int = Field(description="Refused scored requests over accepted cells.")


class TicketRef(Spec):
    id: str = Field(description="Ticket id.")
    reason_code: str = Field(description="Reason code the cluster shares.")
    cells: list[str] = Field(description="cell/arm runs in the cluster.")
    path: str = Field(description="tickets/<id>.md.")


class ReviewRef(Spec):
    decision: str = Field(description="promote | no_promotion | rerun_cells.")
    reviewer: str = Field(description="Who decided.")
    note: str = Field(description="The reviewer's note.")
    at: datetime = Field(description="When it was recorded.")
    forced_reason: str | None = Field(
        description="Why the decision overrode the campaign status or the declared rule."
    )
    overrode_rule: str | None = Field(
        default=None, description="The declared rule's outcome a forced decision contradicted."
    )
    record_sha256: str = Field(description="Hash of the review record.")
    cells: list[str] = Field(description="cell/arm runs a rerun_cells decision named.")
    superseded_by: list[str] = Field(
        description="'cell/arm attempt N' begun after the review: it saw other evidence."
    )
    outstanding: list[str] = Field(
        description="cell/arm runs a rerun_cells decision named that were not rerun since."
    )


class Caveat(Spec):
    code: str = Field(description="Stable code, e.g. small_n, simulator_lane.")
    text: str = Field(description="The caveat in one or two sentences.")


class AACalibration(Spec):
    intervals: int = Field(description="Ratio intervals of comparable pairs.")
    excluding_one: int = Field(description="Of those, intervals that exclude 1.")
    false_positive_rate: float | None = Field(description="excluding_one / intervals.")
    cells_compared: int = Field(description="Cells with at least one ratio.")
    cells_excluding_one: list[str] = Field(description="Cells with an interval excluding 1.")
    blocked_host_stall: int = Field(description="Cell runs the host_stall rule blocked.")
    target_rate: float = Field(description="The false positive rate of a 95 % interval.")
    p_value: float | None = Field(
        default=None,
        description="P(this many exclusions or more) for a calibrated instrument (binomial at "
        "target_rate over the intervals); None without an interval.",
    )
    passed: bool | None = Field(
        description="p_value at least 5 % (one calibrated campaign in 20 fails); None without "
        "an interval."
    )
    sentence: str = Field(description="The verdict in one sentence.")


RuleOutcome = Literal["promote", "do_not_promote", "no_decision"]
CriterionStatus = Literal["met", "not_met", "inconclusive", "missing"]


class CriterionCell(Spec):
    cell: str = Field(description="Cell id.")
    status: CriterionStatus = Field(description="How this cell's ratio stands to the bound.")
    ratio: float | None = Field(description="candidate / incumbent; None when there is none.")
    low: float | None = Field(description="Interval low; equals ratio for a goodput figure.")
    high: float | None = Field(description="Interval high; equals ratio for a goodput figure.")


class CriterionLine(Spec):
    metric: str = Field(description="Metric judged.")
    test: Literal["non_inferiority", "superiority", "limit"] = Field(
        description="Margin or target of a ratio, or a fidelity figure's limit."
    )
    bound: float = Field(description="The ratio bound the interval must clear.")
    status: CriterionStatus = Field(description="The criterion's standing: its worst cell's.")
    deciding_cell: str | None = Field(description="The cell whose interval decided it.")
    cells: list[CriterionCell] = Field(description="Every cell it judged.")
    sentence: str = Field(description="The line the card shows.")


class CandidateRuling(Spec):
    candidate: str = Field(description="Candidate arm.")
    outcome: RuleOutcome = Field(description="promote, do_not_promote or no_decision.")
    not_accepted: list[str] = Field(description="Counted cell runs not accepted (cell/arm).")
    criteria: list[CriterionLine] = Field(description="One line per criterion, in rule order.")
    headline: str = Field(description="The outcome in one sentence; the card's first line.")


class Ruling(Spec):
    rule: Rule = Field(description="The declared rule, as frozen in the matrix.")
    candidates: list[CandidateRuling] = Field(description="Per candidate, in arm order.")
    method: str = Field(description="How the rule is applied.")
    error_control: str = Field(
        default="",
        description="The campaign's error rates in words: promote's per-candidate split, "
        "do not promote's Holm adjustment (empty in files before version 12).",
    )


class Comparison(Artifact):
    schema_version: Literal[12] = Field(
        default=12, description="Comparison format version (COMPARISON_VERSION)."
    )
    campaign: str = Field(description="Campaign name.")
    description: str | None = Field(description="What the campaign asks.")
    matrix_id: str = Field(description="Frozen matrix id.")
    seed: int = Field(description="Campaign seed (prompts and bootstrap).")
    observed_from: datetime | None = Field(description="First lane start or cell send (UTC).")
    observed_to: datetime | None = Field(description="Restoration receipt time, if any (UTC).")
    arms: list[ArmEntry] = Field(description="Incumbent first, then candidates.")
    cells: list[CellEntry] = Field(description="Every planned cell, in matrix order.")
    totals: list[ArmTotals] = Field(description="Per arm, across its accepted cells.")
    coverage: Coverage = Field(description="Dispositions against the plan.")
    failures: list[FailureEntry] = Field(description="Failed and blocked cell runs.")
    restoration: RestorationEntry = Field(description="The restoration receipt.")
    tickets: list[TicketRef] = Field(description="Follow-up tickets in tickets/.")
    reviews: list[ReviewRef] = Field(description="Recorded human decisions, oldest first.")
    not_applicable: dict[str, str] = Field(description="Families declared not applicable, why.")
    caveats: list[Caveat] = Field(description="Limits of the evidence, generated from the data.")
    percentile_method: str = Field(description="How p50 and p95 are computed.")
    ratio_method: str = Field(description="How ratios and their intervals are computed.")
    definitions: str = Field(description="The metric definitions, verbatim.")
    aa: AACalibration | None = Field(
        default=None, description="An A/A campaign's verdict on the instrument; None otherwise."
    )
    instrument_method: str = Field(
        default="", description="How host stalls are guarded and what an A/A campaign checks."
    )
    quality: list[QualityResult] = Field(
        default_factory=list, description="Imported evaluator results and their bands."
    )
    posture: PostureView | None = Field(
        default=None, description="The host's posture at the campaign's start and end."
    )
    replicated: list[ReplicatedRatio] = Field(
        default_factory=list,
        description="Between-replicate intervals of replicated cells; empty without replicates.",
    )
    goodput_method: str = Field(default="", description="How goodput and attainment are computed.")
    ruling: Ruling | None = Field(
        default=None, description="The declared decision rule's outcome; None without a rule."
    )
    carried: Carryover | None = Field(
        default=None,
        description="A successor's cells carried over from a closed campaign; None otherwise.",
    )
    preflight: list[PreflightReport] = Field(
        default_factory=list,
        description="Each run's preflight on the campaign host, oldest first (waivers too).",
    )
    pilot: PilotRecord | None = Field(
        default=None, description="What the pilot found before the scored cells; None: none ran."
    )

    sequential: SequentialView | None = Field(
        default=None,
        description="Sequential cells' looks, spending and stops; None without one.",
    )
    spec_pairs: list[SpecPair] = Field(
        default_factory=list,
        description="Each arm's decode_structured cells beside their decode_prose twins.",
    )
    energy_method: str = Field(default="", description="How energy figures are computed.")
    tail_method: str = Field(default="", description="How ITL and p99 claims are computed.")
    fidelity: list[FidelityEntry] = Field(
        default_factory=list,
        exclude_if=omitted_at([]),
        description="Each fidelity cell's arms against its reference; empty without one.",
    )
    fidelity_method: str = Field(
        default="",
        exclude_if=omitted_at(""),
        description="How the fidelity figures are computed; empty without a fidelity cell.",
    )

    @classmethod
    def parse(cls, raw: bytes, path: Path) -> Self:
        """The comparison in ``raw``, an older version moved forward first (``upgraded``)."""
        try:
            data = json.loads(raw)
        except ValueError:
            return super().parse(raw, path)  # its error names the file
        if isinstance(data, dict):
            raw = json.dumps(upgraded(data, str(path))).encode()
        return super().parse(raw, path)

    @property
    def waivers(self) -> list[CheckResult]:
        """Every FAIL the operator waived, over every run of the campaign."""
        return [c for report in self.preflight for c in report.waived]


Json = dict[str, Any]


def v11_to_v12(data: Json) -> Json:
    """12 adds fields that all have defaults (each cell's ``window_ratios``, a sequential
    look's ``descriptive``, ``aa.p_value``, ``ruling.error_control``): only the version
    moves. The stored ruling and verdicts stay as judged; an audit rebuilds them."""
    return {**data, "schema_version": 12}


UPGRADES: dict[int, Callable[[Json], Json]] = {11: v11_to_v12}


def upgraded(data: Json, where: str = "comparison.json") -> Json:
    """``data`` at ``COMPARISON_VERSION``, or FaceoffError naming the file and what to do."""
    version = data.get("schema_version")
    if not isinstance(version, int) or version > COMPARISON_VERSION:
        raise FaceoffError(
            f"schema_version {version!r} is not one this faceoff reads "
            f"(at most {COMPARISON_VERSION})",
            where=where,
            fix="upgrade faceoff",
        )
    while version < COMPARISON_VERSION:
        step = UPGRADES.get(version)
        if step is None:
            raise FaceoffError(
                f"schema_version {version} is older than any upgrade ({min(UPGRADES)})",
                where=where,
                fix="rebuild it from the bundle's native files with the faceoff that wrote it",
            )
        data, version = step(data), version + 1
    return data
