"""The variance each planned cell's ratio is expected to have, learned from the ledger's
earlier nights of the same workload on the same incumbent.

A night (``faceoff.formats.night``) holds each accepted cell run's p50 and p95 per metric
with its interval; the incumbent's interval is its share of the night's ratio interval, so
it gives back that night's variance of the log ratio per request
(``evidence.stats.known_variance.per_request_of_arm``). A cell of the plan is matched to a
night's cells by ``matrix.measure_key``: the same workload (kind, input, concurrency,
sampling, load shape, SLO) on the same incumbent recipe, whatever the candidate, the prompts'
namespace or the number of requests. A/A nights (``faceoff run --aa``: the incumbent on every
arm) are preferred where there are any, being the instrument's own noise; then other nights;
else the conservative default. A p99, which no night records, is the p50's scaled
(``known_variance.quantile_factor``), and so is a p95 a night did not compute a tail ratio for.
An A/A night's two arms give one window's log ratio of medians as well (``night_window``):
where Cochran's Q shows the nights' windows differing beyond their intervals
(``heterogeneity.detected``), their DerSimonian–Laird τ² goes with the variance
(``KnownVariance.between``), for the plan to average out over passes.

``read_earlier`` is the I/O edge: each bundle's night and frozen matrix; a bundle that cannot
be read is passed over (the history lists why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from evidence.folder.layout import FROZEN_FILE
from evidence.history.night_read import read_night
from evidence.stats.heterogeneity import Estimate, between_variance, detected
from evidence.stats.known_variance import (
    KnownVariance,
    VarianceSource,
    default_variance,
    learned,
    per_request_of_arm,
)
from evidence.stats.power import blocks_of
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from faceoff.formats.night import Night, NightMetric
from matrix.measure_key import measure_key

VarianceKey = tuple[str, str, str]  # (cell id, metric, statistic)


@dataclass(frozen=True)
class EarlierNight:
    """A closed campaign's night with the frozen matrix it ran."""

    frozen: FrozenMatrix
    night: Night

    @property
    def aa(self) -> bool:
        return self.frozen.matrix.campaign.aa


def read_earlier(bundles: Iterable[tuple[Path, date]]) -> list[EarlierNight]:
    """The nights of these bundle folders (each with the date its campaign opened, for one
    that never observed anything) that can be read (I/O edge)."""
    found = []
    for bundle, opened in bundles:
        try:
            frozen = read_frozen(Path(bundle) / FROZEN_FILE)
            night = read_night(Path(bundle), fallback=opened)
        except (FaceoffError, OSError, ValueError):
            continue
        found.append(EarlierNight(frozen, night))
    return found


def known_variances(
    frozen: FrozenMatrix, wanted: Sequence[VarianceKey], earlier: Sequence[EarlierNight]
) -> dict[VarianceKey, KnownVariance]:
    """Each wanted (cell, metric, statistic): learned from A/A nights, else earlier nights,
    else the default."""
    keys = {cell_id: measure_key(frozen, cell_id) for cell_id, _, _ in wanted}
    matched = [(e, _same_cells(e.frozen, set(keys.values()))) for e in earlier]
    return {w: _variance(frozen, w, keys[w[0]], matched) for w in wanted}


def _variance(
    frozen: FrozenMatrix,
    wanted: VarianceKey,
    key: str,
    matched: Sequence[tuple[EarlierNight, dict[str, str]]],
) -> KnownVariance:
    cell_id, metric, statistic = wanted
    concurrency = next(c.concurrency for c in frozen.matrix.cells if c.id == cell_id)
    readings = ("p95", "p50") if statistic == "p95" else ("p50",)  # what a night holds
    sources: tuple[VarianceSource, ...] = ("aa", "history")
    for source in sources:
        nights = [(e, ids) for e, ids in matched if (source == "aa") == e.aa]
        for read_as in readings:
            seen = _observed(nights, key, metric, read_as, concurrency)
            if seen:
                values, campaigns, dfs, sizes, windows = zip(*seen, strict=True)
                scaled = read_as if read_as != statistic else None
                between = _between([w for w in windows if w]) if source == "aa" else None
                return learned(metric, statistic, observed=values, source=source,
                               campaigns=sorted(set(campaigns)), scaled_from=scaled,
                               df=sum(dfs), requests=sum(sizes),
                               between=between)  # fmt: skip
    return default_variance(metric, statistic)


def _observed(
    nights: Sequence[tuple[EarlierNight, dict[str, str]]],
    key: str,
    metric: str,
    statistic: str,
    concurrency: int,
) -> list[tuple[float, str, int, int, Estimate | None]]:
    """(s², campaign, its degrees of freedom: blocks − 1, its requests, its window's log
    ratio and standard error where the night has one) of every incumbent row of the key's
    cells in these nights."""
    found = []
    for earlier, ids in nights:
        night = earlier.night
        for row in night.metrics:
            if ids.get(row.cell) != key or row.role != "incumbent" or row.metric != metric:
                continue
            interval = row.p50_interval if statistic == "p50" else row.p95_interval
            if interval is None or interval.low <= 0 or interval.high <= interval.low:
                continue
            blocks = blocks_of(row.n, concurrency)
            s2 = per_request_of_arm(interval.low, interval.high, row.n, blocks)
            window = night_window(night.metrics, row, blocks) if statistic == "p50" else None
            found.append((s2, night.campaign, max(1, blocks - 1), row.n, window))
    return found


def night_window(
    rows: Sequence[NightMetric], incumbent: NightMetric, blocks: int
) -> Estimate | None:
    """The night's log ratio of medians for the incumbent row's cell and metric (the other
    arm's over the incumbent's), with its standard error: the incumbent's interval is its
    share of the night's ratio interval (``per_request_of_arm`` of one request: half-width
    ×√2 over t(b − 1)). None without another arm's row or a usable interval."""
    interval = incumbent.p50_interval
    other = next((r for r in rows if r.cell == incumbent.cell and r.metric == incumbent.metric
                  and r.role != "incumbent" and r.p50 > 0), None)  # fmt: skip
    if other is None or interval is None or incumbent.p50 <= 0 or interval.low <= 0:
        return None
    se = math.sqrt(per_request_of_arm(interval.low, interval.high, 1, blocks))
    return math.log(other.p50 / incumbent.p50), se


def _between(windows: Sequence[Estimate]) -> float | None:
    """τ² of the nights' windows where Q detects it, 0 where it does not; None below two."""
    if len(windows) < 2:
        return None
    return between_variance(windows) if detected(windows) else 0.0


def _same_cells(frozen: FrozenMatrix, keys: set[str]) -> dict[str, str]:
    """Cell id -> measure key, for the earlier matrix's cells whose key is wanted."""
    found = {}
    for cell in frozen.matrix.cells:
        key = measure_key(frozen, cell.id)
        if key in keys:
            found[cell.id] = key
    return found
