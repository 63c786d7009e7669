"""The declared decision rule applied to the comparison: promote, do not promote, or no
decision, per candidate, with the interval that decided each criterion. Pure.

A criterion bounds the candidate/incumbent ratio (a non-inferiority margin or a
superiority target); in each cell it judges, the ratio's interval is met, not met or
inconclusive against that bound, and the criterion stands as its worst cell, the one that
decided it. Bounds, the order of outcomes and ``not_accepted``: docs/evidence.md, "The
declared rule".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evidence.comparison.energy import energy_value
from evidence.comparison.model import (
    RATIO_LABELS,
    ArmCell,
    CandidateRuling,
    CellEntry,
    CriterionCell,
    CriterionLine,
    CriterionStatus,
    ReplicatedRatio,
    RuleOutcome,
    Ruling,
)
from evidence.comparison.replicates import CONFIDENCE, log_t_interval
from faceoff.format import join_words, level
from matrix.rule import ENERGY_METRICS, Criterion, NotAccepted, Rule
from workload.metrics import higher_is_better

METHOD = (
    "decision rule: per criterion and cell, the candidate/incumbent ratio interval is met when "
    "wholly on the better side of the bound (margin m: 1 + m for times and energy per token, "
    "1 − m for rates; target t: 1 − t for times and energy per token, 1 + t for rates), not "
    "met when wholly on the worse side, inconclusive when it straddles it; cell figures "
    "(goodput, output throughput, energy per output token, goodput per joule) compare point "
    "ratios, or a replicated cell's between-replicate interval of them; a criterion stands as "
    "its worst cell; any not met: do not promote, else any inconclusive or missing: no "
    "decision, else promote; counted cells (the rule's cells, else those its criteria judge) "
    "not accepted are handled first as declared; a criterion at p95 judges the ratio of p95s, "
    "its interval from the same block bootstrap"
)
OUTCOME_WORDS: dict[RuleOutcome, str] = {
    "promote": "promote",
    "do_not_promote": "do not promote",
    "no_decision": "no decision",
}
GOODPUT_LABELS = {
    "goodput_rps": "goodput (req/s)",
    "goodput_tps": "goodput (tok/s)",
    "slo_attainment": "SLO attainment",
}
CELL_FIGURE_LABELS = {
    **GOODPUT_LABELS,
    "output_tps": "output throughput (tok/s)",
    "energy_per_token_j": "energy per output token (J)",
    "goodput_per_joule": "goodput per joule (req/J)",
}
GOODPUT_FIELDS = {  # rule metric -> the Goodput field it compares
    "goodput_rps": "requests_per_s",
    "goodput_tps": "output_tps",
    "slo_attainment": "attainment",
}
# Worst first: the criterion stands as the first of these any of its cells has.
STANDING: tuple[CriterionStatus, ...] = ("not_met", "missing", "inconclusive", "met")


# What a criterion's figures and looks depend on besides the data: its metric, statistic and
# bound. Two criteria with the same key stand alike; two with different keys never share a
# look, whatever their order in the rule.
FigureKey = tuple[str, str, float]


def figure_key(criterion: Criterion) -> FigureKey:
    return criterion.metric, criterion.statistic, bound_of(criterion)


@dataclass(frozen=True)
class Figure:
    """A cell's ratio for a criterion; low == high for a goodput figure (no interval)."""

    ratio: float
    low: float
    high: float
    confidence: float | None
    interval: str = "interval"


