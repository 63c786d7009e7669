"""``faceoff audit``: a bundle re-verified, as a checklist."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import typer
from sqlmodel import Session, select

from evidence.audit.checklist import checklist
from evidence.audit.checklist import lines as checklist_lines
from evidence.audit.freshness import LedgerSeal, freshness_findings
from evidence.audit.reverify import audit_bundle
from faceoff.credentials import credentials
from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from flows.cli.ledger_open import existing_ledger
from ledger.campaigns import find_campaign
from ledger.db import session_scope
from ledger.tables import CampaignRow, ReviewRow


def audit(
    campaign: str,
    workdir: Path,
    db: str | None,
    *,
    as_json: bool,
    redraw: bool = False,
    processes: int | None = None,
    trust: Sequence[Path] = (),
) -> None:
    """``processes``: how many may check cells; None: one per usable CPU. ``trust``: the
    public keys (or trust files) to check signatures with; no secret is needed. A campaign
    given by name is also held to the ledger's current seal and reviews."""
    folder, ledger = bundle_folder(campaign, workdir, db)
    trusted = credentials(os.environ, trust=trust)
    report = audit_bundle(folder, credentials=trusted, redraw=redraw, processes=processes)
    if ledger is not None:
        report.findings.extend(freshness_findings(folder, ledger))
    output = checklist(report)
    if as_json:
        typer.echo(output.model_dump_json(indent=2))
    else:
        for line in checklist_lines(output):
            typer.echo(line)
    if not output.ok:
        raise SystemExit(Exit.FINDINGS)


def bundle_folder(campaign: str, workdir: Path, db: str | None) -> tuple[Path, LedgerSeal | None]:
    """The folder of the campaign so named, under the workdir or where the ledger says its
    evidence is, with what the ledger keeps of it; else a bundle folder given as such (then
    nothing to hold it to). A name wins over a same-named folder in the current directory."""
    engine = existing_ledger(db, workdir) if workdir.is_dir() or db else None
    row = None
    if engine is not None:
        with session_scope(engine) as session:
            found = find_campaign(session, campaign)
            row = None if found is None else (Path(found.evidence_dir), _kept(session, found))
    if (workdir / campaign).is_dir():
        return workdir / campaign, row[1] if row is not None else None
    if row is not None:
        return row
    if Path(campaign).is_dir():
        return Path(campaign), None
    raise FaceoffError(
        f"no bundle folder and no campaign named {campaign!r}",
        where=str(workdir),
        fix="pass a bundle folder, or a campaign name with the --workdir (or --db) it ran with",
    )


def _kept(session: Session, row: CampaignRow) -> LedgerSeal:
    reviews = session.exec(select(ReviewRow).where(ReviewRow.campaign_id == row.id)).all()
    return LedgerSeal(row.seal_sha256, row.seal_sequence, len(reviews))
