"""What the planned requests can decide, per rule criterion and counted cell, before the night.
Pure: the matrix and each cell's known variance in, the table out.

For every criterion of the rule and every cell it judges (a replicated or sequential cell
once, as written), with the cell's known variance s² of the log ratio per request
(``evidence.stats.known_variance``; ``evidence.history.variance`` learns it from earlier
nights):

- ``half_width``: one pass's interval at the planned requests, as ± a fraction of the ratio;
- ``detectable``: the smallest true difference from the bound the plan decides with 80 %
  power at the rule's confidence (``evidence.stats.power``): the whole design of a
  sequential cell (its spending over ``max_passes`` looks), the between-replicate interval
  of a replicated one, else the cell's own interval;
- ``needed``: the requests per arm (per pass, for a sequential or replicated cell) that
  decide the declared margin or target when the candidate is truly as good as the
  incumbent (the distance from a ratio of 1 to the bound);
- a tail statistic's floor (``power.tail_floor``): a p99 is claimed only from enough
  requests, and the table names how many.

A row that cannot be decided as planned carries a ``warning`` naming the cell and the
numbers. A cell planned with fewer requests than its interval is calibrated at
(``bootstrap.calibrated``) gives descriptive figures only, and an energy figure of a single
window is a point ratio: their rows warn so, as the card will say. Window figures (goodput,
output throughput) have no learned variance to plan with; their rows say so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from evidence.comparison.figures import CELL_FIGURE_LABELS, P99, bound_of
from evidence.stats import power, student_t
from evidence.stats.bootstrap import calibrated, calibrated_requests
from evidence.stats.heterogeneity import chi2_quantile
from evidence.stats.known_variance import KnownVariance, default_variance
from evidence.stats.spending import obf_design
from faceoff.artifact import Spec
from faceoff.formats.bundle.comparison import RATIO_LABELS
from matrix.cell import Cell
from matrix.model import Matrix
from matrix.rule import Criterion, Rule

CONFIDENCE = 0.95
TAIL_FRACTION = {"p95": 0.95, "p99": 0.99}
# A variance learned from a few nights is itself uncertain, and a plan made at an
# underestimate falls short of its power: a learned s² is planned at its one-sided upper
# confidence limit, s²·df/χ²(1 − UCL_LEVEL; df), df the nights' blocks less one summed (one
# 64-request night at C1, df 15: ×1.45; three, df 45: ×1.22); without its df, 1.2×. The
# default is conservative already.
UCL_LEVEL = 0.80
LEARNED_MARGIN = 1.2
METHOD = (
    "per criterion and counted cell: the cell's known variance of the log ratio per request "
    "(earlier A/A nights of the same workload and incumbent, else earlier nights, planned at "
    f"the {UCL_LEVEL:.0%} upper confidence limit of s² with the nights' degrees of freedom, "
    "else a conservative default); the interval half-width of "
    "one pass, t(b − 1)·s/√n; the smallest "
    "difference decided with 80 % power at 95 % confidence (a sequential cell's whole "
    "design by its exit probabilities; a replicated cell's between-replicate interval); the "
    "requests per arm that decide the bound when the candidate is as good as the incumbent; "
    "a tail percentile needs the order-statistic floor to be claimed"
)
VarianceKey = tuple[str, str, str]


class PowerRow(Spec):
    cell: str = Field(description="The cell as written (a replicated cell once).")
    metric: str = Field(description="Metric the criterion judges.")
    statistic: str = Field(description="p50, p95 or p99.")
    test: str = Field(description="non_inferiority or superiority.")
    bound: float = Field(description="The ratio bound (1 ± margin or target).")
    requests: int = Field(description="Planned requests per arm (per pass).")
    passes: int = Field(description="Passes: 1, K replicates, or a sequential cell's max_passes.")
    sequential: bool = Field(description="The passes are a sequential design's looks.")
    variance: KnownVariance | None = Field(description="The variance planned with; None: goodput.")
    half_width: float | None = Field(description="One pass's interval, ± this fraction.")
    detectable: float | None = Field(description="Smallest difference decided, 80 % power.")
    needed: int | None = Field(description="Requests per arm (per pass) to decide the bound.")
    tail_floor: int | None = Field(description="Requests per arm a tail statistic needs.")
    decidable: bool = Field(description="The plan decides the bound with 80 % power.")
    warning: str | None = Field(description="Why not, with the numbers.")


class PowerTable(Spec):
    confidence: float = Field(description="The rule's confidence (every ratio interval's).")
    power: float = Field(description="The power a plan must reach.")
    rows: list[PowerRow] = Field(description="Per criterion and counted cell.")
    method: str = Field(description="How each figure is computed.")

    @property
    def warnings(self) -> list[str]:
        return [r.warning for r in self.rows if r.warning]


def wanted_variances(matrix: Matrix) -> list[VarianceKey]:
    """The (cell id, metric, statistic) a power table of ``matrix`` asks variances for."""
    if matrix.rule is None:
        return []
    return [
        (cells[0].id, k.metric, k.statistic)
        for k in matrix.rule.criteria
        if not k.on_cell_figure
        for cells in _units(matrix, matrix.rule, k)
    ]


def power_table(
    matrix: Matrix, variances: Mapping[VarianceKey, KnownVariance] | None = None
) -> PowerTable:
    """The table for ``matrix``'s rule (empty without one); a missing variance is the default."""
    rows = []
    rule = matrix.rule
    for criterion in rule.criteria if rule else []:
        for cells in _units(matrix, rule, criterion):  # type: ignore[arg-type]
            key = (cells[0].id, criterion.metric, criterion.statistic)
            known = (variances or {}).get(key) or default_variance(*key[1:])
            rows.append(_row(criterion, cells, None if criterion.on_cell_figure else known))
    return PowerTable(confidence=CONFIDENCE, power=power.POWER, rows=rows, method=METHOD)


