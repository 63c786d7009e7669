"""Tickets on disk: ``<campaign>/tickets/<id>.md`` and ``tickets/index.json``.

Writing is idempotent: a ticket whose cluster still fails keeps its id and its
first ``created_at``; a ticket whose cluster no longer fails (its runs were rerun
and accepted) is kept and marked closed, so its history stays in the bundle.
The index's format: ``faceoff.formats.ticket_index``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from faceoff.bounded import TEXT_CAP, read_text
from faceoff.files import write_text_atomic
from faceoff.formats.ticket import Ticket, parse, render
from faceoff.formats.ticket_index import INDEX_FILE, TICKETS_DIR, IndexEntry, TicketIndex


def ticket_file(ticket_id: str) -> str:
    """The ticket's path relative to its campaign folder."""
    return f"{TICKETS_DIR}/{ticket_id}.md"


def ticket_path(campaign_dir: Path, ticket_id: str) -> Path:
    return Path(campaign_dir) / ticket_file(ticket_id)


def read_tickets(campaign_dir: Path) -> list[tuple[Ticket, str]]:
    folder = Path(campaign_dir) / TICKETS_DIR
    return [parse(read_text(path, TEXT_CAP), str(path)) for path in sorted(folder.glob("*.md"))]


def write_tickets(campaign_dir: Path, campaign: str, current: Sequence[Ticket]) -> TicketIndex:
    """Write the current clusters' tickets, close the ones no longer failing, rewrite the index."""
    old = {t.id: (t, body) for t, body in read_tickets(campaign_dir)}
    kept = []
    for fresh in current:
        ticket = fresh
        if fresh.id in old:  # the same cluster: keep when it was first raised
            ticket = fresh.model_copy(update={"created_at": old[fresh.id][0].created_at})
        kept.append(ticket)
        _write(campaign_dir, ticket, body_of(ticket))
    live = {t.id for t in current}
    for ticket_id, (ticket, body) in old.items():
        if ticket_id not in live and ticket.status == "open":
            closed = ticket.model_copy(update={"status": "closed"})
            _write(campaign_dir, closed, body)
            kept.append(closed)
        elif ticket_id not in live:
            kept.append(ticket)
    index = TicketIndex(campaign=campaign, tickets=[_entry(t) for t in sorted(kept, key=_id)])
    index.write(Path(campaign_dir) / TICKETS_DIR / INDEX_FILE, replace=True)
    return index


def _id(ticket: Ticket) -> str:
    return ticket.id


def _entry(ticket: Ticket) -> IndexEntry:
    return IndexEntry(
        id=ticket.id,
        status=ticket.status,
        reason_code=ticket.reason_code,
        cells=ticket.cells,
        path=ticket_file(ticket.id),
    )


def _write(campaign_dir: Path, ticket: Ticket, body: str) -> None:
    text = render(ticket, body)
    path = ticket_path(campaign_dir, ticket.id)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_text_atomic(path, text, replace=True)


def body_of(ticket: Ticket) -> str:
    runs = "\n".join(f"- `{run}`" for run in ticket.cells)
    files = "\n".join(f"- `{path}`" for path in ticket.evidence)
    return (
        f"# {ticket.disposition.capitalize()}: {ticket.reason_code}\n\n"
        f"{ticket.reason}\n\n## Cell runs\n\n{runs}\n\n## Evidence\n\n{files}\n\n"
        f"## Suggested next step\n\n{ticket.suggested_next_step}\n"
    )


def open_tickets(workdir: Path) -> list[Ticket]:
    """Open tickets of every campaign folder under the workdir, by campaign then id."""
    found: list[Ticket] = []
    if not Path(workdir).is_dir():
        return found
    for campaign_dir in sorted(p for p in Path(workdir).iterdir() if p.is_dir()):
        found += [t for t, _ in read_tickets(campaign_dir) if t.status == "open"]
    return found
