"""The history across nights (pure): per arm, cell, host and headline metric, each night's
p50 and p95 with their intervals, and where the incumbent's p50 drifted.

Its input is one ``LedgerNight`` per closed campaign with the history cache's entry for its
bundle (``faceoff.formats.history_cache``). A night enters the trends only when its bundle passed
its audit and its night could be read; every other night is listed with why. Series are
kept apart per host (hosts differ in hardware), and drift is sought on the incumbent's
series only (the candidates change by design): docs/history.md.

``faceoff history --json`` prints ``HistoryReport``. Format history of
``HistoryReport.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from pydantic import Field

from evidence.stats import drift
from faceoff.artifact import Artifact, Spec
from faceoff.formats.history_cache import CacheEntry
from faceoff.formats.night import BoundColumn, CountColumn, Night, P50Column, P95Column

AuditState = Literal["ok", "failed", "not audited"]
DRIFT_METHOD = (
    "Drift: binary segmentation of the incumbent's nightly p50 series (per cell, host and "
    f"metric) at its largest CUSUM split; a change point needs at least {drift.MIN_NIGHTS} "
    f"nights either side, a standardised difference of means above {drift.Z:g} (noise from "
    "the median night-to-night change), a shift of the medians before and after it wider "
    f"than the typical nightly interval, and at least {drift.MIN_NIGHTS} nights from it on "
    "past the midpoint of the two levels."
)


@dataclass(frozen=True)
class LedgerNight:
    """A closed campaign of the ledger, and its bundle's cache entry (None: not found here)."""

    campaign: str
    started: datetime
    bundle: str
    entry: CacheEntry | None


class NightRow(Spec):
    campaign: str = Field(description="Campaign name.")
    night: date = Field(description="UTC date it started observing (the ledger's, if unread).")
    host: str | None = Field(description="Host the bundle was written on; None if unread.")
    bundle: str = Field(description="The campaign's evidence folder.")
    audit: AuditState = Field(description="The bundle's audit outcome.")
    failed_checks: list[str] = Field(description="What the failed audit checks verify.")
    problem: str | None = Field(description="Why the night stays out of the trends, if it does.")
    in_trends: bool = Field(description="Audited ok and read: its figures enter the trends.")


class DriftFlag(Spec):
    campaign: str = Field(description="The first campaign after the change.")
    night: date = Field(description="The night the level changed.")
    before: float = Field(description="Median nightly p50 before the change.")
    after: float = Field(description="Median nightly p50 from the change on.")
    relative: float = Field(description="after / before − 1.")
    width: float = Field(description="The typical interval width the shift exceeded.")
    nights_after: int = Field(description="Nights in the segment from the change on.")


class Series(Spec):
    arm: str = Field(description="Arm name.")
    role: Literal["incumbent", "candidate"] = Field(description="The arm's role on its nights.")
    cell: str = Field(description="Cell id.")
    host: str = Field(description="Host name.")
    metric: str = Field(description="Headline request metric.")
    # One column per figure, a row per night in the trends, oldest first: a year of nights
    # on several hosts is tens of thousands of points, too many to make an object of each.
    campaigns: list[str] = Field(description="Campaign of each night.")
    nights: list[date] = Field(description="UTC date of each night.")
    n: CountColumn
    p50: P50Column
    p95: P95Column
    p50_low: BoundColumn
    p50_high: BoundColumn
    p95_low: BoundColumn
    p95_high: BoundColumn
    drift: list[DriftFlag] = Field(description="Change points of the p50 (incumbent only).")


class HistoryReport(Artifact):
    schema_version: Literal[1] = Field(default=1, description="History format version.")
    arm: str | None = Field(description="Only this arm, when asked.")
    cell: str | None = Field(description="Only this cell, when asked.")
    since: date | None = Field(description="Only campaigns started on or after this date.")
    nights: list[NightRow] = Field(description="Every closed campaign, oldest first.")
    series: list[Series] = Field(description="Per arm, cell, host and metric.")
    drift_method: str = Field(default=DRIFT_METHOD, description="How drift is found.")