def _units(matrix: Matrix, rule: Rule, criterion: Criterion) -> list[tuple[Cell, ...]]:
    """The cells the criterion judges, a replicated cell's replicates together."""
    groups: dict[str, list[Cell]] = {}
    for cell in matrix.cells:
        if rule.counts({cell.id, cell.prompt_id}, cell.kind.value, criterion):
            groups.setdefault(cell.prompt_id, []).append(cell)
    return [tuple(cells) for cells in groups.values()]


def _row(criterion: Criterion, cells: tuple[Cell, ...], known: KnownVariance | None) -> PowerRow:
    first = cells[0]
    bound = bound_of(criterion)
    base: dict[str, Any] = {
        "cell": first.prompt_id,
        "metric": criterion.metric,
        "statistic": criterion.statistic,
        "test": "non_inferiority" if criterion.non_inferiority is not None else "superiority",
        "bound": bound,
        "requests": first.scored_requests,
        "passes": len(cells),
        "sequential": first.sequential,
        "variance": known,
    }
    descriptive = _descriptive(criterion, cells)
    if known is None:
        said = f"{first.prompt_id} {_label(criterion)}: {descriptive}" if descriptive else None
        n, c = first.scored_requests, first.concurrency
        needed = calibrated_requests(c) if not calibrated(n, c) else None
        return PowerRow(**base, half_width=None, detectable=None, needed=needed,
                        tail_floor=None, decidable=descriptive is None,
                        warning=said)  # fmt: skip
    variance = planned_variance(known)
    plan = _plan(cells, variance, abs(math.log(bound)))
    floor = _floor(criterion.statistic)
    short = floor is not None and first.scored_requests < floor
    decidable = plan[1] <= abs(math.log(bound)) and not (short and criterion.statistic == "p99")
    n, c = first.scored_requests, first.concurrency
    half = math.expm1(power.half_width(variance, n, c, CONFIDENCE))
    warning = None
    if not decidable or short or descriptive:
        warning = _warning(criterion, cells, plan, floor, half)
        warning += f"; {descriptive}" if descriptive else ""
    passes = _passes_advice(cells, known, variance, abs(math.log(bound)))
    if passes:
        warning = f"{warning}; {passes}" if warning else f"{first.prompt_id} {passes}"
    return PowerRow(**base, half_width=half, detectable=math.expm1(plan[1]),
                    needed=max(plan[2], calibrated_requests(c)), tail_floor=floor,
                    decidable=decidable and descriptive is None, warning=warning)  # fmt: skip


def planned_variance(known: KnownVariance) -> float:
    """The s² a plan uses: a learned one at its upper confidence limit (``UCL_LEVEL``), plus
    the variance between the nights' windows (``KnownVariance.between``) spread over a
    night's requests per arm: windows of one size cannot tell a shift of the whole window
    from variance within it that its interval missed, and a plan of passes about that size
    (``power.passes_needed``) meets both alike."""
    if known.source == "default":
        return known.log_ratio
    if known.df is None:
        learned = known.log_ratio * LEARNED_MARGIN
    else:
        learned = known.log_ratio * known.df / chi2_quantile(1 - UCL_LEVEL, known.df)
    if known.between and known.requests and known.nights:
        return learned + known.between * known.requests / known.nights
    return learned


