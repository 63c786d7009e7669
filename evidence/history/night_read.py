"""Reading a night from a bundle: ``comparison.json`` and ``MANIFEST.json`` (the I/O edge
and its pure part, ``night_of``). Apart from the ``Night`` model so that a history
answered from its cache never loads the comparison's models.

A night is read through ``NightSource``, the few fields every format of
``comparison.json`` holds, so a format change drops no night from the trends. An arm's
interval is derived from its pair's ratio interval: docs/history.md, "Where the figures
come from".
"""

from __future__ import annotations

import math
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

from evidence.comparison.cells import RATIO_METRICS
from faceoff.bounded import read_json
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import COMPARISON_FILE
from faceoff.formats.bundle.manifest import MANIFEST_FILE, Manifest
from faceoff.formats.night import Interval, Night, NightMetric, Role

if TYPE_CHECKING:
    from faceoff.formats.bundle.comparison import Comparison


class _Part(BaseModel):
    """Only the fields a night reads; whatever else a format holds is passed over."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class SourceStats(_Part):
    n: int
    p50: float | None
    p95: float | None


class SourceArmCell(_Part):
    arm: str
    disposition: str
    metrics: dict[str, SourceStats]


class SourceRatio(_Part):
    metric: str
    candidate: str
    ratio: float
    low: float
    high: float


class SourceCell(_Part):
    id: str
    arms: list[SourceArmCell]
    ratios: list[SourceRatio]
    tail_ratios: list[SourceRatio] = []


class SourceArm(_Part):
    name: str
    role: Role


class SourceCoverage(_Part):
    status: str


class NightSource(_Part):
    """What a night needs of a ``comparison.json`` of any format."""

    schema_version: int
    campaign: str
    observed_from: datetime | None
    coverage: SourceCoverage
    arms: list[SourceArm]
    cells: list[SourceCell]

    @classmethod
    def of(cls, comparison: Comparison) -> NightSource:
        return cls.model_validate(comparison.model_dump(mode="json"))


ARM_SHARE = 1 / math.sqrt(2)  # one arm's part of the ratio's log-scale spread


def read_night(bundle: Path, fallback: date) -> Night:
    """The night of a bundle folder (I/O edge); ``fallback`` dates a campaign that never
    observed anything."""
    host = read_host(bundle)
    return night_of(read_source(Path(bundle) / COMPARISON_FILE), host=host, fallback=fallback)


def read_source(path: Path) -> NightSource:
    """The night's fields of a ``comparison.json`` of any format."""
    try:
        return NightSource.model_validate(read_json(path))
    except (OSError, ValueError, ValidationError, FaceoffError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        why = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(exc)
        raise FaceoffError(f"{path}: not a readable comparison ({why})") from exc


def read_host(bundle: Path) -> str:
    """The host a bundle was written on: the ledger does not record it."""
    return Manifest.read(Path(bundle) / MANIFEST_FILE).host.hostname


def night_of(comparison: NightSource, *, host: str, fallback: date) -> Night:
    roles = {arm.name: arm.role for arm in comparison.arms}
    started = comparison.observed_from
    return Night.of(
        campaign=comparison.campaign,
        host=host,
        night=started.date() if started else fallback,
        coverage=comparison.coverage.status,
        metrics=[m for cell in comparison.cells for m in _cell_metrics(cell, roles)],
    )


def _cell_metrics(cell: SourceCell, roles: dict[str, Role]) -> list[NightMetric]:
    found = []
    for entry in cell.arms:
        if entry.disposition == "accepted":
            found += [_metric(cell, entry, roles[entry.arm], metric) for metric in RATIO_METRICS]
    return [m for m in found if m is not None]


def _metric(cell: SourceCell, entry: SourceArmCell, role: Role, metric: str) -> NightMetric | None:
    stats = entry.metrics.get(metric)
    if stats is None or stats.p50 is None or stats.p95 is None:
        return None
    return NightMetric(
        cell=cell.id,
        arm=entry.arm,
        role=role,
        metric=metric,
        n=stats.n,
        p50=stats.p50,
        p95=stats.p95,
        p50_interval=_interval(stats.p50, _ratio(cell.ratios, metric, entry.arm, role)),
        p95_interval=_interval(stats.p95, _ratio(cell.tail_ratios, metric, entry.arm, role)),
    )


def _ratio(ratios: list[SourceRatio], metric: str, arm: str, role: Role) -> SourceRatio | None:
    """A candidate's own pair's ratio; for the incumbent, its first candidate's."""
    mine = [r for r in ratios if r.metric == metric and (role == "incumbent" or r.candidate == arm)]
    return mine[0] if mine else None


def _interval(value: float, ratio: SourceRatio | None) -> Interval | None:
    if ratio is None or ratio.ratio <= 0 or ratio.low <= 0:
        return None
    low, high = (ratio.low / ratio.ratio) ** ARM_SHARE, (ratio.high / ratio.ratio) ** ARM_SHARE
    return Interval(low=value * low, high=value * high)
