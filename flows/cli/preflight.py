"""``faceoff preflight``: the campaign host checked before the night, as a checklist; and
the same checks as the first step of ``faceoff run`` (``checked_run``).
The same concept at another layer: ``faceoff.formats.preflight``.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import typer

from faceoff.exits import Exit
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.preflight import PreflightReport, Waiver
from flows.campaign.preflight.host_checks import (
    real_host,
    require_passed,
    run_preflight,
    waivers_of,
)
from flows.cli.validate import matrix_of
from flows.cli.views.json_log import log_line


def preflight(
    path: Path,
    workdir: Path,
    db: str | None,
    *,
    as_json: bool,
    waive: list[str],
    reason: str | None,
    aa: bool = False,
) -> None:
    frozen = freeze(matrix_of(path, aa=aa))
    waivers = waivers_of(waive, reason)
    report = checked(frozen, workdir, db, waivers, ahead=True)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        for line in lines(report):
            typer.echo(line)
    if not report.passed:
        raise SystemExit(Exit.REFUSED)  # the run would stop before the take-over


def checked(
    frozen: FrozenMatrix, workdir: Path, db: str | None, waivers: list[Waiver], *, ahead: bool
) -> PreflightReport:
    """The checklist on this host, in its own timezone."""
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    host = real_host(workdir, os.environ, zone, db=db, ahead=ahead)
    return run_preflight(frozen, host, waivers, pilot=bool(frozen.matrix.campaign.pilot))


def checked_run(
    frozen: FrozenMatrix,
    workdir: Path,
    db: str | None,
    waivers: list[Waiver],
    *,
    json_logs: bool = False,
) -> PreflightReport:
    """``faceoff run``'s first step: the report, or one error naming every FAIL (exit 2).
    Its WARNs on stderr, as JSON lines with ``json_logs``."""
    report = checked(frozen, workdir, db, waivers, ahead=False)
    for line in [r.line for r in report.warnings] + [r.line for r in report.waived]:
        said = f"preflight: {line}"
        shown = log_line(said, report.at, level="WARNING") if json_logs else said
        typer.echo(shown, err=True)
    require_passed(report)
    return report


def lines(report: PreflightReport) -> list[str]:
    failed = {r.check for r in report.waived}
    unused = [w.check for w in report.waivers if w.check not in failed]
    tail = [f"waiver of {c}: nothing failed there; it changes nothing" for c in unused]
    verdict = "passed" if report.passed else f"FAILED: {len(report.failures)} to fix"
    return [*(r.line for r in report.checks), *tail, f"{report.sentence}: {verdict}"]