@dataclass(frozen=True)
class Replicates:
    """How replicated cells are judged: by their between-replicate interval where one exists."""

    ratios: Sequence[ReplicatedRatio] = ()
    written: Mapping[str, str] = field(default_factory=dict)  # replicate id -> id as written
    # a sequential cell's deciding look (evidence.comparison.sequential), by (id as
    # written, candidate) and the criterion's ``figure_key``: each criterion its own looks
    sequential: Mapping[tuple[str, str, FigureKey], Figure] = field(default_factory=dict)

    def names(self, cell: CellEntry) -> set[str]:
        """The ids a rule may name the cell by."""
        return {cell.id, self.written.get(cell.id, cell.id)}

    def covers(self, cell: CellEntry, candidate: str) -> bool:
        """Whether the cell is a pass of a sequential cell judged by its looks for the
        candidate: a pass not accepted then gives no look, and refuses nothing."""
        written = self.written.get(cell.id, cell.id)
        return any(key[:2] == (written, candidate) for key in self.sequential)

    def group(
        self, cell: CellEntry, criterion: Criterion, candidate: str
    ) -> tuple[str, Figure] | None:
        """The cell's replicated group (the id as written) and the criterion's sequential look
        or its between-replicate interval (of p50s), when the group has one."""
        written = self.written.get(cell.id, cell.id)
        looked = self.sequential.get((written, candidate, figure_key(criterion)))
        if looked is not None:
            return written, looked
        if criterion.statistic != "p50":
            return None
        for r in self.ratios:
            if (r.cell, r.metric, r.candidate) != (written, criterion.metric, candidate):
                continue
            if r.ratio is not None and r.low is not None and r.high is not None:
                return written, Figure(
                    r.ratio, r.low, r.high, r.confidence, "between-replicate interval"
                )
        return None


def rule_ruling(
    rule: Rule,
    cells: Sequence[CellEntry],
    candidates: Sequence[str],
    replicates: Replicates | None = None,
) -> Ruling:
    return Ruling(
        rule=rule,
        candidates=[
            candidate_ruling(rule, cells, name, replicates)
            for name in candidates
            if rule.judges(name)
        ],
        method=METHOD,
    )


def candidate_ruling(
    rule: Rule, cells: Sequence[CellEntry], candidate: str, replicates: Replicates | None = None
) -> CandidateRuling:
    groups = replicates or Replicates()
    counted = [
        c
        for c in cells
        if _runs_pair(c, candidate) and rule.counted(groups.names(c), c.kind, candidate)
    ]
    comparable = [c for c in counted if _comparable(c, candidate)]
    refused = [
        run
        for c in counted
        if not groups.covers(c, candidate)
        for run in _not_accepted(c, candidate)
    ]
    lines = [
        criterion_line(rule, k, comparable, candidate, groups) for k in rule.criteria_for(candidate)
    ]
    outcome = _outcome(rule.not_accepted, refused, lines)
    return CandidateRuling(
        candidate=candidate,
        outcome=outcome,
        not_accepted=refused,
        criteria=lines,
        headline=_headline(candidate, outcome, rule.not_accepted, refused, lines),
    )


def criterion_line(
    rule: Rule,
    criterion: Criterion,
    cells: Sequence[CellEntry],
    candidate: str,
    replicates: Replicates,
) -> CriterionLine:
    higher = higher_is_better(criterion.metric)
    bound = bound_of(criterion)
    judged = [c for c in cells if rule.counts(replicates.names(c), c.kind, criterion)]
    figures = _figures(judged, criterion, candidate, replicates)
    standing = [
        CriterionCell(cell=cell, status=_standing(f, bound, higher), **_interval(f))
        for cell, f in figures.items()
    ]
    worst = min(
        standing, key=lambda s: (STANDING.index(s.status), _slack(s, bound, higher)), default=None
    )
    head = _criterion_words(criterion, bound, higher)
    return CriterionLine(
        metric=criterion.metric,
        test="non_inferiority" if criterion.non_inferiority is not None else "superiority",
        bound=bound,
        status=worst.status if worst else "missing",
        deciding_cell=worst.cell if worst else None,
        cells=standing,
        sentence=_sentence(head, bound, higher, worst, figures[worst.cell] if worst else None),
    )


def bound_of(criterion: Criterion) -> float:
    """The ratio the candidate must clear, oriented by the metric's better direction."""
    higher = higher_is_better(criterion.metric)
    if criterion.non_inferiority is not None:
        return 1 - criterion.non_inferiority if higher else 1 + criterion.non_inferiority
    target = criterion.superiority or 0.0
    return 1 + target if higher else 1 - target


