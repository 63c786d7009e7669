"""Terminal views of the bundle for ``faceoff audit``, ``review`` and ``tickets``.

They build rich renderables from data computed elsewhere; only the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.markdown import Markdown
from rich.table import Table

from evidence.audit import AuditReport
from evidence.layout import RESULT_FILE
from tickets.model import Ticket
from tickets.store import ticket_file


def audit_lines(report: AuditReport) -> list[str]:
    notes = [f"note: {n}" for n in report.notes]
    if report.ok:
        return [f"{report.root}: OK ({len(report.checked)} files verified or recomputed)", *notes]
    head = f"{report.root}: {len(report.findings)} problem(s) found"
    return [head, *(f"  {f.line}" for f in report.findings), *notes]


def card(campaign_dir: Path) -> Markdown:
    return Markdown((Path(campaign_dir) / RESULT_FILE).read_text(encoding="utf-8"))


def tickets_table(found: Sequence[Ticket]) -> Table:
    table = Table(title=f"open tickets ({len(found)})")
    for column in ("ticket", "disposition", "reason", "cell runs"):
        table.add_column(column, overflow="fold")
    for ticket in found:
        table.add_row(
            f"{ticket.campaign}/{ticket_file(ticket.id)}",
            ticket.disposition,
            ticket.reason_code,
            "\n".join(ticket.cells),
        )
    return table
