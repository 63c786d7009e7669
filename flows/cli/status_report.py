"""``faceoff status``'s facts: what the ledger says of each campaign, and whether its
incumbent answers now. The terminal table and ``--json`` both show this one model.

``--json`` prints ``StatusReport`` (docs/flows.md, "Output for scripts"). Format history
of ``StatusReport.schema_version``:
  1 — first release.
  2 — ``host`` on each campaign (the host that opened it); ``all_hosts`` on the report.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field
from sqlmodel import Session, col, select

from faceoff.artifact import Artifact, Spec
from faceoff.errors import FaceoffError
from lanes.http import Http
from ledger.campaigns import RUNNING, SEALING, cell_runs
from ledger.db import utc
from ledger.restoration import find_restoration, restorations_of
from ledger.tables import CampaignRow, CellRunRow, RestorationRow, ReviewRow

INTERRUPTED = "interrupted"  # shown, never stored: the ledger still says running
SEALING_INTERRUPTED = "sealing interrupted"  # shown: sealing, and no live run seals it


def status_label(row: CampaignRow, running: Collection[str]) -> str:
    """The campaign's status; ``interrupted`` when the ledger says running but no live run
    holds it (``running``: the names of campaigns whose run lock is held), ``sealing
    interrupted`` when a run was killed while sealing its bundle (unsealed: `faceoff run`
    seals it)."""
    if row.name in running:
        return row.status
    return {RUNNING: INTERRUPTED, SEALING: SEALING_INTERRUPTED}.get(row.status, row.status)


class RecordedReview(Spec):
    decision: str = Field(description="promote | no_promotion | rerun_cells.")
    reviewer: str = Field(description="Who decided.")
    note: str = Field(description="Why.")
    at: datetime = Field(description="When it was recorded (UTC).")


class Incumbent(Spec):
    arm: str = Field(description="The incumbent arm.")
    url: str = Field(description="Where it listens.")
    answering: bool = Field(description="GET /v1/models lists its served model now.")
    detail: str = Field(description="What it serves, or how it failed to answer.")


class CellRun(Spec):
    cell_id: str
    arm: str
    attempt: int
    disposition: str = Field(description="pending | accepted | failed | blocked.")
    reason_code: str | None
    reason: str | None
    interrupted: bool


class CampaignFacts(Spec):
    name: str
    host: str | None = Field(
        description="The host that opened it; None: opened before hosts were recorded."
    )
    matrix_id: str
    status: str = Field(
        description="open | running | interrupted (running, but no live run holds its lock) "
        "| sealing (closed, its bundle being sealed) | sealing interrupted (a run killed while "
        "sealing: the bundle is not sealed) | complete | closed_partial."
    )
    evidence_dir: str
    started_at: datetime = Field(description="When the campaign was first opened (UTC).")
    ended_at: datetime | None = Field(description="When it last closed; None while open.")
    duration_s: float = Field(description="Opening to closing, or to now while not closed.")
    accepted: int
    failed: int
    blocked: int
    pending: int
    decision: RecordedReview | None = Field(description="The latest review; None before one.")
    restoration: str | None = Field(
        description="required | restoring | restored | failed; None: the incumbent was never "
        "touched."
    )
    receipt: str | None = Field(description="Path of the restoration receipt.")
    receipt_valid: bool | None = Field(
        description="The receipt's own hash verifies; None where there is none, or where it "
        "lies on another host's disk (the campaign's host is not this one)."
    )
    incumbent: Incumbent | None = Field(
        description="Probed only for one named campaign that is not running."
    )
    cell_runs: list[CellRun] | None = Field(description="Every attempt, for one named campaign.")


class StatusReport(Artifact):
    schema_version: Literal[2] = Field(default=2, description="Status output format version.")
    all_hosts: bool = Field(
        description="Every host's campaigns; False: this host's and those with no host."
    )
    campaigns: list[CampaignFacts]


def campaign_status(
    session: Session,
    row: CampaignRow,
    *,
    running: Collection[str],
    now: Callable[[], datetime],
    here: str,
    http: Http | None = None,
) -> CampaignFacts:
    """The campaign's facts, read on host ``here``; with ``http``, its attempts and its
    incumbent's health too."""
    restoration, decision = find_restoration(session, row), latest_decision(session, row)
    facts = _facts(
        row, restoration=restoration, decision=decision, running=running, now=now, here=here
    )
    if http is None:
        return facts
    return facts.model_copy(
        update={
            "incumbent": None if facts.status == RUNNING else _incumbent(row, http),
            "cell_runs": [_cell_run(r) for r in cell_runs(session, row)],
        }
    )


