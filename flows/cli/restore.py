"""``faceoff restore`` and ``faceoff teardown``: the incumbent brought back, a campaign's
lanes stopped.
The same concept at another layer: ``flows.campaign.restore``.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from faceoff.exits import Exit
from faceoff.formats.lane import LANES_DIR
from flows.campaign.restore import restore_incumbent, restore_pending, restore_tools
from flows.cli.ledger_open import existing_ledger, required_ledger
from lanes.leftovers import teardown as stop_campaign_lanes


def restore(campaign: str | None, workdir: Path, db: str | None) -> None:
    """Exit 4 when an incumbent is not restored; else 2 when a closed bundle was refused
    its new seal (its seal did not verify: named on an ``error:`` line); else 0."""
    engine = existing_ledger(db, workdir)
    tools = restore_tools(os.environ)
    if campaign is None:
        outcomes = restore_pending(engine, tools) if engine is not None else []
    else:
        outcomes = [restore_incumbent(required_ledger(engine, db, workdir), campaign, tools)]
    if not outcomes:
        typer.echo("no campaign needs restoration; nothing changed")
    for outcome in outcomes:
        typer.echo(outcome.message)
        for line in outcome.details:
            typer.echo(f"  {line}")
    if not all(o.ok for o in outcomes):
        raise SystemExit(Exit.NOT_RESTORED)
    refused = [o for o in outcomes if o.refused is not None]
    for outcome in refused:
        typer.echo(f"error: campaign {outcome.campaign}: {outcome.refused}", err=True)
    if refused:
        raise SystemExit(Exit.REFUSED)


def teardown(campaign: str | None, workdir: Path) -> None:
    found = sorted(p.parent for p in workdir.glob(f"*/{LANES_DIR}"))
    folders = [workdir / campaign] if campaign else found
    tools = restore_tools(os.environ)
    stopped = 0
    for folder in folders:
        for gone in stop_campaign_lanes(folder, folder.name, tools.now, tools.docker):
            typer.echo(f"{folder.name}: stopped {gone.kind} {gone.ident} ({gone.arm}, {gone.run})")
            stopped += 1
    if not stopped:
        whose = f"campaign {campaign}" if campaign else f"any campaign under {workdir}"
        typer.echo(f"nothing to stop: no lane of {whose} is running")
