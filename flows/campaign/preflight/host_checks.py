"""The preflight's checklist: every check of the catalog on the campaign host, the
operator's waivers applied, in seconds and touching no lane.

    report = run_preflight(frozen, real_host(workdir, os.environ, zone), waivers, pilot=True)
    require_passed(report)  # a FAIL nobody waived stops the run here, before the take-over
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, tzinfo
from pathlib import Path

from collectors.gpu.nvml import PynvmlLibrary
from faceoff.credentials import credentials
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import CheckResult, PreflightReport, Waiver
from faceoff.ports import DockerClient
from flows.campaign.preflight.campaign_state import campaign_check
from flows.campaign.preflight.catalog import CHECKS, ok
from flows.campaign.preflight.context_length import context_checks
from flows.campaign.preflight.environment import (
    disk_check,
    prefect_home_check,
    program_checks,
    secret_checks,
)
from flows.campaign.preflight.files import (
    model_checks,
    mount_checks,
    protected_checks,
    weights_checks,
)
from flows.campaign.preflight.gpus import gpu_checks
from flows.campaign.preflight.held import takeover_lanes
from flows.campaign.preflight.host import PreflightHost
from flows.campaign.preflight.images import image_checks
from flows.campaign.preflight.ledger_check import ledger_check
from flows.campaign.preflight.ports import incumbent_check, port_checks
from flows.campaign.preflight.power import power_checks
from flows.campaign.preflight.static import static_checks
from flows.campaign.preflight.timing import night_start, time_check
from flows.campaign.restore import restore_tools
from ledger.db import resolve_url
from matrix.arm import LaneKind

PREFECT_DIR = ".prefect"  # flows.prefect.server's default under the workdir


def run_preflight(
    frozen: FrozenMatrix, host: PreflightHost, waivers: Sequence[Waiver] = (), *, pilot: bool
) -> PreflightReport:
    """Every check, in the catalog's order, with ``waivers`` applied to its FAILs."""
    started = time.perf_counter()
    at = host.tools.now()
    results = _checks(frozen, host, at, pilot=pilot)
    return PreflightReport(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        host=host.name,
        at=at,
        took_s=round(time.perf_counter() - started, 3),
        checks=waived(in_order(results), waivers),
        waivers=list(waivers),
    )


def _checks(
    frozen: FrozenMatrix, host: PreflightHost, at: datetime, *, pilot: bool
) -> list[CheckResult]:
    matrix = frozen.matrix
    docker = _Docker(host.tools.docker, needed=any(a.lane is LaneKind.DOCKER for a in matrix.arms))
    held = takeover_lanes(
        host.workdir, host.campaign_dir(matrix.campaign.name), matrix.incumbent, docker.maybe()
    )
    ledger = ledger_check(host.db_url, frozen, credentials(host.tools.environ))
    start = night_start(matrix, at, host.zone, ahead=host.ahead)
    return [
        *static_checks(frozen),
        *gpu_checks(matrix.arms, host.nvml, {pid for lane in held for pid in lane.pids}),
        *image_checks(matrix.arms, docker.required),
        *mount_checks(matrix.arms),
        *model_checks(matrix.arms),
        *weights_checks(matrix.arms),
        *context_checks(matrix.arms, {a.name: matrix.cells_for(a) for a in matrix.arms}),
        *secret_checks(matrix, host.tools.environ),
        *program_checks(matrix, host.tools.environ, host.tools.python),
        *port_checks(matrix, held),
        incumbent_check(matrix, held, host.tools.http),
        disk_check(matrix, host.workdir),
        prefect_home_check(host.prefect_home),
        ledger.check,
        campaign_check(frozen, host.campaign_dir(matrix.campaign.name)),
        *protected_checks(matrix.protected_files),
        *power_checks(frozen, ledger.closed),
        time_check(matrix, start, host.zone, ledger.durations, pilot=pilot),
    ]


def in_order(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The catalog's order; a check that found nothing to flag says so once."""
    order = list(CHECKS)
    found = sorted(results, key=lambda r: order.index(r.check))
    quiet = [ok(c, "matrix", "nothing to flag") for c in order if all(r.check != c for r in found)]
    return sorted([*found, *quiet], key=lambda r: order.index(r.check))


def waived(results: Sequence[CheckResult], waivers: Sequence[Waiver]) -> list[CheckResult]:
    """Each FAIL of a waived check carries the operator's reason."""
    reasons = {w.check: w.reason for w in waivers}
    return [
        r.model_copy(update={"waived": reasons[r.check]})
        if r.status.value == "FAIL" and r.check in reasons
        else r
        for r in results
    ]


def waivers_of(checks: Sequence[str], reason: str | None) -> list[Waiver]:
    """``--waive CHECK`` (repeated) with its ``--reason``, each check a known one."""
    if not checks:
        if reason:
            raise FaceoffError("--reason without --waive", fix="name the check with --waive")
        return []
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        raise FaceoffError(
            f"no preflight check {', '.join(map(repr, unknown))}",
            where="--waive",
            fix=f"name one of {', '.join(CHECKS)}",
        )
    if not (reason or "").strip():
        raise FaceoffError(
            "a waiver needs its reason", where="--waive", fix='add --reason "why the run goes on"'
        )
    assert reason is not None
    return [Waiver(check=c, reason=reason.strip()) for c in dict.fromkeys(checks)]


def require_passed(report: PreflightReport) -> None:
    """A FAIL nobody waived stops the run before any lane is touched."""
    if report.passed:
        return
    lines = "; ".join(
        f"{r.check} ({r.subject}): {r.finding}" + (f" — fix: {r.fix}" if r.fix else "")
        for r in report.failures
    )
    raise FaceoffError(
        f"preflight failed, nothing was touched: {lines}",
        fix='fix what each names, or waive a check deliberately with --waive CHECK --reason "..."',
    )


def real_host(
    workdir: Path, environ: Mapping[str, str], zone: tzinfo, *, db: str | None, ahead: bool = False
) -> PreflightHost:
    """The host as a run sees it: its ledger, Prefect home, Docker daemon, HTTP and NVML."""
    home = environ.get("PREFECT_HOME") or str((workdir / PREFECT_DIR).resolve())
    return PreflightHost(
        workdir=workdir,
        db_url=resolve_url(db, workdir),
        prefect_home=Path(home),
        tools=restore_tools(environ),
        nvml=PynvmlLibrary(),
        zone=zone,
        ahead=ahead,
    )


class _Docker:
    """The daemon, reached once, when a Docker arm needs it."""

    def __init__(self, factory: Callable[[], DockerClient], *, needed: bool) -> None:
        self._factory = factory
        self._needed = needed
        self._client: DockerClient | None = None
        self._error: FaceoffError | None = None

    def required(self) -> DockerClient:
        if self._client is None and self._error is None:
            try:
                self._client = self._factory()
            except FaceoffError as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        assert self._client is not None
        return self._client

    def maybe(self) -> DockerClient | None:
        try:
            return self.required() if self._needed else None
        except FaceoffError:
            return None
