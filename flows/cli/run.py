"""``faceoff run``: a campaign (or its paired diagnostics) run to its end, with its live view
and how it stopped."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from faceoff.credentials import credentials
from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from faceoff.formats.carried import CARRIED_FILE
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.preflight import PreflightReport
from flows.campaign import signals
from flows.campaign.diagnostic_run import diagnosed_cell
from flows.campaign.lock import CampaignLock, refuse_if_running
from flows.campaign.opening import campaign_dir_of
from flows.campaign.preflight.host_checks import waivers_of
from flows.campaign.restore import restore_tools
from flows.campaign.succession import check_source
from flows.campaign.takeover import check_startable_arms
from flows.cli.ledger_open import existing_ledger, ledger_url, required_ledger
from flows.cli.preflight import checked_run
from flows.cli.server_lost import server_lost
from flows.cli.validate import matrix_of
from flows.cli.views import console as views
from flows.cli.views import live
from flows.cli.views.ending import end_record, end_summary
from flows.cli.views.json_log import log_line
from flows.prefect import server as ephemeral
from ledger.campaigns import find_campaign
from ledger.db import DB_URL_ENV, open_ledger, resolve_url, session_scope
from ledger.restoration import RESTORED, find_restoration


def run(
    path: Path,
    workdir: Path,
    db: str | None,
    diagnose: str | None = None,
    *,
    aa: bool = False,
    waive: Sequence[str] = (),
    reason: str | None = None,
    json_logs: bool = False,
) -> None:
    frozen = freeze(matrix_of(path, aa=aa))  # a bad matrix fails here, before Prefect starts
    waivers = waivers_of(waive, reason)
    if diagnose is not None:
        if aa:
            raise FaceoffError(
                "--aa and --diagnose cannot be combined",
                fix="diagnose the matrix as it is, or run its A/A twin",
            )
        diagnosed_cell(frozen, diagnose)  # so does a cell the matrix does not have
    ledger_url(db, workdir)  # so does a bad --db: before the workdir is created
    if frozen.matrix.campaign.successor_of and not _carried_already(workdir, frozen):
        engine = required_ledger(existing_ledger(db, workdir), db, workdir)
        check_source(engine, frozen, credentials(os.environ))
    if workdir.exists() and not workdir.is_dir():
        raise FaceoffError(
            "is a file, not a folder", where=str(workdir), fix="pass a --workdir folder"
        )
    campaign_dir = campaign_dir_of(workdir, frozen)
    refuse_if_running(campaign_dir)  # a second run of the campaign touches nothing at all
    checked = checked_run(
        frozen, workdir, db, waivers, json_logs=json_logs
    )  # a FAIL stops here: nothing touched
    check_startable_arms(frozen.matrix, os.environ, sys.executable)  # waived or not
    with CampaignLock(campaign_dir):  # before any server or lane starts
        _run(frozen, workdir, db, diagnose, checked, json_logs=json_logs)


def _run(
    frozen: FrozenMatrix,
    workdir: Path,
    db: str | None,
    diagnose: str | None,
    checked: PreflightReport,
    *,
    json_logs: bool = False,
) -> None:
    """The run, under its campaign's lock: Prefect's server, the flow, how it ended. The
    live view only on a terminal, and not for JSON lines."""
    out = views.make_console()
    live_view = out.is_terminal and not json_logs and diagnose is None
    ephemeral.apply_prefect_defaults(os.environ, workdir, live_view=live_view, json_logs=json_logs)
    if db is not None:  # the flow reads it there: a flow parameter is stored by Prefect
        os.environ[DB_URL_ENV] = db
    ports = {arm.port for arm in frozen.matrix.arms}
    servers: list[ephemeral.RunServer] = []  # the run's own Prefect server, once started
    view = live.LiveView(out, resolve_url(db, workdir), frozen) if live_view else None
    with (  # the view first: it says what happens while the Prefect server starts
        _run_stopped(workdir, db, servers, frozen.matrix.campaign.name),
        view or nullcontext(),
        ephemeral.ephemeral_server(os.environ, avoid=ports) as server,
    ):
        servers += [server] if server is not None else []
        if diagnose is None:
            report = _campaign(frozen, workdir, checked, json_logs=json_logs)
        else:
            report = _diagnose(frozen, workdir, diagnose)
    status = report(out)  # once the view has given way
    if servers and servers[0].losses:
        typer.echo(ephemeral.loss_line(servers[0].losses), err=True)
    raise SystemExit(status)


Report = Callable[[Console], int]  # prints how a run ended, returns its exit status


def _campaign(
    frozen: FrozenMatrix, workdir: Path, checked: PreflightReport, *, json_logs: bool
) -> Report:
    from flows.prefect.flow_runner import exit_status, run_campaign  # noqa: PLC0415  (Prefect reads env at import)

    result = run_campaign(frozen, workdir, checked=checked, locked=True)

    def report(out: Console) -> int:
        if json_logs:
            fields = end_record(result) | {"exit": int(exit_status(result))}
            said = str(fields.pop("message"))
            typer.echo(log_line(said, datetime.now(UTC), fields=fields))
        else:
            out.print(end_summary(result))
        return exit_status(result)

    return report


def _diagnose(frozen: FrozenMatrix, workdir: Path, cell: str) -> Report:
    from flows.prefect.diagnose import run_diagnose  # noqa: PLC0415  (Prefect reads env at import)

    result = run_diagnose(frozen, workdir, cell, locked=True)

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
        down = left_down(db, workdir, campaign) if isinstance(error, FaceoffError) else None
        if down is not None:  # an incumbent left down is exit 4 whatever stopped the run
            typer.echo(f"error: {str(error).rstrip('.')}; {down}", err=True)
            raise SystemExit(Exit.NOT_RESTORED) from None
        raise


def left_down(db: str | None, workdir: Path, campaign: str) -> str | None:
    """What the ledger says of a restoration the campaign still needs (the run stopped after
    the take-over and its restoration failed, or a killed run left it), else None."""
    engine = existing_ledger(db, workdir)
    if engine is None:
        return None
    with session_scope(engine) as session:
        row = find_campaign(session, campaign)
        restoration = find_restoration(session, row) if row is not None else None
        if restoration is None or restoration.state == RESTORED:
            return None
        why = restoration.reason or "not brought back since the take-over"
        return (
            f"the incumbent is not restored ({restoration.state}: {why}). Fix what stopped "
            f"the run, then run `faceoff restore {campaign}`"
        )


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
