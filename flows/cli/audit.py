"""``faceoff audit``: a bundle re-verified, as a checklist."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import typer

from evidence.audit.checklist import checklist
from evidence.audit.checklist import lines as checklist_lines
from evidence.audit.run import audit_bundle
from faceoff.credentials import credentials
from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from flows.cli.ledger_open import existing_ledger
from ledger.campaigns import find_campaign
from ledger.db import session_scope


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
    public keys (or trust files) to check signatures with; no secret is needed."""
    folder = bundle_folder(campaign, workdir, db)
    trusted = credentials(os.environ, trust=trust)
    report = audit_bundle(folder, credentials=trusted, redraw=redraw, processes=processes)
    output = checklist(report)
    if as_json:
        typer.echo(output.model_dump_json(indent=2))
    else:
        for line in checklist_lines(output):
            typer.echo(line)
    if not output.ok:
        raise SystemExit(Exit.FINDINGS)


def bundle_folder(campaign: str, workdir: Path, db: str | None) -> Path:
    """A bundle folder given as such, or the folder of the campaign so named: under the
    workdir, else where the ledger says its evidence is."""
    for folder in (Path(campaign), workdir / campaign):
        if folder.is_dir():
            return folder
    engine = existing_ledger(db, workdir) if workdir.is_dir() or db else None
    if engine is not None:
        with session_scope(engine) as session:
            row = find_campaign(session, campaign)
        if row is not None:
            return Path(row.evidence_dir)
    raise FaceoffError(
        f"no bundle folder and no campaign named {campaign!r}",
        where=str(workdir),
        fix="pass a bundle folder, or a campaign name with the --workdir (or --db) it ran with",
    )
