"""Terminal views of the bundle for ``faceoff review`` and ``tickets`` (``faceoff audit``'s
checklist: ``evidence.audit_checklist``).

They build rich renderables from data computed elsewhere; only the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.markdown import Markdown
from rich.table import Table

from evidence.layout import RESULT_FILE
from tickets.model import Ticket
from tickets.store import ticket_file


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
