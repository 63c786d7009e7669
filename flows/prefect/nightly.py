"""Dated campaigns: one campaign per night, named by the night's date where it is scheduled.

A deployment with ``dated: true`` names its campaign ``<name>-YYYYMMDD`` by the run's
scheduled start in the timezone of the deployment's schedule: read in UTC, nights around a
DST change would share a date or skip one. A dated run never reopens a closed campaign (a
schedule that fired twice would "resume" it and measure nothing); an open one, a night that
was killed, is resumed, restoration first. In full: docs/deploy.md, "One host: an overnight
campaign".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from faceoff.errors import FaceoffError
from ledger.campaigns import CLOSED, find_campaign
from ledger.db import open_ledger, resolve_url, session_scope

UTC_ZONE = "UTC"


def night_of(scheduled: datetime, timezone: str | None) -> date:
    """The date of ``scheduled`` (an aware time) in ``timezone`` (UTC when None)."""
    return scheduled.astimezone(ZoneInfo(timezone or UTC_ZONE)).date()


def schedule_timezone(timezones: Sequence[str | None]) -> str | None:
    """The one timezone of a deployment's schedules; None when it has none, or several that
    disagree (no single night then: the run dates in UTC)."""
    distinct = {tz or UTC_ZONE for tz in timezones}
    return distinct.pop() if len(distinct) == 1 else None


def deployment_timezone(deployment_id: str | None) -> str | None:
    """The timezone of the deployment's schedules (None: a run not started by one)."""
    from prefect.client.orchestration import get_client  # noqa: PLC0415  (needs the Prefect API)

    if deployment_id is None:
        return None
    with get_client(sync_client=True) as client:
        found = client.read_deployment(deployment_id)
    zones = [getattr(s.schedule, "timezone", None) for s in found.schedules if s.active]
    return schedule_timezone(zones)


def refuse_closed(workdir: Path, campaign: str) -> None:
    """A dated run stops here when its night's campaign is already closed."""
    engine = open_ledger(resolve_url(None, workdir))
    try:
        with session_scope(engine) as session:
            row = find_campaign(session, campaign)
            status = row.status if row is not None else None
            closed_at = row.closed_at if row is not None else None
    finally:
        engine.dispose()
    if status in CLOSED:
        when = f" at {closed_at:%Y-%m-%d %H:%M} UTC" if closed_at else ""
        raise FaceoffError(
            f"campaign {campaign!r} closed {status.replace('_', ' ')}{when}; a dated run opens "
            "one campaign per night and never reopens a closed one",
            where="dated: true",
            fix="if the schedule fired twice the same night, check its timezone; to rerun "
            f"cells, `faceoff review {campaign} --decision rerun_cells --cell …` then "
            "`faceoff run` with its matrix",
        )