def campaign_statuses(
    session: Session,
    rows: Sequence[CampaignRow],
    *,
    running: Collection[str],
    now: Callable[[], datetime],
    here: str,
) -> list[CampaignFacts]:
    """Many campaigns' facts, read on host ``here``, in three queries whatever their
    number: a ledger that hosts share holds a year of nights from each."""
    ids = [r.id for r in rows if r.id is not None]
    restorations = restorations_of(session, ids)
    decisions = _latest_decisions(session, ids)
    return [
        _facts(
            r,
            restoration=restorations.get(r.id or 0),
            decision=decisions.get(r.id or 0),
            running=running,
            now=now,
            here=here,
        )
        for r in rows
    ]


def latest_decision(session: Session, row: CampaignRow) -> RecordedReview | None:
    return _latest_decisions(session, [row.id or 0]).get(row.id or 0)


def _latest_decisions(session: Session, ids: Sequence[int]) -> dict[int, RecordedReview]:
    """Campaign id -> its latest review, for the campaigns that have one."""
    query = (
        select(ReviewRow)
        .where(col(ReviewRow.campaign_id).in_(ids))
        .order_by(col(ReviewRow.created_at), col(ReviewRow.id))
    )
    return {  # in time order: each campaign's last review wins
        r.campaign_id: RecordedReview(
            decision=r.decision, reviewer=r.reviewer, note=r.note, at=utc(r.created_at)
        )
        for r in session.exec(query)
    }


def _facts(
    row: CampaignRow,
    *,
    restoration: RestorationRow | None,
    decision: RecordedReview | None,
    running: Collection[str],
    now: Callable[[], datetime],
    here: str,
) -> CampaignFacts:
    started, ended = utc(row.created_at), utc(row.closed_at) if row.closed_at else None
    receipt = restoration.receipt_path if restoration else None
    elsewhere = row.host is not None and row.host != here  # its files are on its host's disk
    return CampaignFacts(
        name=row.name,
        host=row.host,
        matrix_id=row.matrix_id,
        status=status_label(row, running),
        evidence_dir=row.evidence_dir,
        started_at=started,
        ended_at=ended,
        duration_s=((ended or now()) - started).total_seconds(),
        accepted=row.accepted,
        failed=row.failed,
        blocked=row.blocked,
        pending=row.pending,
        decision=decision,
        restoration=restoration.state if restoration else None,
        receipt=receipt,
        receipt_valid=None if elsewhere else _receipt_valid(receipt),
        incumbent=None,
        cell_runs=None,
    )


def _incumbent(row: CampaignRow, http: Http) -> Incumbent | None:
    # One named campaign's: the list of every campaign loads none of this.
    from evidence.folder.layout import FROZEN_FILE  # noqa: PLC0415
    from faceoff.formats.frozen_matrix import read_frozen  # noqa: PLC0415
    from flows.campaign.health import probe_incumbent  # noqa: PLC0415

    try:
        arm = read_frozen(Path(row.evidence_dir) / FROZEN_FILE).matrix.incumbent
    except FaceoffError:
        return None  # not frozen yet, or the folder is gone: nothing to ask
    health = probe_incumbent(arm, http)
    return Incumbent(arm=health.arm, url=health.url, answering=health.answering,
                     detail=health.detail)  # fmt: skip


def _receipt_valid(path: str | None) -> bool | None:
    if not path:
        return None
    from faceoff.formats.receipt import verify_receipt  # noqa: PLC0415  (only where a receipt exists)

    try:
        verify_receipt(Path(path))
    except FaceoffError:
        return False
    return True


def _cell_run(run: CellRunRow) -> CellRun:
    return CellRun(
        cell_id=run.cell_id,
        arm=run.arm,
        attempt=run.attempt,
        disposition=run.disposition,
        reason_code=run.reason_code,
        reason=run.reason,
        interrupted=run.interrupted,
    )
