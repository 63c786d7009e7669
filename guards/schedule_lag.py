"""The ``schedule_lag`` rule: did an open-loop client send on its schedule?

An open-loop cell declares its load as arrivals at a rate; a client that could not
keep up (its CPU, its event loop, or the bound on requests in flight full) offered
less load than declared, so its latencies answer another question. The rule takes
the p99 of send − due over the sent scored requests (``workload.lag``) and blocks
the cell when it exceeds the matrix's ``max_schedule_lag_ms``. Blocked, not failed:
the client fell behind, which says nothing against the lane by itself, and must not
trigger the stop policy. A closed-loop cell has no schedule to keep (not applicable).
"""

from __future__ import annotations

from faceoff.formats.attempt.verdict import RuleResult
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts
from guards.outcomes import judged, not_applicable, not_evaluated
from matrix.cell import Cell
from matrix.thresholds import Thresholds
from workload.lag import lag_of

CODE = Reason.SCHEDULE_LAG


def schedule_lag(art: CellArtifacts, cell: Cell, t: Thresholds) -> RuleResult:
    if not cell.open_loop:
        return not_applicable(CODE, "a closed-loop cell sends when its streams are free")
    lag = lag_of(art.scored)
    if lag.p99_ms is None:
        return not_evaluated(CODE, "no scored request was sent")
    return judged(
        CODE,
        lag.p99_ms <= t.max_schedule_lag_ms,
        f"schedule lag (send − due) p99 {lag.p99_ms:.1f} ms over {lag.n} sent scored requests "
        f"(p50 {lag.p50_ms:.1f} ms, max {lag.max_ms:.1f} ms; the matrix allows "
        f"{t.max_schedule_lag_ms:g} ms at p99)",
        sent=lag.n,
        lag_p50_ms=round(lag.p50_ms or 0.0, 3),
        lag_p99_ms=round(lag.p99_ms, 3),
        lag_max_ms=round(lag.max_ms or 0.0, 3),
        max_schedule_lag_ms=t.max_schedule_lag_ms,
    )
