"""Terminal views of the bundle for ``faceoff review`` and ``tickets`` (``faceoff audit``'s
checklist: ``evidence.audit.checklist``).
The same concept at another layer: ``flows.cli.views.console``.

They build rich renderables from data computed elsewhere; only the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.markdown import Markdown
from rich.table import Table

from evidence.folder.layout import RESULT_FILE
from faceoff.bounded import TEXT_CAP, read_text
from faceoff.formats.ticket import Ticket
from tickets.store import ticket_file


def card(campaign_dir: Path) -> Markdown:
    return Markdown(read_text(Path(campaign_dir) / RESULT_FILE, TEXT_CAP))


def tickets_table(found: Sequence[Ticket]) -> Table:
    table = Table(title=f"open tickets ({len(found)})")
    # Paths and cell runs stay whole, to be copied; the sentences wrap.
    for column, whole in (("ticket", True), ("disposition", True), ("reason", False),
                          ("cell runs", True), ("next step", False)):  # fmt: skip
        table.add_column(column, no_wrap=whole, overflow="fold", ratio=None if whole else 1)
    for ticket in found:
        table.add_row(
            f"{ticket.campaign}/{ticket_file(ticket.id)}",
            ticket.disposition,
            f"{ticket.reason_code}: {ticket.reason}",
            "\n".join(ticket.cells),
            ticket.suggested_next_step,
        )
    return table