SeriesKey = tuple[str, str, str, str]  # arm, cell, metric, host
Rows = list[tuple[Night, int]]  # a series' nights, each with its row in the night's columns


def build_history(
    sources: Sequence[LedgerNight], *, arm: str | None, cell: str | None, since: date | None
) -> HistoryReport:
    ordered = sorted(sources, key=lambda s: (s.started, s.campaign))
    rows = [night_row(source) for source in ordered]
    grouped: dict[SeriesKey, Rows] = defaultdict(list)
    for source, row in zip(ordered, rows, strict=True):
        night = source.entry.night if row.in_trends and source.entry else None
        if night is None:
            continue
        for i, key in enumerate(zip(night.arm, night.cell, night.metric, strict=True)):
            if (arm is None or key[0] == arm) and (cell is None or key[1] == cell):
                grouped[(*key, night.host)].append((night, i))
    series = [_series(key, found) for key, found in sorted(grouped.items())]
    return HistoryReport(arm=arm, cell=cell, since=since, nights=rows, series=series)


def night_row(source: LedgerNight) -> NightRow:
    entry = source.entry
    night = entry.night if entry else None
    audit = entry.audit if entry else None
    state: AuditState = "not audited" if audit is None else "ok" if audit.ok else "failed"
    problem = _problem(entry, state)
    return NightRow(
        campaign=source.campaign,
        night=night.night if night else source.started.date(),
        host=entry.host if entry else None,
        bundle=source.bundle,
        audit=state,
        failed_checks=audit.failed if audit else [],
        problem=problem,
        in_trends=problem is None,
    )


def _problem(entry: CacheEntry | None, audit: AuditState) -> str | None:
    if entry is None:
        return "the bundle folder is not on this host"
    if audit == "failed":
        assert entry.audit is not None
        return f"its audit failed: {entry.audit.first}"
    if audit == "not audited":
        return "not audited"
    if entry.night is None:
        return entry.problem or "its comparison.json could not be read"
    return None


def _series(key: SeriesKey, rows: Rows) -> Series:
    arm, cell, metric, host = key
    campaigns, nights = [n.campaign for n, _ in rows], [n.night for n, _ in rows]
    p50 = [n.p50[i] for n, i in rows]
    p50_low, p50_high = [n.p50_low[i] for n, i in rows], [n.p50_high[i] for n, i in rows]
    incumbent = all(n.role[i] == "incumbent" for n, i in rows)
    return Series(
        arm=arm,
        role="incumbent" if incumbent else "candidate",
        cell=cell,
        host=host,
        metric=metric,
        campaigns=campaigns,
        nights=nights,
        n=[n.n[i] for n, i in rows],
        p50=p50,
        p95=[n.p95[i] for n, i in rows],
        p50_low=p50_low,
        p50_high=p50_high,
        p95_low=[n.p95_low[i] for n, i in rows],
        p95_high=[n.p95_high[i] for n, i in rows],
        drift=drift_flags(campaigns, nights, p50, _widths(p50_low, p50_high)) if incumbent else [],
    )


def _widths(low: Sequence[float | None], high: Sequence[float | None]) -> list[float | None]:
    return [None if a is None or b is None else b - a for a, b in zip(low, high, strict=True)]


def drift_flags(
    campaigns: Sequence[str],
    nights: Sequence[date],
    p50: Sequence[float],
    widths: Sequence[float | None],
) -> list[DriftFlag]:
    """The change points of a nightly p50 series, named by their night and campaign."""
    found = drift.shifts(p50, widths)
    ends = [s.index for s in found[1:]] + [len(p50)] if found else []
    return [
        DriftFlag(
            campaign=campaigns[s.index],
            night=nights[s.index],
            before=s.before,
            after=s.after,
            relative=s.relative,
            width=s.width,
            nights_after=end - s.index,
        )
        for s, end in zip(found, ends, strict=True)
    ]
