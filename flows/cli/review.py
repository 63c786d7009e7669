"""``faceoff review``: a reviewer's decision, in the bundle and in the ledger.

The decision is appended to the sealed bundle's ``reviews.jsonl``
(``evidence.reviews.recording``), its ledger row written in the same session, and
then the bundle's views and SHA256SUMS are rebuilt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import typer
from sqlalchemy import Engine

from evidence.bundle.write import refresh_views
from evidence.folder.layout import CampaignFolder
from evidence.reviews.decision import Decision
from evidence.reviews.log import ReviewRecord
from evidence.reviews.recording import ReviewRequest, append_decision
from evidence.views.terminal.console import card
from faceoff.credentials import NOBODY, Credentials, credentials
from faceoff.errors import FaceoffError
from faceoff.ports import Clock
from flows.campaign.seal_record import keep_current_seal
from flows.cli.ledger_open import existing_ledger, required_ledger
from flows.cli.views import console as views
from flows.prefect import server as ephemeral
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import session_scope
from ledger.tables import ReviewRow


def record_review(
    engine: Engine,
    campaign: str,
    request: ReviewRequest,
    *,
    now: Clock,
    credentials: Credentials = NOBODY,
) -> ReviewRecord:
    """Append the decision (signed with ``credentials``), row it, rebuild and seal the views.
    A bundle whose signature the credentials cannot verify is refused, nothing written."""
    with session_scope(engine) as session:
        row = require_campaign(session, campaign)
        assert row.id is not None  # a campaign read from the ledger has its key
        folder = CampaignFolder.at(Path(row.evidence_dir))
        record = append_decision(folder, request, row.status, now=now, credentials=credentials)
        session.add(
            ReviewRow(
                campaign_id=row.id,
                reviewer=record.reviewer,
                decision=record.decision.value,
                note=record.note,
                cells=json.dumps(record.cells) if record.cells else None,
                forced_reason=record.forced_reason,
                created_at=record.recorded_at,
                record_sha256=record.record_sha256,
            )
        )
    refresh_views(folder, credentials)
    keep_current_seal(engine, campaign, folder)
    return record


def review(
    campaign: str,
    *,
    workdir: Path,
    db: str | None,
    decision: Decision | None,
    note: str | None,
    reviewer: str,
    cells: Sequence[str],
    force_reason: str | None,
) -> None:
    _review_flags(decision, note, cells, force_reason)
    engine = required_ledger(existing_ledger(db, workdir), db, workdir)
    if decision is None:  # only shown: the dispositions and the card
        out = views.make_console()
        with session_scope(engine) as session:
            row = require_campaign(session, campaign)
            title = f"{row.name} — {row.status}"
            out.print(views.dispositions_table(title, cell_runs(session, row)))
        out.print(card(Path(row.evidence_dir)))
        typer.echo("no decision recorded; pass --decision and --note to record one")
        return
    # Recording prints no card: a refused decision is the only thing said.
    request = ReviewRequest(reviewer, decision, note or "", tuple(cells), force_reason)
    signer = credentials(os.environ)
    now = lambda: datetime.now(UTC)  # noqa: E731
    record = record_review(engine, campaign, request, now=now, credentials=signer)
    typer.echo(f"recorded {record.decision.value} by {record.reviewer}: {record.record_sha256}")
    typer.echo(republish(engine, campaign, workdir))


def republish(engine: Engine, campaign: str, workdir: Path) -> str:
    """Publish the campaign's Prefect artifacts again, where its runs published them: the
    Prefect API set in the environment, else the workdir's own (started for this)."""
    if not os.environ.get("PREFECT_API_URL"):
        if not (workdir / ephemeral.PREFECT_DIR).is_dir():
            return "no Prefect server holds this campaign's artifacts; nothing to republish"
        ephemeral.apply_prefect_defaults(os.environ, workdir)  # the workdir's own Prefect
    with session_scope(engine) as session:
        bundle = Path(require_campaign(session, campaign).evidence_dir)
    with ephemeral.ephemeral_server(os.environ, avoid=()):
        from flows.prefect.publish import publish_campaign  # noqa: PLC0415  (Prefect reads env at import)

        publish_campaign(engine, campaign, bundle)
    return "Prefect artifacts republished (dispositions and result card)"


def _review_flags(
    decision: Decision | None, note: str | None, cells: Sequence[str], force_reason: str | None
) -> None:
    """Flags that cannot go together are refused before the ledger is opened or anything
    printed."""
    if decision is None:
        flags = (("--note", note), ("--cell", cells), ("--force-reason", force_reason))
        given = [flag for flag, value in flags if value]
        if given:
            raise FaceoffError(
                f"{', '.join(given)} given without --decision",
                fix="pass --decision promote|no_promotion|rerun_cells with them",
            )
        return
    if not note:
        raise FaceoffError("a review needs a note", fix="pass --note 'why'")
    if cells and decision is not Decision.RERUN_CELLS:
        raise FaceoffError(
            f"--cell goes with --decision rerun_cells, not {decision.value}",
            fix="drop --cell, or pass --decision rerun_cells",
        )
    if force_reason and decision is not Decision.PROMOTE:
        raise FaceoffError(
            f"--force-reason goes with --decision promote, not {decision.value}",
            fix="drop --force-reason",
        )
