"""Recording a reviewer's decision in the bundle (hashed, chained).

"promote" is refused unless the campaign is complete, in the ledger (its status is passed
in) and in the bundle's coverage, or forced with a reason; so is a decision that
contradicts the declared rule, and so is a rerun of an accepted run the declared rule
judges: the ruling reads a cell's latest attempt, so rerunning a cell that sits on its
margin until it falls on the right side would spend looks no error rate accounts for
(about 5 % false promotion after one rerun, 10 % after three). A failed or blocked run is
rerun as before: it has no figure to look at. A bundle that is not sealed, or no longer matches its
SHA256SUMS, is refused before anything is written: the rebuilt sums would launder the
change. The command's part (the ledger row, the views rebuilt) is ``flows.cli.review``; the
rules in full: docs/evidence.md, "Reviews".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from evidence.folder.layout import CampaignFolder
from evidence.folder.seal import require_verified
from faceoff.canonical import file_sha256
from faceoff.credentials import NOBODY, Credentials
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import COMPARISON_FILE, Comparison, Ruling
from faceoff.formats.bundle.reviews import GENESIS, Decision, ReviewRecord, append_review
from faceoff.ports import Clock


@dataclass(frozen=True)
class ReviewRequest:
    reviewer: str
    decision: Decision
    note: str
    cells: Sequence[str] = ()  # cell/arm runs, for rerun_cells
    force_reason: str | None = None


def check_request(request: ReviewRequest, comparison: Comparison, ledger_status: str) -> None:
    """Refuse a decision the evidence does not allow; pure."""
    status = comparison.coverage.status
    complete = status == "complete" and ledger_status == "complete"
    if request.decision is Decision.PROMOTE and not complete and not request.force_reason:
        raise FaceoffError(
            f"refusing to record promote: the campaign is {ledger_status} in the ledger and "
            f"{status} in the bundle ({comparison.coverage.sentence})",
            where=f"campaign {comparison.campaign}",
            fix="rerun the missing cells, or pass --force-reason 'why promotion is safe'",
        )
    against = rule_contradiction(request.decision, comparison.ruling)
    if against and not request.force_reason:
        raise FaceoffError(
            f"refusing to record {request.decision.value}: {against}",
            where=f"campaign {comparison.campaign}",
            fix="record the rule's outcome, or pass --force-reason 'why the rule does not "
            "hold here'; the reason is written into the review record",
        )
    if request.decision is Decision.RERUN_CELLS:
        _check_cells(request.cells, comparison)


def rule_contradiction(decision: Decision, ruling: Ruling | None) -> str | None:
    """Why ``decision`` contradicts the declared rule's outcome, or None when it does not.

    promote contradicts a rule that promotes no candidate; no_promotion contradicts a rule
    that promotes one; rerun_cells, a request for more evidence, contradicts nothing.
    """
    if ruling is None:
        return None
    promoted = [c.candidate for c in ruling.candidates if c.outcome == "promote"]
    if decision is Decision.PROMOTE and not promoted:
        said = "; ".join(c.headline.replace("**", "") for c in ruling.candidates)
        return f"the declared rule promotes no candidate ({said})"
    if decision is Decision.NO_PROMOTION and promoted:
        return f"the declared rule's outcome is promote for {', '.join(promoted)}"
    return None


def _check_cells(cells: Sequence[str], comparison: Comparison) -> None:
    known = {f"{c.id}/{a.arm}" for c in comparison.cells for a in c.arms}
    if not cells:
        raise FaceoffError(
            "rerun_cells needs the cell runs to rerun",
            fix="pass --cell CELL/ARM once per run, e.g. --cell natural-8192-c1/exl3-r11",
        )
    unknown = sorted(set(cells) - known)
    if unknown:
        raise FaceoffError(
            f"unknown cell runs {', '.join(unknown)}",
            where=f"campaign {comparison.campaign}",
            fix=f"use cell/arm names from the plan, e.g. {sorted(known)[0]}",
        )
    looked = sorted(set(cells) & judged_accepted(comparison))
    if looked:
        raise FaceoffError(
            f"refusing to rerun {', '.join(looked)}: accepted run(s) the declared rule judges; "
            "the ruling reads a cell's latest attempt, so a rerun gives the rule another look "
            "at the same cell, and a cell on its margin rerun until it falls on the right side "
            "is promoted far more often than the rule's 2.5 %",
            where=f"campaign {comparison.campaign}",
            fix="rerun only failed or blocked runs; to measure accepted cells again, run a new "
            "campaign, whose ruling has its own error control",
        )


def judged_accepted(comparison: Comparison) -> set[str]:
    """The accepted cell/arm runs whose cells the declared rule judges (a replicated cell's
    windows with it); none without a rule."""
    if comparison.ruling is None:
        return set()
    judged = {
        judged.cell
        for ruled in comparison.ruling.candidates
        for line in ruled.criteria
        for judged in line.cells
    }
    judged |= {c for r in comparison.replicated if r.cell in judged for c in r.compared}
    return {
        f"{c.id}/{a.arm}"
        for c in comparison.cells
        if c.id in judged
        for a in c.arms
        if a.disposition == "accepted"
    }


def append_decision(
    folder: CampaignFolder,
    request: ReviewRequest,
    ledger_status: str,
    *,
    now: Clock,
    credentials: Credentials = NOBODY,
) -> ReviewRecord:
    """Append the decision to the sealed bundle, signed with ``credentials``, once the
    bundle is proven intact and its signature valid with them.

    The caller records the ledger row and then rebuilds the views (``refresh_views``).
    """
    require_verified(folder, credentials, sealed=True)
    comparison = Comparison.read(folder.path(COMPARISON_FILE))
    check_request(request, comparison, ledger_status)
    record = _record(request, comparison, folder, now())
    return append_review(folder.root, record, credentials=credentials)


def _record(
    request: ReviewRequest, comparison: Comparison, folder: CampaignFolder, at: datetime
) -> ReviewRecord:
    return ReviewRecord(
        campaign=comparison.campaign,
        matrix_id=comparison.matrix_id,
        reviewer=request.reviewer,
        decision=request.decision,
        note=request.note,
        cells=list(request.cells),
        campaign_status=comparison.coverage.status,
        forced_reason=request.force_reason,
        overrode_rule=rule_contradiction(request.decision, comparison.ruling),
        comparison_sha256=file_sha256(folder.path(COMPARISON_FILE)),
        previous_sha256=GENESIS,
        recorded_at=at,
    )
