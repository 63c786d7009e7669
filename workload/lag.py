"""Schedule lag of an open-loop run: how late each scored request went out against its schedule.

Lag = send − due of a sent scored request, in ms: the client's event loop running late,
the host starving it, or the bound on requests in flight being full. Percentiles are
type 7 (``statistics.quantiles(method="inclusive")``), as every other percentile in the
bundle. Pure; the summary reports it and the ``schedule_lag`` guard judges it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.summary import Lag

NS_PER_MS = 1_000_000


def lags_ms(scored: Sequence[RequestOutcome]) -> list[float]:
    """send − due of each sent request, ascending, in ms."""
    return sorted(
        (o.send_ns - o.due_ns) / NS_PER_MS
        for o in scored
        if o.send_ns is not None and o.due_ns is not None
    )


def _percentile(ordered: list[float], percent: int) -> float:
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[percent - 1]


def lag_of(scored: Sequence[RequestOutcome]) -> Lag:
    lags = lags_ms(scored)
    if not lags:
        return Lag(n=0, p50_ms=None, p99_ms=None, max_ms=None)
    return Lag(
        n=len(lags), p50_ms=_percentile(lags, 50), p99_ms=_percentile(lags, 99), max_ms=lags[-1]
    )