def _passes_advice(
    cells: Sequence[Cell], known: KnownVariance, variance: float, distance: float
) -> str | None:
    """For one pass where the nights' windows differed beyond their intervals: the passes
    that average it out (``power.passes_needed``); None otherwise."""
    first = cells[0]
    if len(cells) > 1 or first.sequential or not known.between:
        return None
    k, n = power.passes_needed(variance, distance, first.concurrency, confidence=CONFIDENCE)
    return (
        f"the nights' windows differ beyond their intervals (τ = {math.sqrt(known.between):.3f}"
        f"), which one pass carries whole (a drift, which arm ran first): {k} passes of "
        f"{n:,} requests, arm order alternating, decide the bound with 80 % power"
    )


def _descriptive(criterion: Criterion, cells: Sequence[Cell]) -> str | None:
    """Why the cell's figures can only describe, never decide, the criterion (the ruling
    says the same of them: ``evidence.comparison.figures``); None when they may decide."""
    first = cells[0]
    n, c = first.scored_requests, first.concurrency
    if criterion.on_energy and len(cells) < 2:
        return (
            "one window gives one value per arm, a point ratio that decides nothing; only "
            "replicates (or a sequential cell) give it an interval"
        )
    if criterion.statistic == "p99":
        return f"{P99}: a p99 criterion is shown, never decided"
    if calibrated(n, c):
        return None
    return (
        f"{n} requests per arm are fewer than the {calibrated_requests(c)} its interval is "
        "calibrated at: its figures are descriptive only (no verdict, no rule decision)"
    )


def _label(criterion: Criterion) -> str:
    return (
        CELL_FIGURE_LABELS.get(criterion.metric)
        or f"{RATIO_LABELS[criterion.metric]} {criterion.statistic}"
    )


def _plan(cells: Sequence[Cell], variance: float, distance: float) -> tuple[str, float, int]:
    """(what decides, the detectable log distance, the requests needed per pass)."""
    first, k = cells[0], len(cells)
    n, c = first.scored_requests, first.concurrency
    if first.sequential:
        design = obf_design(k, CONFIDENCE)
        return ("sequential", power.sequential_detectable(variance, n, design, c),
                power.sequential_needed(variance, distance, design, c))  # fmt: skip
    if k >= 2:
        multiplier = student_t.quantile(CONFIDENCE, k - 1) + _z(power.POWER)
        detect = multiplier * math.sqrt(variance / (n * k))
        needed = math.ceil((multiplier / distance) ** 2 * variance / k) if distance > 0 else None
        return "replicates", detect, needed or power.MAX_SEARCH
    return ("fixed", power.detectable(variance, n, c, CONFIDENCE),
            power.requests_needed(variance, distance, c, CONFIDENCE))  # fmt: skip


def _warning(
    criterion: Criterion,
    cells: Sequence[Cell],
    plan: tuple[str, float, int],
    floor: int | None,
    half: float,
) -> str:
    first = cells[0]
    label = _label(criterion)
    n = first.scored_requests
    if criterion.non_inferiority is not None:
        goal = f"a {criterion.non_inferiority:.0%} margin"
    else:
        goal = f"a {criterion.superiority:.0%} target"
    planned = {
        "sequential": f"{len(cells)} passes of {n} requests",
        "replicates": f"{len(cells)} replicates of {n} requests",
        "fixed": f"{n} requests",
    }[plan[0]]
    per = " per pass" if plan[0] != "fixed" else ""
    said = (
        f"{first.prompt_id} {label}: {n} requests give ±{half:.0%}; {planned} detect "
        f"{math.expm1(plan[1]):.0%} at 80 % power; deciding {goal} needs ≈ {plan[2]:,} "
        f"requests{per}"
    )
    if floor is not None and n < floor:
        said += f"; a {criterion.statistic} is claimed only from {floor} requests per arm"
    return said


def _floor(statistic: str) -> int | None:
    fraction = TAIL_FRACTION.get(statistic)
    return power.tail_floor(fraction, CONFIDENCE) if fraction else None


def _z(probability: float) -> float:
    return statistics.NormalDist().inv_cdf(probability)
