"""Dispositions and their reason codes, with what each code means.

A cell attempt starts ``pending`` and ends ``accepted``, ``failed`` (it ran and a
validity rule failed) or ``blocked`` (it could not be run or scored). Every
code below belongs to exactly one of those; ``MEANINGS`` is the text
``docs/guards.md`` carries, kept here so the two cannot drift apart silently
(a test compares them).
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType


class Disposition(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    FAILED = "failed"
    BLOCKED = "blocked"


class Reason(StrEnum):
    ACCEPTED = "accepted"
    # blocked: prerequisites
    LANE_NOT_READY = "lane_not_ready"
    IDENTITY_MISMATCH = "identity_mismatch"
    TELEMETRY_UNAVAILABLE = "telemetry_unavailable"
    ARTIFACTS_MISSING = "artifacts_missing"
    SETUP_FAILED = "setup_failed"
    WARMUPS_FAILED = "warmups_failed"
    PILOT_FAILED = "pilot_failed"
    STOP_POLICY = "stop_policy"
    FAMILY_MISSING = "family_missing"
    HOST_STALL = "host_stall"
    SCHEDULE_LAG = "schedule_lag"
    GPU_THROTTLED = "gpu_throttled"
    GPU_CONTENDED = "gpu_contended"
    GPU_ERRORS = "gpu_errors"
    ROWS_MISMATCH = "rows_mismatch"
    # failed: validity rules, in precedence order
    OOM = "oom"
    LANE_EXITED = "lane_exited"
    ENGINE_RESTARTED = "engine_restarted"
    DEADLINE = "deadline"
    REQUESTS_NOT_TERMINAL = "requests_not_terminal"
    ERROR_RATE = "error_rate"
    REFUSALS = "refusals"
    CONTRACT_OVERRUN = "contract_overrun"
    NEEDLE_MISSED = "needle_missed"
    PREEMPTIONS = "preemptions"
    WARM_CACHE = "warm_cache"
    COUNTER_MISMATCH = "counter_mismatch"
    INPUT_OFF_TARGET = "input_off_target"
    WINDOW_MISMATCH = "window_mismatch"
    # pairs
    PAIR_MISMATCH = "pair_mismatch"
    ARM_NOT_ACCEPTED = "arm_not_accepted"


BLOCKING = frozenset(
    {
        Reason.LANE_NOT_READY,
        Reason.IDENTITY_MISMATCH,
        Reason.TELEMETRY_UNAVAILABLE,
        Reason.ARTIFACTS_MISSING,
        Reason.SETUP_FAILED,
        Reason.WARMUPS_FAILED,
        Reason.PILOT_FAILED,
        Reason.STOP_POLICY,
        Reason.FAMILY_MISSING,
        Reason.HOST_STALL,
        Reason.SCHEDULE_LAG,
        Reason.GPU_THROTTLED,
        Reason.GPU_CONTENDED,
        Reason.GPU_ERRORS,
        Reason.ROWS_MISMATCH,
    }
)
PAIR_REASONS = frozenset({Reason.PAIR_MISMATCH, Reason.ARM_NOT_ACCEPTED})

MEANINGS = MappingProxyType(
    {
        Reason.ACCEPTED: "every required family is present and every validity rule passed",
        Reason.LANE_NOT_READY: "the lane did not pass readiness, so the cell never ran",
        Reason.IDENTITY_MISMATCH: "the lane's identity differs from the arm's pins; not run",
        Reason.TELEMETRY_UNAVAILABLE: "the collectors could not start; the cell was not run",
        Reason.ARTIFACTS_MISSING: "a native artifact the guard needs (cell.json, requests.json) "
        "is missing or unreadable, so the cell cannot be scored",
        Reason.SETUP_FAILED: "the orchestrator could not set the cell up (e.g. its request plan "
        "could not be built on the lane); the client was never started",
        Reason.WARMUPS_FAILED: "the arm's warmups errored, or its lane died during them, on the "
        "lane run just started (the verdict names how many errored, the first error and how the "
        "lane died); the cell was not run",
        Reason.PILOT_FAILED: "before the scored cells, one request of the cell's contract "
        "failed on an arm that runs it (the pilot: errored, refused, overran its output "
        "contract, missed its needle, or its lane could not serve); the verdict names the arm "
        "and why; the cell was not run",
        Reason.STOP_POLICY: "an earlier cell failed and the campaign's stop policy blocks this one",
        Reason.FAMILY_MISSING: "a required metric family is missing from the cell's artifacts",
        Reason.HOST_STALL: "the host could not run faceoff for long enough during the cell: "
        "scored requests overlapping host stalls, or the client's CPU wait, exceed the matrix's "
        "bounds; the numbers describe the host, not the lane",
        Reason.SCHEDULE_LAG: "an open-loop client fell behind its arrival schedule: the p99 of "
        "send − due over the scored requests exceeds max_schedule_lag_ms, so the load offered "
        "was not the load declared",
        Reason.GPU_THROTTLED: "an arm's GPU slowed down for heat or power delivery (NVML "
        "clock-event reasons) in more than max_gpu_slowdown_share of its readings in the "
        "window; the numbers describe the machine, not the recipe",
        Reason.GPU_CONTENDED: "a compute process that is not the lane's ran on one of the arm's "
        "GPUs during the window, sharing what was measured",
        Reason.GPU_ERRORS: "Xid critical errors or uncorrected ECC errors on the arm's GPUs rose "
        "during the window",
        Reason.ROWS_MISMATCH: "a dataset or trace cell's requests are not what the rows its plan "
        "holds rebuild (messages, token target or max_tokens), so what was sent cannot be "
        "traced to its file",
        Reason.OOM: "an out-of-memory kill was observed (Docker's OOMKilled, or a rise of the "
        "OOM-kill count of a host lane's cgroup; a SIGKILL alone is not one) beyond max_oom",
        Reason.LANE_EXITED: "the lane was no longer running, or its API no longer answered "
        "/health, after the cell",
        Reason.ENGINE_RESTARTED: "the engine's counters reset during the cell: the lane restarted",
        Reason.DEADLINE: "the cell's outer deadline stopped the client",
        Reason.REQUESTS_NOT_TERMINAL: "a planned request has no journal line, or two, or a line "
        "belongs to another plan, arm or attempt (a torn or foreign journal)",
        Reason.ERROR_RATE: "errored, timed-out or cancelled scored requests exceed max_error_rate",
        Reason.REFUSALS: "refused scored requests exceed max_refusals",
        Reason.CONTRACT_OVERRUN: "a scored request overran the strict output contract (more "
        "words than the contract, or stopped at max_tokens)",
        Reason.NEEDLE_MISSED: "scored needle requests that did not recall their marker verbatim "
        "exceed needle_max_missed",
        Reason.PREEMPTIONS: "engine preemptions during the cell exceed max_preemptions",
        Reason.WARM_CACHE: "prefix-cache hits in a cold cell exceed cold_cache_max_hit_ratio",
        Reason.COUNTER_MISMATCH: "engine prompt/generation token or success deltas differ from "
        "the journal's sums beyond counter_tolerance_tokens",
        Reason.INPUT_OFF_TARGET: "a scored request's actual input is off its target beyond "
        "input_tolerance",
        Reason.WINDOW_MISMATCH: "cell.json's window does not cover the journaled requests",
        Reason.PAIR_MISMATCH: "the two arms of a pair did not send the same prompt-token vectors "
        "(or seed, indices, namespace)",
        Reason.ARM_NOT_ACCEPTED: "a pair is not comparable because one of its arms is not accepted",
    }
)


def disposition_of(reason: Reason) -> Disposition:
    """The disposition a cell reason code implies."""
    if reason in PAIR_REASONS:
        raise ValueError(f"{reason} is a pair reason, not a cell disposition")
    if reason is Reason.ACCEPTED:
        return Disposition.ACCEPTED
    return Disposition.BLOCKED if reason in BLOCKING else Disposition.FAILED


def disposition_label(disposition: str, interrupted: bool) -> str:
    """A cell run's disposition as every view shows it: a killed attempt says so."""
    return disposition + (" (interrupted)" if interrupted else "")
