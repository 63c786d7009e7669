"""Power: can the planned requests decide the rule in every counted cell? The rule's power
table (``evidence.comparison.power_table``) with each cell's variance learned from the
ledger's earlier nights of the same workload and incumbent (``evidence.history.variance``),
else the conservative default; a criterion a cell cannot decide as planned is a WARN naming
the cell, the metric and the requests it needs. ``faceoff validate --power`` prints the same
table (``flows.cli.power``).
The same concept at another layer: ``evidence.stats.power``, ``flows.cli.power``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path

from evidence.comparison.power_table import PowerRow, PowerTable, power_table, wanted_variances
from evidence.history.variance import EarlierNight, known_variances, read_earlier
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import ok, warn


def planned_table(frozen: FrozenMatrix, earlier: Sequence[EarlierNight]) -> PowerTable:
    """Pure: the rule's power table, each cell's variance learned from ``earlier`` nights."""
    wanted = wanted_variances(frozen.matrix)
    return power_table(frozen.matrix, known_variances(frozen, wanted, earlier))


def power_checks(frozen: FrozenMatrix, bundles: Iterable[tuple[Path, date]]) -> list[CheckResult]:
    """The check on the ledger's closed campaigns (their bundle folders and opening dates);
    the bundles are read only when the matrix declares a rule with an interval to plan."""
    if not wanted_variances(frozen.matrix):
        return []
    return judge_power(planned_table(frozen, read_earlier(bundles)))


def judge_power(table: PowerTable) -> list[CheckResult]:
    """Pure: a WARN per criterion and cell the plan cannot decide (or whose tail statistic
    its requests cannot claim), else one ok line for the whole rule."""
    found = [_warning(row) for row in table.rows if row.warning]
    if found or not table.rows:
        return found
    cells = len({row.cell for row in table.rows})
    sources = sorted({row.variance.source for row in table.rows if row.variance})
    said = f"every criterion is decidable as planned in its {cells} counted cell(s) "
    return [ok("power", "the rule", said + f"(variances: {', '.join(sources) or 'none'})")]


def _warning(row: PowerRow) -> CheckResult:
    assert row.warning is not None
    fix = _fix(row)
    if row.variance is not None and row.variance.source == "default":
        fix += "; an A/A night (faceoff run --aa) learns the variance instead of the default"
    said = row.warning.removeprefix(f"{row.cell} ")  # the subject names the cell
    return warn("power", f"cell {row.cell}", said, fix)


def _fix(row: PowerRow) -> str:
    """What makes the criterion decidable: never more requests for a p99 (no count of them
    makes one decide), never replicates for a cell that has them already."""
    if row.statistic == "p99":
        return "judge p95 or p50: a p99 criterion is shown on the card, never decided"
    if row.decidable:  # decided, but a tail it cannot claim from so few requests
        return f"give the cell requests = {row.tail_floor} or more, or judge a lower percentile"
    if row.needed is None:  # a figure that can only describe: nothing to plan requests by
        return (
            'replicate the cell (replicates = K, or "auto" with max_passes), or judge another '
            "figure"
        )
    if row.sequential:
        more = "more max_passes"
    elif row.passes > 1:
        more = "more replicates"
    else:
        more = 'replicates = "auto" with max_passes'
    per = " per pass" if row.passes > 1 else ""
    return f"give the cell requests = {row.needed:,}{per} (or {more}), or declare a wider bound"