def _figures(
    cells: Sequence[CellEntry], criterion: Criterion, candidate: str, replicates: Replicates
) -> dict[str, Figure | None]:
    """Judged unit (a cell, or a replicated cell's group by the id it was written under) ->
    its figure. A group with a between-replicate interval (of p50 ratios) is judged once, by
    that interval, which also sees the variance between windows; otherwise each replicate
    on its own."""
    metric, statistic = criterion.metric, criterion.statistic
    if criterion.on_cell_figure:
        return _cell_figures(cells, metric, candidate, replicates)
    found: dict[str, Figure | None] = {}
    for cell in cells:
        group = replicates.group(cell, criterion, candidate)
        if group is None:
            found[cell.id] = figure(cell, metric, candidate, statistic)
        else:
            found[group[0]] = group[1]
    return found


def figure(cell: CellEntry, metric: str, candidate: str, statistic: str = "p50") -> Figure | None:
    """The candidate/incumbent ratio of ``metric``'s ``statistic`` in the cell, or None where
    there is none."""
    if metric in CELL_FIGURE_LABELS:
        return _cell_figure(cell, metric, candidate)
    ratios = cell.ratios if statistic == "p50" else cell.tail_ratios
    found = next(
        (
            r
            for r in ratios
            if r.candidate == candidate and r.metric == metric and r.statistic == statistic
        ),
        None,
    )
    return None if found is None else Figure(found.ratio, found.low, found.high, found.confidence)


def _cell_figures(
    cells: Sequence[CellEntry], metric: str, candidate: str, replicates: Replicates
) -> dict[str, Figure | None]:
    """Judged unit -> the point ratio of a cell figure; a replicated cell with two or more
    replicate ratios is judged once, by their between-replicate interval."""
    units: dict[str, list[tuple[str, Figure | None]]] = {}
    for cell in cells:
        written = replicates.written.get(cell.id, cell.id)
        units.setdefault(written, []).append((cell.id, _cell_figure(cell, metric, candidate)))
    found: dict[str, Figure | None] = {}
    for written, members in units.items():
        ratios = [f.ratio for _, f in members if f is not None]
        if written in {cell_id for cell_id, _ in members} or len(ratios) < 2:
            found.update(members)  # not replicated, or too few replicates for an interval
            continue
        estimate, low, high = log_t_interval(ratios)
        found[written] = Figure(estimate, low, high, CONFIDENCE, "between-replicate interval")
    return found


def _cell_figure(cell: CellEntry, metric: str, candidate: str) -> Figure | None:
    """The point ratio of one value per arm: a goodput figure, the aggregate output
    throughput (Σ completion tokens over the cell window) or an energy figure."""
    base, top = _cell_value(cell.arms[0], metric), _cell_value(_arm(cell, candidate), metric)
    if base is None or top is None or base <= 0:
        return None  # a ratio to nothing says nothing
    return Figure(top / base, top / base, top / base, None)


def _cell_value(arm: ArmCell, metric: str) -> float | None:
    if metric == "output_tps":
        return arm.aggregate_output_tps
    if metric in ENERGY_METRICS:
        return energy_value(arm, metric)
    value: float | None = getattr(arm.goodput, GOODPUT_FIELDS[metric]) if arm.goodput else None
    return value


def _standing(found: Figure | None, bound: float, higher: bool) -> CriterionStatus:
    if found is None:
        return "missing"
    worse_end, better_end = (found.low, found.high) if higher else (-found.high, -found.low)
    edge = bound if higher else -bound
    if worse_end >= edge:
        return "met"
    return "not_met" if better_end < edge else "inconclusive"


def _slack(cell: CriterionCell, bound: float, higher: bool) -> float:
    """How far the interval's worse end lies on the better side of the bound."""
    if cell.low is None or cell.high is None:
        return 0.0
    return cell.low - bound if higher else bound - cell.high


def _interval(found: Figure | None) -> dict[str, float | None]:
    if found is None:
        return {"ratio": None, "low": None, "high": None}
    return {"ratio": found.ratio, "low": found.low, "high": found.high}


