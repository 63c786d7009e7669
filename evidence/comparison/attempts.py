"""Every attempt of each cell run, and the reviews that later attempts superseded. Pure.

A rerun is a new attempt; the earlier ones stay in the bundle and in each cell
run's history. A review saw the evidence of its moment: an attempt begun after it
was recorded supersedes it (the reviewer has not seen that attempt), and the runs a
``rerun_cells`` decision named stay outstanding until an attempt of theirs begins
after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from evidence.comparison.read import PastAttempt
from faceoff.formats.bundle.comparison import AttemptEntry, CellEntry, ReviewRef


def attempt_history(past: Sequence[PastAttempt]) -> list[AttemptEntry]:
    """The attempts of one cell run, oldest first; the last one's verdict stands."""
    return [
        AttemptEntry(
            attempt=a.where.attempt,
            disposition=a.standing.disposition,
            reason_code=a.standing.reason_code,
            reason=a.standing.reason,
            started_at=a.standing.record.started_at if a.standing.record else None,
            stands=n == len(past) - 1,
        )
        for n, a in enumerate(past)
    ]


def _begun_after(moment: datetime, entry: AttemptEntry) -> bool:
    if moment.tzinfo is None:  # a record written with a naive clock: UTC, as faceoff writes
        moment = moment.replace(tzinfo=UTC)
    return entry.started_at is not None and entry.started_at > moment


def with_standing(review: ReviewRef, cells: Sequence[CellEntry]) -> ReviewRef:
    """The review with the attempts begun after it and, for rerun_cells, the runs not rerun."""
    runs = {f"{cell.id}/{arm.arm}": arm.history for cell in cells for arm in cell.arms}
    later = [
        f"{run} attempt {entry.attempt}"
        for run, history in runs.items()
        for entry in history
        if _begun_after(review.at, entry)
    ]
    outstanding = [
        run
        for run in review.cells
        if not any(_begun_after(review.at, entry) for entry in runs.get(run, []))
    ]
    return review.model_copy(update={"superseded_by": later, "outstanding": outstanding})
