"""Coverage against the plan, the failure list, and the restoration entry. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from evidence.comparison.read import ReceiptInputs
from faceoff.formats.bundle.comparison import (
    ArmCell,
    ArmCoverage,
    CampaignStatus,
    CellEntry,
    Coverage,
    FailureEntry,
    RestorationEntry,
    TicketRef,
)
from faceoff.formats.reasons import Disposition
from guards.dispositions import ClosureStatus as GuardStatus
from guards.dispositions import close_campaign
from matrix.campaign_plan import Plan
from tickets.cluster import BadRun, clusters, ticket_id
from tickets.store import ticket_file

STATUSES: dict[GuardStatus, CampaignStatus] = {
    GuardStatus.COMPLETE: "complete",
    GuardStatus.CLOSED_PARTIAL: "closed_partial",
}
TERMINAL_BAD = (Disposition.FAILED, Disposition.BLOCKED)
UNCODED = "uncoded"  # a verdict without a reason code still gets a ticket


def coverage(plan: Plan, cells: Sequence[CellEntry]) -> Coverage:
    standing = {(c.id, a.arm): a for c in cells for a in c.arms}
    closure = close_campaign(
        plan.cell_runs,
        {
            key: standing[(key.cell_id, key.arm)].disposition
            for key in plan.cell_runs
            if standing[(key.cell_id, key.arm)].disposition is not Disposition.PENDING
        },
    )
    return Coverage(
        status=STATUSES[closure.status],
        sentence=closure.sentence,
        planned=closure.planned,
        accepted=closure.accepted,
        failed=closure.failed,
        blocked=closure.blocked,
        pending=closure.pending,
        matched_pairs=sum(1 for c in cells for p in c.pairs if p.comparable),
        arms=[_arm_coverage(p.arm.name, [c.id for c in p.cells], standing) for p in plan.arms],
    )


def _arm_coverage(
    arm: str, cell_ids: list[str], standing: Mapping[tuple[str, str], ArmCell]
) -> ArmCoverage:
    entries = [standing[(c, arm)] for c in cell_ids]
    counts = Counter(e.disposition for e in entries)
    return ArmCoverage(
        arm=arm,
        planned=len(entries),
        accepted=counts[Disposition.ACCEPTED],
        failed=counts[Disposition.FAILED],
        blocked=counts[Disposition.BLOCKED],
        pending=counts[Disposition.PENDING],
        scored_ok=sum(
            e.statuses.get("ok", 0) for e in entries if e.disposition is Disposition.ACCEPTED
        ),
    )


def failures(cells: Sequence[CellEntry], campaign: str) -> list[FailureEntry]:
    return [
        FailureEntry(
            cell=cell.id,
            arm=entry.arm,
            disposition=entry.disposition,
            reason_code=entry.reason_code,
            reason=entry.reason,
            evidence=sorted(entry.sources.values()),
            ticket=ticket_id(campaign, entry.disposition, entry.reason_code or UNCODED),
        )
        for cell in cells
        for entry in cell.arms
        if entry.disposition in TERMINAL_BAD
    ]


def bad_runs(found: Sequence[FailureEntry]) -> list[BadRun]:
    """The failed and blocked runs as the tickets package clusters them."""
    return [
        BadRun(
            cell=f.cell,
            arm=f.arm,
            disposition=f.disposition,
            reason_code=f.reason_code or UNCODED,
            reason=f.reason or "",
            evidence=tuple(f.evidence),
        )
        for f in found
    ]


def ticket_refs(found: Sequence[FailureEntry], campaign: str) -> list[TicketRef]:
    """One ticket per cluster, clustered as tickets/ clusters them, by id."""
    refs = []
    for (disposition, code), members in clusters(bad_runs(found)).items():
        ticket = ticket_id(campaign, disposition, code)
        refs.append(
            TicketRef(
                id=ticket,
                reason_code=code,
                cells=[r.run for r in members],
                path=ticket_file(ticket),
            )
        )
    return sorted(refs, key=lambda r: r.id)


def restoration(found: ReceiptInputs) -> RestorationEntry:
    receipt = found.receipt
    if receipt is None:
        return RestorationEntry(
            present=found.present,
            verified=False,
            problem=found.problem,
            outcome=None,
            completed_at=None,
            lines=[],
            protected_total=0,
            protected_changed=[],
            problems=[],
        )
    return RestorationEntry(
        present=True,
        verified=True,
        problem=None,
        outcome=receipt.outcome,
        completed_at=receipt.completed_at,
        lines=receipt.summary(),
        protected_total=len(receipt.protected_files),
        protected_changed=[c.path for c in receipt.protected_files if not c.unchanged],
        problems=list(receipt.problems),
    )
