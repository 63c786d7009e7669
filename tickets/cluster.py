"""Clusters of failed or blocked cell runs, one ticket each. Pure.

A cluster is every run of the campaign that ended with the same disposition and
reason code, across cells and arms: one cause, one follow-up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from faceoff.formats.ticket import Ticket

RERUN = "then rerun the affected cells (a new attempt; the failed one stays in the bundle)."
NEXT_STEPS = {
    "lane_not_ready": "Read the lane's boot.log and lane.json to see why it never became "
    f"ready; {RERUN}",
    "identity_mismatch": "Compare the lane's identity.json (expected vs observed) and boot.log "
    f"with the arm's pins; fix the recipe or the pins, {RERUN}",
    "telemetry_unavailable": "Check the lane's /metrics endpoint and the host/cgroup paths the "
    f"collectors read; {RERUN}",
    "artifacts_missing": "Find out why the flow left the attempt without its native files; "
    f"{RERUN}",
    "warmups_failed": "Read the lane run's warmup/journal.jsonl (the errors), boot.log and "
    f"lane.json exit (how the engine died, if it did); fix the recipe, {RERUN}",
    "stop_policy": "Blocked behind an earlier failure by the stop policy: resolve that cell's "
    f"ticket first, {RERUN}",
    "family_missing": "verdict.json names the missing required family; fix the exporter or "
    f"declare the family not applicable in the matrix with a reason, {RERUN}",
    "oom": "Read cell.json (lane end) and the lane's boot.log; lower memory settings or "
    f"concurrency, {RERUN}",
    "lane_exited": f"Read the lane's boot.log and lane.json exit to see why it stopped; {RERUN}",
    "engine_restarted": "The engine's counters reset mid-cell: find the restart in boot.log "
    f"and engine.jsonl; {RERUN}",
    "deadline": "journal.jsonl keeps every finished request; raise deadline_s or lower the "
    f"load, {RERUN}",
    "contract_overrun": "Read output excerpts in journal.jsonl: the output contract was not "
    "kept, so controlled decode cannot be compared; a paired one-request diagnostic on both "
    "recipes shows whether the recipe or the prompt is at fault.",
    "counter_mismatch": "Compare engine counter deltas in telemetry.json with the journal's "
    f"sums (verdict.json has both); {RERUN}",
    "warm_cache": "Prefix-cache hits in a cold cell: check nonces in requests.json and "
    f"whether the lane was restarted between arms; {RERUN}",
}
# Causes one request can show: its output, its error, what the engine counted for it.
DIAGNOSABLE = frozenset(
    {"contract_overrun", "needle_missed", "error_rate", "refusals", "counter_mismatch",
     "input_off_target", "warm_cache"}
)  # fmt: skip
DEFAULT_STEP = (
    "Read the evidence files listed here, fix the cause, and rerun the affected cells "
    "(record the decision with `faceoff review <campaign> --decision rerun_cells`)."
)


@dataclass(frozen=True)
class BadRun:
    """One failed or blocked cell run, as the evidence package found it."""

    cell: str
    arm: str
    disposition: str  # failed | blocked
    reason_code: str
    reason: str
    evidence: tuple[str, ...]

    @property
    def run(self) -> str:
        return f"{self.cell}/{self.arm}"


def next_step(reason_code: str) -> str:
    return NEXT_STEPS.get(reason_code, DEFAULT_STEP)


def rerun_commands(campaign: str, runs: Sequence[str]) -> str:
    """The exact commands that rerun the cluster's cell runs once the cause is fixed."""
    cells = " ".join(f"--cell {run}" for run in runs)
    return (
        f"To rerun: `faceoff review {campaign} --decision rerun_cells --note 'WHAT WAS FIXED' "
        f"{cells}`, then `faceoff run MATRIX` with the campaign's matrix (only those runs get "
        "a new attempt)."
    )


def diagnose_commands(runs: Sequence[BadRun]) -> str:
    """The exact commands that send one request of each of the cluster's cells to every arm."""
    cells = dict.fromkeys(r.cell for r in runs)
    commands = ", ".join(f"`faceoff run --diagnose {cell} MATRIX`" for cell in cells)
    return (
        f"To diagnose: {commands} with the campaign's matrix (one request per arm, journaled, "
        "never scored, with /metrics before and after and the lane's log tail: diagnostics/ "
        "in the bundle and a paired table)."
    )


def ticket_id(campaign: str, disposition: str, reason_code: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{disposition}-{reason_code}".lower()).strip("-")
    return f"{campaign}-{slug}"


def clusters(runs: Sequence[BadRun]) -> dict[tuple[str, str], list[BadRun]]:
    """The runs by (disposition, reason code), in that key's order: one cause, one ticket."""
    groups: dict[tuple[str, str], list[BadRun]] = {}
    for run in runs:
        groups.setdefault((run.disposition, run.reason_code), []).append(run)
    return dict(sorted(groups.items()))


def cluster(
    runs: Sequence[BadRun], *, campaign: str, matrix_id: str, now: datetime
) -> list[Ticket]:
    return [
        Ticket(
            id=ticket_id(campaign, disposition, code),
            campaign=campaign,
            matrix_id=matrix_id,
            status="open",
            disposition="failed" if disposition == "failed" else "blocked",
            reason_code=code,
            reason=members[0].reason,
            cells=[r.run for r in members],
            evidence=sorted({path for r in members for path in r.evidence}),
            suggested_next_step=" ".join(
                [
                    next_step(code),
                    *([diagnose_commands(members)] if code in DIAGNOSABLE else []),
                    rerun_commands(campaign, [r.run for r in members]),
                ]
            ),
            created_at=now,
        )
        for (disposition, code), members in clusters(runs).items()
    ]
