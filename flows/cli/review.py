"""``faceoff review``: a reviewer's decision, in the bundle and in the ledger.

The decision is appended to the sealed bundle's ``reviews.jsonl``
(``evidence.reviews.recording``), its ledger row written in the same session, and
then the bundle's views and SHA256SUMS are rebuilt.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from sqlalchemy import Engine

from evidence.bundle.write import refresh_views
from evidence.folder.layout import REPORT_FILE, RESULT_FILE, CampaignFolder
from evidence.reviews.recording import ReviewRequest, append_decision
from evidence.views.terminal.console import card
from faceoff.credentials import NOBODY, Credentials, credentials
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.reviews import Decision, ReviewRecord
from faceoff.ports import Clock
from flows.campaign.seal_record import keep_current_seal
from flows.cli.ledger_open import existing_ledger, required_ledger
from flows.cli.views import console as views
from flows.prefect import server as ephemeral
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import session_scope
from ledger.tables import ReviewRow

SCREEN_LINES = 40  # the card's first screen when the output is no terminal
SCREEN_MARGIN = 3  # a terminal's lines left for what follows the card
MIN_SCREEN = 20


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
    if decision is None:  # only shown: the dispositions and the card's first screen
        out = views.make_console()
        with session_scope(engine) as session:
            row = require_campaign(session, campaign)
            title = f"{row.name} — {row.status}"
            out.print(views.dispositions_table(title, cell_runs(session, row)))
        show_card_start(out, Path(row.evidence_dir))
        typer.echo("no decision recorded; pass --decision and --note to record one")
        return
    # Recording prints no card: a refused decision is the only thing said.
    request = ReviewRequest(reviewer, decision, note or "", tuple(cells), force_reason)
    signer = credentials(os.environ)
    now = lambda: datetime.now(UTC)  # noqa: E731
    record = record_review(engine, campaign, request, now=now, credentials=signer)
    typer.echo(f"recorded {record.decision.value} by {record.reviewer}: {record.record_sha256}")
    typer.echo(republish(engine, campaign, workdir))


def show_card_start(out: Console, bundle: Path) -> None:
    """The card's first screen, and where the rest is: a terminal's height of the rendered
    card, or, redirected, the first lines of ``RESULT.md`` as written (plain text)."""
    path = bundle / RESULT_FILE
    if out.is_terminal:
        with out.capture() as captured:
            out.print(card(bundle))
        lines = captured.get().splitlines()
        room = max(out.size.height - SCREEN_MARGIN, MIN_SCREEN)
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
        room = SCREEN_LINES
    for line in lines[:room]:
        out.file.write(line + "\n")
    if len(lines) > room:
        typer.echo(f"… {len(lines) - room} more lines: the whole card is {path}, with its "
                   f"plots in {bundle / REPORT_FILE}")  # fmt: skip


def republish(engine: Engine, campaign: str, workdir: Path) -> str:
    """Publish the campaign's Prefect artifacts again where a Prefect server is set
    (``PREFECT_API_URL``: a deployment's). The workdir's own Prefect runs only while
    ``faceoff run`` does: starting it here took most of a minute, so it is not (its next
    run of the campaign publishes them again)."""
    if not os.environ.get("PREFECT_API_URL"):
        if not (workdir / ephemeral.PREFECT_DIR).is_dir():
            return "no Prefect server holds this campaign's artifacts; nothing to republish"
        return (
            "Prefect artifacts not republished: the workdir's own Prefect runs only during "
            "`faceoff run` (the next run of the campaign republishes them); the bundle and "
            "the ledger hold the decision"
        )
    with session_scope(engine) as session:
        bundle = Path(require_campaign(session, campaign).evidence_dir)
    with warnings.catch_warnings():  # Prefect's own deprecations are not the reviewer's
        warnings.simplefilter("ignore", FutureWarning)
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
