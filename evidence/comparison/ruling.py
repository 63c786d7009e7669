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

from evidence.comparison.fidelity.criteria import fidelity_lines
from evidence.comparison.figures import (
    CELL_FIGURE_LABELS,
    REPLICATED,
    Figure,
    FigureKey,
    Judged,
    Standing,
    bound_of,
    figure,
    figure_key,
    interval_reason,
    standings,
)
from evidence.stats.multiplicity import ONE_SIDED, per_candidate
from faceoff.format import join_words, level
from faceoff.formats.bundle.comparison import (
    RATIO_LABELS,
    CandidateRuling,
    CellEntry,
    CriterionCell,
    CriterionLine,
    CriterionStatus,
    ReplicatedRatio,
    RuleOutcome,
    Ruling,
)
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from matrix.rule import Criterion, NotAccepted, Rule
from workload.metrics import higher_is_better

METHOD = (
    "decision rule: per criterion and cell, the candidate/incumbent ratio interval is met when "
    "wholly on the better side of the bound (margin m: 1 + m for times and energy per token, "
    "1 − m for rates; target t: 1 − t for times and energy per token, 1 + t for rates), not "
    "met when wholly on the worse side, inconclusive when it straddles it; an interval decides "
    "only where it is calibrated: a point ratio, a zero-width interval or one on fewer "
    "requests per arm than its method is calibrated at (8 whole blocks) is descriptive, shown "
    "and inconclusive; output throughput and goodput carry a time-block bootstrap interval "
    "within the cell window, energy figures (one value per window) decide only by a "
    "replicated or sequential cell's interval between windows; a criterion stands as "
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
# Worst first: the criterion stands as the first of these any of its cells has.
STANDING: tuple[CriterionStatus, ...] = ("not_met", "missing", "inconclusive", "met")


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

    def looked(
        self, cell: CellEntry, criterion: Criterion, candidate: str
    ) -> tuple[str, Figure] | None:
        """The cell's sequential group (the id as written) and the criterion's deciding look."""
        written = self.written.get(cell.id, cell.id)
        found = self.sequential.get((written, candidate, figure_key(criterion)))
        return None if found is None else (written, found)

    def between(self, cell: CellEntry, metric: str, candidate: str) -> tuple[str, Figure] | None:
        """The cell's replicated group (the id as written) and its between-replicate interval
        of p50 ratios (a cell figure's window ratios), when the group has one."""
        written = self.written.get(cell.id, cell.id)
        for r in self.ratios:
            if (r.cell, r.metric, r.candidate) != (written, metric, candidate):
                continue
            if r.ratio is not None and r.low is not None and r.high is not None:
                words = REPLICATED
                df = len(r.ratios) - 1 if len(r.ratios) > 1 else None  # its log-t interval's
                return written, Figure(r.ratio, r.low, r.high, r.confidence, words,
                                       interval_reason(r.low, r.high), df=df)  # fmt: skip
        return None


def rule_ruling(
    rule: Rule,
    cells: Sequence[CellEntry],
    candidates: Sequence[str],
    replicates: Replicates | None = None,
    fidelity: Sequence[FidelityEntry] = (),
) -> Ruling:
    judged = [name for name in candidates if rule.judges(name)]
    return Ruling(
        rule=rule,
        candidates=[
            candidate_ruling(rule, cells, name, replicates, len(judged), fidelity=fidelity)
            for name in judged
        ],
        method=METHOD,
        error_control=error_control(len(judged)),
    )


def error_control(candidates: int) -> str:
    """The campaign's error rates in words, for the card."""
    split = (
        f", split across the {candidates} candidates ({per_candidate(candidates):.2%} each)"
        if candidates > 1
        else ""
    )
    return (
        f"Promote needs every criterion met in every cell it judges (an intersection-union "
        f"test: wrongly promoted at most {ONE_SIDED:.1%} of the time{split}); do not promote "
        "is a claim over every cell × criterion, Holm-adjusted so that a wrong one is made at "
        f"most {ONE_SIDED:.1%} of the time; a sequential cell's looks are held to their own "
        "design's spending."
    )


def candidate_ruling(
    rule: Rule,
    cells: Sequence[CellEntry],
    candidate: str,
    replicates: Replicates | None = None,
    candidates: int = 1,
    *,
    fidelity: Sequence[FidelityEntry] = (),
) -> CandidateRuling:
    """``candidates``: how many the rule judges, the error of a promotion split among them."""
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
    criteria = rule.criteria_for(candidate)
    judged = [_judged(rule, k, comparable, candidate, groups) for k in criteria]
    lines = [
        criterion_line(k, j, found)
        for k, j, found in zip(criteria, judged, standings(judged, candidates), strict=True)
    ]
    lines += fidelity_lines(rule.fidelity, fidelity, candidate)
    outcome = _outcome(rule.not_accepted, refused, lines)
    return CandidateRuling(
        candidate=candidate,
        outcome=outcome,
        not_accepted=refused,
        criteria=lines,
        headline=_headline(candidate, outcome, rule.not_accepted, refused, lines),
    )


def _judged(
    rule: Rule,
    criterion: Criterion,
    cells: Sequence[CellEntry],
    candidate: str,
    replicates: Replicates,
) -> Judged:
    judged = [c for c in cells if rule.counts(replicates.names(c), c.kind, criterion)]
    figures = _figures(judged, criterion, candidate, replicates)
    return Judged(bound_of(criterion), higher_is_better(criterion.metric), figures)


def criterion_line(
    criterion: Criterion, judged: Judged, found: Mapping[str, Standing]
) -> CriterionLine:
    """The criterion's line: its worst unit decides it."""
    bound, higher, figures = judged.bound, judged.higher, judged.figures
    standing = [
        CriterionCell(cell=cell, status=found[cell][0], **_interval(f))
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
        sentence=_sentence(
            head,
            bound,
            higher,
            worst,
            figures[worst.cell] if worst else None,
            note=found[worst.cell][1] if worst else None,
        ),
    )


def _figures(
    cells: Sequence[CellEntry], criterion: Criterion, candidate: str, replicates: Replicates
) -> dict[str, Figure | None]:
    """Judged unit (a cell, or a replicated or sequential cell's group by the id it was
    written under) -> its figure. A sequential group is judged by the criterion's deciding
    look; a replicated group with a between-replicate interval (of p50 ratios) once, by that
    interval, which also sees the variance between windows; otherwise each cell on its own."""
    metric, statistic = criterion.metric, criterion.statistic
    found: dict[str, Figure | None] = {}
    for cell in cells:
        group = replicates.looked(cell, criterion, candidate)
        if group is None and statistic == "p50":
            group = replicates.between(cell, metric, candidate)
        if group is None:
            found[cell.id] = figure(cell, metric, candidate, statistic)
        else:
            found[group[0]] = group[1]
    return found


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
    head: str,
    bound: float,
    higher: bool,
    worst: CriterionCell | None,
    found: Figure | None,
    *,
    note: str | None,
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
    if note is not None:
        why = note
    return f"{head}: {worst.status.replace('_', ' ')} — {worst.cell} {interval}, {why}."


def _scope(criterion: Criterion) -> str:
    parts = []
    if criterion.kinds:
        parts.append(f"{join_words(criterion.kinds, 'and')} cells")
    if criterion.cells:
        parts.append(join_words(criterion.cells, "and"))
    return f", in {' and '.join(parts)}" if parts else ""


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