def _outcome(
    policy: NotAccepted, refused: Sequence[str], lines: Sequence[CriterionLine]
) -> RuleOutcome:
    if refused and policy is NotAccepted.NO_DECISION:
        return "no_decision"
    if refused and policy is NotAccepted.DO_NOT_PROMOTE:
        return "do_not_promote"
    statuses = {line.status for line in lines}
    if "not_met" in statuses:
        return "do_not_promote"
    return "promote" if statuses == {"met"} else "no_decision"


def _headline(
    candidate: str,
    outcome: RuleOutcome,
    policy: NotAccepted,
    refused: Sequence[str],
    lines: Sequence[CriterionLine],
) -> str:
    said = f"Declared rule: **{OUTCOME_WORDS[outcome]}** {candidate}"
    if refused and policy is not NotAccepted.IGNORE:
        runs = join_words(refused, "and")
        return f"{said}: counted cell runs not accepted ({runs}), and the rule says {policy.value}."
    counts = {s: sum(1 for line in lines if line.status == s) for s in STANDING}
    tally = join_words([f"{n} {s.replace('_', ' ')}" for s, n in counts.items() if n], "and")
    noun = "criterion" if len(lines) == 1 else "criteria"
    return f"{said}: of {len(lines)} {noun}, {tally}."


def _criterion_words(criterion: Criterion, bound: float, higher: bool) -> str:
    """'TTFT p50 no worse than 5% (candidate/incumbent ≤ 1.05), in natural cells'."""
    label = CELL_FIGURE_LABELS.get(criterion.metric) or (
        f"{RATIO_LABELS[criterion.metric]} {criterion.statistic}"
    )
    if criterion.non_inferiority is not None:
        test = f"no worse than {criterion.non_inferiority:.0%}"
    else:
        test = f"at least {criterion.superiority:.0%} better"
    sign = "≥" if higher else "≤"
    return f"{label} {test} (candidate/incumbent {sign} {bound:.2f}){_scope(criterion)}"


def _sentence(
    head: str, bound: float, higher: bool, worst: CriterionCell | None, found: Figure | None
) -> str:
    if worst is None:
        return f"{head}: missing — no comparable cell to judge."
    if found is None:
        return f"{head}: missing — {worst.cell} has no ratio for it."
    interval = f"{found.ratio:.2f}×"
    if found.confidence is not None:
        interval += (
            f" ({level(found.confidence)} {found.interval} {found.low:.2f}–{found.high:.2f})"
        )
    why = {
        "met": f"wholly {'≥' if higher else '≤'} {bound:.2f}",
        "not_met": f"wholly on the worse side of {bound:.2f}",
        "inconclusive": f"straddles {bound:.2f}",
    }[worst.status]
    return f"{head}: {worst.status.replace('_', ' ')} — {worst.cell} {interval}, {why}."


def _scope(criterion: Criterion) -> str:
    parts = []
    if criterion.kinds:
        parts.append(f"{join_words(criterion.kinds, 'and')} cells")
    if criterion.cells:
        parts.append(join_words(criterion.cells, "and"))
    return f", in {' and '.join(parts)}" if parts else ""


def _arm(cell: CellEntry, name: str) -> ArmCell:
    return next(a for a in cell.arms if a.arm == name)


def _runs_pair(cell: CellEntry, candidate: str) -> bool:
    return any(p.candidate == candidate for p in cell.pairs)


def _comparable(cell: CellEntry, candidate: str) -> bool:
    return any(p.candidate == candidate and p.comparable for p in cell.pairs)


def _not_accepted(cell: CellEntry, candidate: str) -> list[str]:
    """The pair's cell runs that are not accepted, or the pair itself when its plans differ."""
    incumbent = cell.arms[0].arm
    runs = [
        f"{cell.id}/{a.arm} {a.disposition}"
        for a in cell.arms
        if a.arm in (incumbent, candidate) and a.disposition != "accepted"
    ]
    if not runs and not _comparable(cell, candidate):
        return [f"{cell.id} pair not comparable"]
    return runs
