"""One arm's cell window cut into time blocks for a window figure a rule judges (output
throughput, goodput, attainment): each scored request's send, end and what it adds to the
figure. Pure: journal outcomes in, blocks out; ``evidence.stats.window`` compares two arms'.

Energy figures have no per-block joules, so they stay point ratios: a rule decides them
only by a replicated or sequential cell's interval between windows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evidence.stats.window import WindowBlocks, WindowRequest, window_blocks
from faceoff.formats.attempt.journal import Phase, RequestOutcome
from matrix.cell import Cell
from matrix.rule import GOODPUT_METRICS, Rule
from matrix.slo import Slo
from workload.ladder import meets

WINDOW_METRICS = ("output_tps", *GOODPUT_METRICS)
Amount = Callable[[RequestOutcome], float]


def window_metrics(rule: Rule | None) -> list[str]:
    """The window figures some criterion of ``rule`` judges."""
    return sorted({c.metric for c in rule.criteria if c.metric in WINDOW_METRICS} if rule else ())


def arm_window(cell: Cell, outcomes: Sequence[RequestOutcome], metric: str) -> WindowBlocks | None:
    """The arm's blocks for ``metric`` over its scored requests; None where the figure is not
    defined (goodput without the cell's SLO) or the window is empty."""
    amount = _amount(metric, cell.slo)
    if amount is None:
        return None
    sent = [
        WindowRequest(o.send_ns, o.end_ns, amount(o))
        for o in outcomes
        if o.phase is Phase.SCORED and o.send_ns is not None
    ]
    return window_blocks(sent, cell.concurrency, per_request=metric == "slo_attainment")


def _amount(metric: str, slo: Slo | None) -> Amount | None:
    """What one request adds to the figure's numerator; None without the SLO goodput needs."""
    if metric == "output_tps":
        return _tokens
    if slo is None:
        return None
    if metric == "goodput_tps":
        return lambda o: _tokens(o) if meets(slo, o) else 0.0
    return lambda o: 1.0 if meets(slo, o) else 0.0


def _tokens(outcome: RequestOutcome) -> float:
    return float(outcome.usage.completion_tokens) if outcome.usage is not None else 0.0
