"""Drift tickets from the history (pure): one ``tickets.drift.DriftTicket`` per change
point flagged in an incumbent's nightly series."""

from __future__ import annotations

import re

from evidence.history.across_nights import HistoryReport, Series
from faceoff.formats.ticket import DriftTicket
from faceoff.ports import Clock

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")  # a ticket id is a file name


def drift_tickets(
    report: HistoryReport, *, bundles: dict[str, str], now: Clock
) -> list[DriftTicket]:
    """One ticket per flagged change point; ``bundles`` maps campaign -> evidence folder."""
    return [
        _ticket(series, i, bundles=bundles, now=now)
        for series in report.series
        for i in range(len(series.drift))
    ]


def _ticket(series: Series, i: int, *, bundles: dict[str, str], now: Clock) -> DriftTicket:
    flag = series.drift[i]
    night_ids = series.campaigns
    at = night_ids.index(flag.campaign)
    around = [night_ids[at - 1], flag.campaign] if at > 0 else [flag.campaign]
    parts = ("drift", series.host, series.arm, series.cell, series.metric, f"{flag.night:%Y%m%d}")
    return DriftTicket(
        id=UNSAFE.sub("_", "-".join(parts)),
        status="open",
        host=series.host,
        arm=series.arm,
        cell=series.cell,
        metric=series.metric,
        night=flag.night,
        campaign=flag.campaign,
        before=flag.before,
        after=flag.after,
        relative=flag.relative,
        evidence=[bundles.get(c, c) for c in around],
        suggested_next_step=(
            f"Compare the bundles of {around[0]} and {flag.campaign} (MANIFEST.json's host "
            "facts and posture, the engine's image and flags, the cells' telemetry) for what "
            f"changed on {series.host} on {flag.night:%Y-%m-%d}; run an A/A campaign there to "
            "tell the host from the engine."
        ),
        created_at=now(),
    )
