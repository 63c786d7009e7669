"""Drift tickets: a follow-up for each change point the history found in an incumbent's
nightly p50, in ``<workdir>/.history/drift/<id>.md`` (the same front matter as a cell
cluster's ticket, ``faceoff.formats.ticket``).
The same concept at another layer: ``evidence.stats.drift``.

They live apart from the campaigns' ``tickets/``: a drift belongs to no one campaign's
bundle, and a sealed bundle never changes. Writing is idempotent: a change point found
again keeps its ticket and its first ``created_at``; the id names the host, arm, cell,
metric and night, so a new change point is a new ticket.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from faceoff.bounded import TEXT_CAP, read_text
from faceoff.files import write_text_atomic
from faceoff.formats.ticket import DRIFT_DIR, DriftTicket, parse_as, render


def write_drift_tickets(workdir: Path, tickets: Sequence[DriftTicket]) -> list[Path]:
    """Write each ticket not yet written; returns every ticket's path."""
    paths = []
    for ticket in tickets:
        path = Path(workdir) / DRIFT_DIR / f"{ticket.id}.md"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, render(ticket, body_of(ticket)))
        paths.append(path)
    return paths


def read_drift_ticket(path: Path) -> DriftTicket:
    return parse_as(DriftTicket, read_text(path, TEXT_CAP), str(path))[0]


def body_of(ticket: DriftTicket) -> str:
    files = "\n".join(f"- `{path}`" for path in ticket.evidence)
    return (
        f"# Drift: {ticket.metric} of {ticket.arm} on {ticket.cell} ({ticket.host})\n\n"
        f"From {ticket.night:%Y-%m-%d} ({ticket.campaign}) the nightly p50 moved from "
        f"{ticket.before:.4g} to {ticket.after:.4g} ({ticket.relative:+.1%}), beyond the "
        f"nights' intervals.\n\n## Evidence\n\n{files}\n\n"
        f"## Suggested next step\n\n{ticket.suggested_next_step}\n"
    )
