"""The end of a ``faceoff run`` whose Prefect server died and could not be started again.

Nothing the campaign measures or restores goes through Prefect's server, so the cells, the
restoration and the bundle go on without it; the run stops at the first call that needs the
server, where the flow's result is lost. ``faceoff run`` then restores the incumbent itself,
as ``faceoff restore`` does, unless the ledger shows it restored and it answers, and says in
one line where the campaign got to and what to do. Exit 2; 4 when the incumbent could not be
restored (docs/flows.md, "Resume and interruptions").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from flows.campaign.restore import RestoreOutcome, restore_incumbent
from lanes.restoration import RestoreTools
from ledger.campaigns import find_campaign
from ledger.db import session_scope

STATUS_WORDS = {
    "complete": "closed complete, its bundle sealed",
    "closed_partial": "closed partial, its bundle sealed",
}


@dataclass(frozen=True)
class ServerLost:
    """What ``faceoff run`` says (one line) and its exit status."""

    message: str
    exit_status: int


def server_lost(
    losses: Sequence[str],
    error: BaseException,
    *,
    engine: Engine,
    campaign: str,
    prefect_home: Path,
    tools: RestoreTools,
) -> ServerLost:
    """Restore ``campaign``'s incumbent if it is not back, and the line that says so."""
    with session_scope(engine) as session:
        row = find_campaign(session, campaign)
        status = row.status if row is not None else None
    head = (
        f"Prefect's ephemeral server {'; then '.join(losses)}; the run stopped at the first "
        f"call that needed it ({type(error).__name__})"
    )
    fix = (
        f"make its server startable again (its log: {prefect_home / 'server.log'}), then run "
        "the same `faceoff run` again: it resumes what is left"
    )
    if status is None:
        return ServerLost(f"{head}, before campaign {campaign} was opened. {fix}", Exit.REFUSED)
    outcome = _restored(engine, campaign, tools)
    state = STATUS_WORDS.get(status, "open, its cells left for the next run")
    message = f"{head}. Campaign {campaign}: {state}; {outcome.message}. {fix[:1].upper()}{fix[1:]}"
    return ServerLost(message, Exit.REFUSED if outcome.ok else Exit.NOT_RESTORED)


def _restored(engine: Engine, campaign: str, tools: RestoreTools) -> RestoreOutcome:
    """The incumbent brought back unless it is (``faceoff run`` still holds the campaign's
    run lock: no second run can have started meanwhile)."""
    try:
        return restore_incumbent(engine, campaign, tools)
    except FaceoffError as exc:
        return RestoreOutcome(campaign, "failed", False, f"restoration: {exc.message}")
