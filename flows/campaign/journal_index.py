"""The ledger's index of an attempt's journal: one request row per journal line.

The journal is the truth; the rows only let ``faceoff status`` and reviewers find
a request without reading files. Indexing is idempotent (rows are keyed by journal
line), so an interrupted attempt indexed on resume and again later counts once.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session

from faceoff.formats.attempt.journal import RequestOutcome
from ledger.cells import add_requests
from ledger.tables import CellRunRow, RequestRow
from workload.journal import read_journal
from workload.metrics import e2e, ttft


def index_journal(session: Session, run: CellRunRow, journal: Path) -> int:
    """Add a row for each journal line not indexed yet; returns how many were added."""
    outcomes = read_journal(journal).outcomes
    rows = [request_row(line, outcome) for line, outcome in enumerate(outcomes, start=1)]
    return add_requests(session, run, rows)


def request_row(line: int, outcome: RequestOutcome) -> RequestRow:
    usage = outcome.usage
    return RequestRow(
        cell_run_id=0,  # set by add_requests
        request_index=outcome.index,
        phase=outcome.phase.value,
        status=outcome.status.value,
        journal_line=line,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        ttft_s=ttft(outcome).value,
        e2e_s=e2e(outcome).value,
    )
