"""``faceoff status``: this host's campaigns (or every host's, or one campaign) from the
ledger, as a table or ``--json``. It loads only the ledger and the status facts: a shared
ledger holds a year of nights from each host, and the answer should come at once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import typer
from sqlmodel import Session

from faceoff.errors import FaceoffError
from flows.campaign.lock import run_in_progress
from flows.cli.ledger_open import existing_ledger, required_ledger
from flows.cli.status_report import CampaignFacts, StatusReport, campaign_status, campaign_statuses
from flows.cli.views import console as views
from lanes.http import UrllibHttp
from ledger.campaigns import list_campaigns, require_campaign
from ledger.db import session_scope
from ledger.hosts import this_host
from ledger.tables import CampaignRow


def status(
    campaign: str | None, workdir: Path, db: str | None, *, all_hosts: bool, as_json: bool
) -> None:
    if campaign is not None and all_hosts:
        raise FaceoffError(
            "a named campaign is shown whatever its host",
            where="--all-hosts",
            fix="drop --all-hosts, or drop the campaign name to list every host's campaigns",
        )
    here = this_host(os.environ)
    engine = existing_ledger(db, workdir)
    found: list[CampaignFacts] = []
    if engine is not None or campaign is not None:
        with session_scope(required_ledger(engine, db, workdir)) as session:
            found = _statuses(session, campaign, host=None if all_hosts else here, here=here)
    if as_json:
        typer.echo(StatusReport(all_hosts=all_hosts, campaigns=found).model_dump_json(indent=2))
        return
    out = views.make_console()
    if campaign is None:
        title = "campaigns of every host" if all_hosts else f"campaigns on {here}"
        if not found:  # a table of headers alone would truncate them to its narrow columns
            out.print(f"{title}: none yet", highlight=False)
            return
        out.print(views.campaigns_table(found, title=title))
        return
    for line in views.campaign_lines(found[0]):
        out.print(line, highlight=False)
    out.print(views.dispositions_table("cell runs", found[0].cell_runs or []))


def _statuses(
    session: Session, campaign: str | None, *, host: str | None, here: str
) -> list[CampaignFacts]:
    """The named campaign, with its attempts and its incumbent asked; else the campaigns of
    ``host`` (None: of every host)."""
    if campaign is not None:
        row = require_campaign(session, campaign)
        running, http = _running([row], here), UrllibHttp()
        return [campaign_status(session, row, running=running, now=_now, here=here, http=http)]
    rows = list_campaigns(session, host=host)
    return campaign_statuses(session, rows, running=_running(rows, here), now=_now, here=here)


def _running(rows: Sequence[CampaignRow], here: str) -> set[str]:
    """Names of the campaigns a live run holds: its lock tells on this host; a campaign of
    another host, whose folder is on that host's disk, is taken at the ledger's word."""
    return {
        r.name
        for r in rows
        if (r.host is not None and r.host != here) or run_in_progress(Path(r.evidence_dir))
    }


def _now() -> datetime:
    return datetime.now(UTC)
