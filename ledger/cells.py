"""Cell-run attempts and their request index rows.
The same concept at another layer: ``evidence.comparison.cells``.

A cell run (one cell on one arm) gets a new row per attempt; a rerun never
overwrites an earlier attempt. A reviewer's ``rerun_cells`` decision asks for a new
attempt of the runs it names. An attempt that a kill left ``pending`` is marked
interrupted when the campaign resumes, and the next attempt gets the next number.
Request rows index the attempt's journal lines; indexing is idempotent, so a
journal indexed after a crash and again later yields each line once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import func
from sqlmodel import Session, select

from faceoff.ports import Clock
from ledger.tables import CampaignRow, CellRunRow, RequestRow, ReviewRow

PENDING = "pending"
TERMINAL = ("accepted", "failed", "blocked")
RERUN_CELLS = "rerun_cells"  # the review decision that asks for new attempts


def latest_attempts(session: Session, campaign: CampaignRow) -> dict[tuple[str, str], CellRunRow]:
    """(cell id, arm) -> its highest-numbered attempt: the one whose disposition stands."""
    query = (
        select(CellRunRow).where(CellRunRow.campaign_id == campaign.id).order_by(CellRunRow.attempt)  # type: ignore[arg-type]
    )
    return {(row.cell_id, row.arm): row for row in session.exec(query)}


def rerun_requested(session: Session, campaign: CampaignRow) -> set[tuple[str, str]]:
    """(cell id, arm) runs a ``rerun_cells`` review named after their latest attempt began."""
    query = select(ReviewRow).where(
        ReviewRow.campaign_id == campaign.id, ReviewRow.decision == RERUN_CELLS
    )
    latest = latest_attempts(session, campaign)
    wanted: set[tuple[str, str]] = set()
    for review in session.exec(query):
        for name in json.loads(review.cells or "[]"):
            cell_id, _, arm = str(name).partition("/")
            row = latest.get((cell_id, arm))
            began = None if row is None else row.started_at
            if began is None or _utc(began) < _utc(review.created_at):
                wanted.add((cell_id, arm))
    return wanted


def _utc(moment: datetime) -> datetime:
    """Naive UTC: SQLite hands timestamps back without their zone."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def next_attempt(session: Session, campaign: CampaignRow, cell_id: str, arm: str) -> int:
    query = select(func.max(CellRunRow.attempt)).where(
        CellRunRow.campaign_id == campaign.id,
        CellRunRow.cell_id == cell_id,
        CellRunRow.arm == arm,
    )
    return int(session.exec(query).one() or 0) + 1


def begin_attempt(
    session: Session,
    campaign: CampaignRow,
    *,
    cell_id: str,
    arm: str,
    attempt: int,
    artifacts_dir: str,
    now: Clock,
) -> CellRunRow:
    """A new ``pending`` attempt row, committed by the caller before anything runs."""
    assert campaign.id is not None
    row = CellRunRow(
        campaign_id=campaign.id,
        cell_id=cell_id,
        arm=arm,
        attempt=attempt,
        started_at=now(),
        artifacts_dir=artifacts_dir,
    )
    session.add(row)
    session.flush()
    return row


def carry_attempt(
    session: Session, campaign: CampaignRow, source: CellRunRow, *, note: str, artifacts_dir: str
) -> CellRunRow:
    """A successor's row for an attempt of another campaign it carried over: the source's
    number, disposition, times and verdict hash, ``note`` appended to its reason. Idempotent:
    a row already there for that attempt is returned as it is."""
    assert campaign.id is not None
    query = select(CellRunRow).where(
        CellRunRow.campaign_id == campaign.id,
        CellRunRow.cell_id == source.cell_id,
        CellRunRow.arm == source.arm,
        CellRunRow.attempt == source.attempt,
    )
    row = session.exec(query).first()
    if row is None:
        row = CellRunRow(
            campaign_id=campaign.id,
            cell_id=source.cell_id,
            arm=source.arm,
            attempt=source.attempt,
            disposition=source.disposition,
            reason_code=source.reason_code,
            reason=f"{source.reason} ({note})" if source.reason else note,
            started_at=source.started_at,
            ended_at=source.ended_at,
            artifacts_dir=artifacts_dir,
            verdict_sha256=source.verdict_sha256,
        )
        session.add(row)
        session.flush()
    return row


def finish_attempt(
    session: Session,
    row: CellRunRow,
    *,
    disposition: str,
    reason_code: str | None,
    reason: str | None,
    verdict_sha256: str | None,
    now: Clock,
) -> CellRunRow:
    if disposition not in TERMINAL:
        raise ValueError(f"an attempt finishes accepted, failed or blocked, not {disposition!r}")
    row.disposition = disposition
    row.reason_code = reason_code
    row.reason = reason
    row.verdict_sha256 = verdict_sha256
    row.ended_at = now()
    session.add(row)
    session.flush()
    return row


def interrupt_attempt(session: Session, row: CellRunRow, *, reason: str, now: Clock) -> None:
    """The attempt stays pending for good: it will never get a disposition."""
    row.interrupted = True
    row.ended_at = now()
    row.reason = reason
    session.add(row)
    session.flush()


def mark_interrupted(session: Session, campaign: CampaignRow, now: Clock) -> list[CellRunRow]:
    """Every attempt still pending from an earlier run never finished: say so."""
    query = select(CellRunRow).where(
        CellRunRow.campaign_id == campaign.id,
        CellRunRow.disposition == PENDING,
        CellRunRow.interrupted == False,  # noqa: E712
    )
    rows = list(session.exec(query))
    for row in rows:
        reason = "the run that started this attempt ended before its disposition"
        interrupt_attempt(session, row, reason=reason, now=now)
    return rows


def add_requests(session: Session, run: CellRunRow, rows: Iterable[RequestRow]) -> int:
    """Index journal lines not indexed yet; returns how many were added."""
    assert run.id is not None
    query = select(RequestRow.journal_line).where(RequestRow.cell_run_id == run.id)
    known = set(session.exec(query))
    added = 0
    for row in rows:
        if row.journal_line in known:
            continue
        row.cell_run_id = run.id
        session.add(row)
        known.add(row.journal_line)
        added += 1
    session.flush()
    return added


def request_rows(session: Session, run: CellRunRow) -> list[RequestRow]:
    query = (
        select(RequestRow).where(RequestRow.cell_run_id == run.id).order_by(RequestRow.journal_line)  # type: ignore[arg-type]
    )
    return list(session.exec(query))


def set_campaign_state(
    session: Session,
    campaign: CampaignRow,
    *,
    status: str,
    counts: dict[str, int] | None = None,
    now: Clock,
) -> CampaignRow:
    """Status, and disposition counts when given; ``closed_at`` once it is closed."""
    campaign.status = status
    if counts is not None:
        for name in ("accepted", "failed", "blocked", "pending"):
            setattr(campaign, name, counts.get(name, 0))
    campaign.updated_at = now()
    campaign.closed_at = campaign.updated_at if status in ("complete", "closed_partial") else None
    session.add(campaign)
    session.flush()
    return campaign
