"""What each ``faceoff`` command does, behind the command line's argument parsing.

Kept apart from ``flows.cli`` so that ``faceoff --help``, ``version`` and a usage error
load none of this (the ledger, Prefect, Docker, the evidence renderers): the command line
imports this module only once a command runs.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from evidence.audit import audit_bundle
from evidence.audit_checklist import checklist
from evidence.audit_checklist import lines as checklist_lines
from evidence.carried import CARRIED_FILE
from evidence.console import card, tickets_table
from evidence.decision import Decision
from evidence.review_recording import ReviewRequest
from faceoff.errors import FaceoffError
from faceoff.signing import signing_key
from flows import console as views
from flows import ephemeral, live, signals
from flows.diagnostic_run import diagnosed_cell
from flows.ending import end_summary
from flows.ledger_open import existing_ledger, ledger_url, required_ledger
from flows.output_file import fresh_file
from flows.restore import restore_incumbent, restore_pending, restore_tools
from flows.review import record_review
from flows.script_output import plan_output, tickets_output
from flows.server_lost import server_lost
from flows.succession import check_source
from lanes.commands import binding_line
from lanes.context import LANES_DIR
from lanes.deadlines import worst_case
from lanes.leftovers import teardown as stop_campaign_lanes
from ledger.campaigns import cell_runs, find_campaign, require_campaign
from ledger.db import DB_URL_ENV, open_ledger, resolve_url, session_scope
from matrix.aa import aa_line, aa_twin
from matrix.freeze import FrozenMatrix, freeze
from matrix.load import load_matrix
from matrix.model import Matrix
from tickets.store import open_tickets


def validate(path: Path, *, as_json: bool, aa: bool = False) -> None:
    frozen = freeze(_matrix(path, aa=aa))
    if as_json:
        typer.echo(plan_output(frozen).model_dump_json(indent=2))
        return
    out = views.make_console()
    if aa:
        out.print(aa_line(frozen.matrix), highlight=False)
    out.print(views.plan_table(frozen))
    for arm in frozen.matrix.arm_order():
        out.print(binding_line(arm), highlight=False)
    out.print(worst_case(frozen.matrix).sentence, highlight=False)
    out.print(f"matrix id: {frozen.matrix_id}")


def _matrix(path: Path, *, aa: bool) -> Matrix:
    """The matrix of ``path``, or with ``aa`` its A/A twin."""
    matrix = load_matrix(path)
    return aa_twin(matrix, where=path) if aa else matrix


def freeze_file(path: Path, output: Path, *, replace: bool) -> None:
    frozen = freeze(load_matrix(path))
    fresh_file(output)
    frozen.write(output, replace=replace)
    typer.echo(f"{output}: matrix id {frozen.matrix_id}")


def run(
    path: Path, workdir: Path, db: str | None, diagnose: str | None = None, *, aa: bool = False
) -> None:
    frozen = freeze(_matrix(path, aa=aa))  # a bad matrix fails here, before Prefect starts
    if diagnose is not None:
        if aa:
            raise FaceoffError(
                "--aa and --diagnose cannot be combined",
                fix="diagnose the matrix as it is, or run its A/A twin",
            )
        diagnosed_cell(frozen, diagnose)  # so does a cell the matrix does not have
    ledger_url(db, workdir)  # so does a bad --db: before the workdir is created
    if frozen.matrix.campaign.successor_of and not _carried_already(workdir, frozen):
        check_source(required_ledger(existing_ledger(db, workdir), db, workdir), frozen)
    if workdir.exists() and not workdir.is_dir():
        raise FaceoffError(
            "is a file, not a folder", where=str(workdir), fix="pass a --workdir folder"
        )
    out = views.make_console()
    ephemeral.apply_prefect_defaults(os.environ, workdir, live_view=out.is_terminal)
    if db is not None:  # the flow reads it there: a flow parameter is stored by Prefect
        os.environ[DB_URL_ENV] = db
    ports = {arm.port for arm in frozen.matrix.arms}
    servers: list[ephemeral.RunServer] = []  # the run's own Prefect server, once started
    view = live.LiveView(out, resolve_url(db, workdir), frozen) if diagnose is None else None
    with (  # the view first: it says what happens while the Prefect server starts
        _run_stopped(workdir, db, servers, frozen.matrix.campaign.name),
        view or nullcontext(),
        ephemeral.ephemeral_server(os.environ, avoid=ports) as server,
    ):
        servers += [server] if server is not None else []
        if diagnose is None:
            report = _campaign(path, workdir, aa=aa)
        else:
            report = _diagnose(path, workdir, diagnose)
    status = report(out)  # once the view has given way
    if servers and servers[0].losses:
        typer.echo(ephemeral.loss_line(servers[0].losses), err=True)
    raise SystemExit(status)


Report = Callable[[Console], int]  # prints how a run ended, returns its exit status


def _campaign(path: Path, workdir: Path, *, aa: bool) -> Report:
    from flows.runner import exit_status, run_campaign  # noqa: PLC0415  (Prefect reads env at import)

    result = run_campaign(path, workdir, aa=aa)

    def report(out: Console) -> int:
        out.print(end_summary(result))
        return exit_status(result)

    return report


def _diagnose(path: Path, workdir: Path, cell: str) -> Report:
    from flows.diagnose import run_diagnose  # noqa: PLC0415  (Prefect reads env at import)

    result = run_diagnose(path, workdir, cell)

    def report(_: Console) -> int:  # plain lines: a table a script may read, never wrapped
        for line in result.lines():
            typer.echo(line)
        for restoration in result.campaign.restorations:
            typer.echo(f"restoration: {restoration.message}")
        typer.echo(f"bundle: {result.campaign.bundle}")
        return result.exit_status

    return report


@contextmanager
def _run_stopped(
    workdir: Path, db: str | None, servers: list[ephemeral.RunServer], campaign: str
) -> Iterator[None]:
    """How a run that stopped says so: one line and its exit status, never a traceback."""
    try:
        yield
    except signals.Terminated:
        typer.echo(signals.TERMINATED_MESSAGE, err=True)
        raise SystemExit(signals.EXIT_TERMINATED) from None
    except Exception as error:
        if disk_full(error):
            raise FaceoffError(
                "the disk is full: the run stopped and the incumbent may not be restored",
                where=str(workdir),
                fix="free space on that disk, then run the same `faceoff run` again: it "
                "restores the incumbent first and resumes",
            ) from None
        lost = ledger_lost(error)
        if lost is not None:
            url = make_url(resolve_url(db, workdir)).render_as_string(hide_password=True)
            raise FaceoffError(
                f"the ledger stopped answering ({lost}): the run stopped; what the client "
                "journaled is on disk, and the incumbent may not be restored",
                where=url,
                fix="bring the database back, then run the same `faceoff run` again: it "
                "restores the incumbent first and runs the interrupted cells again",
            ) from None
        if servers and servers[0].losses:
            ended = server_lost(
                servers[0].losses,
                error,
                engine=open_ledger(resolve_url(db, workdir)),
                campaign=campaign,
                prefect_home=Path(os.environ["PREFECT_HOME"]),
                tools=restore_tools(os.environ),
            )
            typer.echo(f"error: {ended.message}", err=True)
            raise SystemExit(ended.exit_status) from None
        raise


def _carried_already(workdir: Path, frozen: FrozenMatrix) -> bool:
    """A successor resumed after it carried its cells over no longer needs its source."""
    return (workdir / frozen.matrix.campaign.name / CARRIED_FILE).is_file()


def disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` or an error behind it is a full disk (ENOSPC, or SQLite's own)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        if "database or disk is full" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def ledger_lost(error: BaseException | None) -> str | None:
    """The database's own first line when ``error`` or one behind it is a lost connection to
    the ledger (a stopped or unreachable server), else None."""
    while error is not None:
        if isinstance(error, OperationalError):
            return str(error.orig).splitlines()[0]
        error = error.__cause__ or error.__context__
    return None


def restore(campaign: str | None, workdir: Path, db: str | None) -> None:
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
        raise SystemExit(1)


def teardown(campaign: str | None, workdir: Path) -> None:
    found = sorted(p.parent for p in workdir.glob(f"*/{LANES_DIR}"))
    folders = [workdir / campaign] if campaign else found
    tools = restore_tools(os.environ)
    for folder in folders:
        for gone in stop_campaign_lanes(folder, folder.name, tools.now, tools.docker):
            typer.echo(f"{folder.name}: stopped {gone.kind} {gone.ident} ({gone.arm}, {gone.run})")


def audit(
    campaign: str,
    workdir: Path,
    db: str | None,
    *,
    as_json: bool,
    redraw: bool = False,
    processes: int | None = None,
) -> None:
    """``processes``: how many may check cells; None: one per usable CPU."""
    key = signing_key(os.environ)
    folder = bundle_folder(campaign, workdir, db)
    report = audit_bundle(folder, key=key, redraw=redraw, processes=processes)
    output = checklist(report, signed=key is not None)
    if as_json:
        typer.echo(output.model_dump_json(indent=2))
    else:
        for line in checklist_lines(output):
            typer.echo(line)
    if not output.ok:
        raise SystemExit(1)


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
    key = signing_key(os.environ)
    record = record_review(engine, campaign, request, now=lambda: datetime.now(UTC), key=key)
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
        from flows.publish import publish_campaign  # noqa: PLC0415  (Prefect reads env at import)

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


def tickets(workdir: Path, *, as_json: bool) -> None:
    found = open_tickets(workdir)
    if as_json:
        typer.echo(tickets_output(found).model_dump_json(indent=2))
        return
    views.make_console().print(tickets_table(found))
