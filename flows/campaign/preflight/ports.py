"""Ports and the serving incumbent: every arm's address free, or held by a lane the
take-over stops; what serves on the incumbent's address is the incumbent arm the receipt
will restore. Real sockets and HTTP; the judging is pure.
The same concept at another layer: ``faceoff.ports``.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

import psutil

from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import arm_subject, fail, ok, warn
from flows.campaign.preflight.held import HeldLane
from lanes.http import Http, HttpReply
from matrix.arm import Arm
from matrix.model import Matrix

CONNECT_TIMEOUT_S = 2.0  # a listener accepts at once, even on a loaded host
ANSWER_TIMEOUT_S = 10.0


def port_checks(matrix: Matrix, held: Sequence[HeldLane]) -> list[CheckResult]:
    return [judge_port(arm, listening(arm), _holder(arm, held)) for arm in matrix.arms]


def listening(arm: Arm) -> str | None:
    """Who listens on the arm's address (``pid N (command)`` when this user can see it), or
    None when nothing accepts a connection there."""
    try:
        with socket.create_connection((arm.host, arm.port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError:
        return None
    return _listener(arm.port)


def judge_port(arm: Arm, listener: str | None, holder: HeldLane | None) -> CheckResult:
    """Pure: free, held by a lane the take-over stops, or held by something foreign."""
    subject, where = arm_subject(arm.name), f"{arm.host}:{arm.port}"
    if listener is None:
        return ok("ports", subject, f"{where} is free")
    if holder is not None:
        return ok("ports", subject, f"{where} is held by lane {holder.name}: {holder.why}")
    return fail(
        "ports",
        subject,
        f"{where} is held by {listener}, which is no lane faceoff started under this workdir; "
        "the take-over will not stop it and the arm's lane could not listen there",
        "stop that process (an operator's incumbent: faceoff restores it from the frozen "
        "recipe, with a receipt), or give the arm a free port",
    )


def incumbent_check(matrix: Matrix, held: Sequence[HeldLane], http: Http) -> CheckResult:
    """What answers on the incumbent's address, against the incumbent arm."""
    arm = matrix.incumbent
    health = http.get(f"{arm.base_url}/health", timeout=ANSWER_TIMEOUT_S)
    models = http.get(f"{arm.base_url}/v1/models", timeout=ANSWER_TIMEOUT_S)
    return judge_incumbent(arm, health, models, _holder(arm, held))


def judge_incumbent(
    arm: Arm, health: HttpReply, models: HttpReply, holder: HeldLane | None
) -> CheckResult:
    """Pure: does the serving incumbent answer, and is it the arm the receipt restores?"""
    subject = arm_subject(arm.name)
    if health.status is None and models.status is None:
        return warn(
            "incumbent",
            subject,
            f"nothing answers on {arm.base_url} ({health.describe()}): the incumbent is not "
            "serving, so the take-over stops nothing and the receipt starts it from the "
            "frozen recipe",
            "if production should be serving now, find out why it is not before the night",
        )
    served = _served(models)
    if arm.served_model not in served:
        return fail(
            "incumbent",
            subject,
            f"{arm.base_url} serves {served or models.describe()}, not the incumbent's "
            f"served_model {arm.served_model!r}; the receipt would restore the matrix's "
            "incumbent in its place",
            "make the incumbent arm the recipe that serves now (its served_model, image and "
            "flags), or check that the address is the incumbent's",
        )
    drift = _recipe_drift(arm, holder)
    if drift:
        return fail(
            "incumbent",
            subject,
            f"lane {holder.name if holder else '?'} serves {arm.served_model!r} with "
            f"{drift}; the receipt would restore the matrix's recipe in its place",
            "make the incumbent arm the recipe that serves now, or promote deliberately",
        )
    if not health.ok:
        return warn(
            "incumbent",
            subject,
            f"it lists {arm.served_model!r} but /health says {health.describe()}",
            "look at the serving engine's log; the receipt will prove a fresh start",
        )
    return ok("incumbent", subject, f"{arm.base_url} answers as {arm.served_model!r}")


def _served(models: HttpReply) -> list[str]:
    try:
        return [str(m.get("id")) for m in models.json().get("data", [])] if models.ok else []
    except (ValueError, AttributeError):
        return []


def _recipe_drift(arm: Arm, holder: HeldLane | None) -> str | None:
    """How a faceoff lane serving the incumbent's address differs from the incumbent arm."""
    if holder is None:
        return None
    record = holder.record
    if arm.image is not None and record.image is not None and record.image != arm.image:
        return f"image {record.image}, not the arm's {arm.image}"
    if record.engine_args != arm.engine_args:
        return f"engine_args {record.engine_args}, not the arm's {arm.engine_args}"
    return None


def _holder(arm: Arm, held: Sequence[HeldLane]) -> HeldLane | None:
    return next((h for h in held if _address(h.record.base_url) == (arm.host, arm.port)), None)


def _address(base_url: str) -> tuple[str | None, int | None]:
    parts = urlsplit(base_url)
    return parts.hostname, parts.port


def _port(address: object) -> int | None:
    return getattr(address, "port", None)  # an empty tuple for a socket bound nowhere


def _listener(port: int) -> str:
    try:
        sockets = psutil.net_connections(kind="tcp")
    except psutil.Error:
        sockets = []
    pids = {s.pid for s in sockets if s.status == psutil.CONN_LISTEN and _port(s.laddr) == port}
    for pid in sorted(p for p in pids if p is not None):
        try:
            return f"pid {pid} ({' '.join(psutil.Process(pid).cmdline())})"
        except psutil.Error:
            return f"pid {pid}"
    return "a process this user cannot see"
