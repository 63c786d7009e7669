"""What each ``faceoff`` command does, behind the command line's argument parsing.

Kept apart from ``flows.cli`` so that ``faceoff --help``, ``version`` and a usage error
load none of this (the ledger, Prefect, Docker, the evidence renderers): the command line
imports this module only once a command runs.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import typer
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError

from evidence.audit import audit_bundle
from evidence.console import audit_lines, card, tickets_table
from evidence.decision import Decision
from evidence.review_recording import ReviewRequest
from faceoff.errors import FaceoffError
from faceoff.signing import signing_key
from flows import console as views
from flows import ephemeral, live, signals
from flows.lock import run_in_progress
from flows.restore import restore_incumbent, restore_pending, restore_tools
from flows.review import record_review
from lanes.commands import binding_line
from lanes.context import LANES_DIR
from lanes.deadlines import worst_case
from lanes.leftovers import teardown as stop_campaign_lanes
from ledger.campaigns import cell_runs, list_campaigns, require_campaign
from ledger.db import DB_URL_ENV, open_ledger, resolve_url, session_scope
from matrix.freeze import freeze
from matrix.load import load_matrix
from tickets.store import open_tickets


def validate(path: Path) -> None:
    frozen = freeze(load_matrix(path))
    out = views.make_console()
    out.print(views.plan_table(frozen))
    for arm in frozen.matrix.arm_order():
        out.print(binding_line(arm), highlight=False)
    out.print(worst_case(frozen.matrix).sentence, highlight=False)
    out.print(f"matrix id: {frozen.matrix_id}")


def freeze_file(path: Path, output: Path, *, replace: bool) -> None:
    frozen = freeze(load_matrix(path))
    _fresh_file(output)
    frozen.write(output, replace=replace)
    typer.echo(f"{output}: matrix id {frozen.matrix_id}")


def status(campaign: str | None, workdir: Path, db: str | None) -> None:
    engine = _existing_ledger(db, workdir)
    out = views.make_console()
    if engine is None and campaign is None:
        out.print(views.campaigns_table([]))
        return
    with session_scope(_required(engine, db, workdir)) as session:
        rows = [require_campaign(session, campaign)] if campaign else list_campaigns(session)
        running = {r.name for r in rows if run_in_progress(Path(r.evidence_dir))}
        if campaign is None:
            out.print(views.campaigns_table(rows, running))
            return
        out.print(views.dispositions_table(rows[0], cell_runs(session, rows[0]), running))


def run(path: Path, workdir: Path, db: str | None) -> None:
    frozen = freeze(load_matrix(path))  # a bad matrix fails here, before Prefect starts
    _ledger_url(db, workdir)  # so does a bad --db: before the workdir is created
    if workdir.exists() and not workdir.is_dir():
        raise FaceoffError(
            "is a file, not a folder", where=str(workdir), fix="pass a --workdir folder"
        )
    out = views.make_console()
    ephemeral.apply_prefect_defaults(os.environ, workdir, live_view=out.is_terminal)
    if db is not None:  # the flow reads it there: a flow parameter is stored by Prefect
        os.environ[DB_URL_ENV] = db
    ports = {arm.port for arm in frozen.matrix.arms}
    try:
        with (
            ephemeral.ephemeral_server(os.environ, avoid=ports),
            live.LiveView(out, resolve_url(db, workdir), frozen.matrix.campaign.name),
        ):
            from flows.runner import exit_status, run_campaign  # noqa: PLC0415  (Prefect reads env at import)

            result = run_campaign(path, workdir)
    except signals.Terminated:
        typer.echo(signals.TERMINATED_MESSAGE, err=True)
        raise SystemExit(signals.EXIT_TERMINATED) from None
    except Exception as error:
        if not disk_full(error):
            raise
        raise FaceoffError(
            "the disk is full: the run stopped and the incumbent may not be restored",
            where=str(workdir),
            fix="free space on that disk, then run the same `faceoff run` again: it restores "
            "the incumbent first and resumes",
        ) from None
    out.print(live.card_view(result.card))
    for line in live.closing_lines(result):
        out.print(line)
    raise SystemExit(exit_status(result))


def disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` or an error behind it is a full disk (ENOSPC, or SQLite's own)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        if "database or disk is full" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def restore(campaign: str | None, workdir: Path, db: str | None) -> None:
    engine = _existing_ledger(db, workdir)
    tools = restore_tools(os.environ)
    if campaign is None:
        outcomes = restore_pending(engine, tools) if engine is not None else []
    else:
        outcomes = [restore_incumbent(_required(engine, db, workdir), campaign, tools)]
    if not outcomes:
        typer.echo("no campaign needs restoration; nothing changed")
    for outcome in outcomes:
        typer.echo(outcome.message)
        for line in outcome.details:
            typer.echo(f"  {line}")
    if not all(o.ok for o in outcomes):
        raise SystemExit(1)


def teardown(campaign: str | None, workdir: Path) -> None:
    found = sorted(p.parent for p in workdir.glob(f"*/{LANES_DIR}"))
    folders = [workdir / campaign] if campaign else found
    tools = restore_tools(os.environ)
    for folder in folders:
        for gone in stop_campaign_lanes(folder, folder.name, tools.now, tools.docker):
            typer.echo(f"{folder.name}: stopped {gone.kind} {gone.ident} ({gone.arm}, {gone.run})")


def audit(bundle: Path) -> None:
    report = audit_bundle(bundle, key=signing_key(os.environ))
    for line in audit_lines(report):
        typer.echo(line)
    if not report.ok:
        raise SystemExit(1)


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
    engine = _required(_existing_ledger(db, workdir), db, workdir)
    out = views.make_console()
    with session_scope(engine) as session:
        row = require_campaign(session, campaign)
        out.print(views.dispositions_table(row, cell_runs(session, row)))
    out.print(card(Path(row.evidence_dir)))
    if decision is None:
        typer.echo("no decision recorded; pass --decision and --note to record one")
        return
    if not note:
        raise FaceoffError("a review needs a note", fix="pass --note 'why'")
    request = ReviewRequest(reviewer, decision, note, tuple(cells), force_reason)
    key = signing_key(os.environ)
    record = record_review(engine, campaign, request, now=lambda: datetime.now(UTC), key=key)
    typer.echo(f"recorded {record.decision.value} by {record.reviewer}: {record.record_sha256}")


def tickets(workdir: Path) -> None:
    views.make_console().print(tickets_table(open_tickets(workdir)))


def _fresh_file(path: Path) -> None:
    """An output file goes into a folder that exists: a typo in its path is not made real."""
    if path.is_dir():
        raise FaceoffError("is a folder", where=str(path), fix="pass the path of the file to write")
    if not path.parent.is_dir():
        raise FaceoffError(
            "no such folder", where=str(path.parent), fix="create it or correct the path"
        )


def _ledger_url(db: str | None, workdir: Path) -> str:
    """The ledger URL, refused here when no ledger could ever open at it."""
    url = resolve_url(db, workdir)
    try:
        create_engine(url).dispose()  # parses the URL and loads its driver; connects nowhere
    except (ArgumentError, ImportError) as exc:
        raise FaceoffError(
            f"not a database URL the ledger can use ({exc})",
            where="--db" if db else DB_URL_ENV,
            fix="pass sqlite:///PATH/faceoff.db or postgresql://USER@HOST:PORT/DB",
        ) from None
    return url


def _existing_ledger(db: str | None, workdir: Path) -> Engine | None:
    """The ledger, or None where the workdir has none yet. Commands that read or restore never
    create a workdir or a ledger, so a typo in --workdir stays visible instead of becoming one."""
    url = _ledger_url(db, workdir)
    database = make_url(url).database
    if url.startswith("sqlite") and database and database != ":memory:":
        folder = Path(database).parent
        if not folder.is_dir():
            raise FaceoffError(
                "no such folder", where=str(folder), fix="pass the --workdir a campaign ran with"
            )
        if not Path(database).exists():
            return None
    try:
        return open_ledger(url)
    except DatabaseError as exc:  # unreachable server, or a file that is no database
        raise FaceoffError(
            f"cannot open the ledger: {str(exc.orig).splitlines()[0]}",
            where="--db" if db else str(Path(workdir) / "faceoff.db"),
            fix="check that the URL names a faceoff ledger and that its server runs",
        ) from None


def _required(engine: Engine | None, db: str | None, workdir: Path) -> Engine:
    if engine is None:
        raise FaceoffError(
            "no ledger yet, so no campaign",
            where="--db" if db else str(Path(workdir) / "faceoff.db"),
            fix="pass the --workdir (or --db) a campaign ran with",
        )
    return engine
