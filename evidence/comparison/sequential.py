"""Sequential cells judged look by look, and whether each needs another pass. Pure.
The same concept at another layer: ``evidence.stats.sequential``,
``evidence.views.card.sequential``.

A cell written with ``replicates = "auto"`` and ``max_passes = K`` is planned as K
replicates (``<id>-r1`` … ``-rK``), each run in its own pass of both arms; the passes are
the looks of a group-sequential design (``evidence.stats.spending``: Lan–DeMets
O'Brien–Fleming-type spending over K equally spaced looks, each side of a bound at the
rule's (1 − confidence)/2). After pass k, each criterion of the rule that judges the cell
is judged per candidate on the passes so far combined (``evidence.stats.sequential``), with
the interval look k allows; it is decided (met or not met) at the first look whose
interval clears the bound, and stays so; an undecided criterion whose look before the last
holds its bound within the futility wedge (``evidence.stats.futility``) stops, futile,
undecided (it decides nothing: the rule counts it inconclusive). The cell needs another
pass while some candidate whose outcome is still open has a criterion neither decided nor
futile in it; a candidate's outcome is
settled once the rule's outcome can no longer change: promote (every criterion met),
do not promote (one not met), or a counted cell run not accepted under ``not_accepted =
"no_decision"``. The rule's fidelity limits count in that outcome from the first look: an
arm's fidelity cells are scored on its lane in its first walk, on every window, so their
figures are whole at look 1 and no further pass changes them; a fidelity limit not met
settles the candidate (do not promote) and one missing or inconclusive keeps it from
promotion. The flow runs only the cells that need a pass (``flows.campaign.passes``);
the comparison judges each sequential cell by its deciding look (``ruling.Replicates``) and
says on the card how every cell stopped.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evidence.comparison.figures import (
    CELL_FIGURE_LABELS,
    POINT,
    Figure,
    FigureKey,
    bound_of,
    figure,
    interval_reason,
    of_ratio,
    ratio_of,
)
from evidence.comparison.ruling import OUTCOME_WORDS, Replicates, candidate_ruling
from evidence.stats import student_t
from evidence.stats.futility import SPENDING as FUTILITY
from evidence.stats.futility import Futility, futility_design
from evidence.stats.sequential import MAX_LOG_HALF, PassEstimate, futile, look_at, standing
from evidence.stats.spending import SPENDING, Design, obf_design
from faceoff.format import join_words
from faceoff.formats.bundle.comparison import RATIO_LABELS, CandidateRuling, CellEntry, Ratio
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from faceoff.formats.bundle.sequential_looks import (
    BudgetView,
    LookEntry,
    SequentialCell,
    SequentialCriterion,
    SequentialView,
)
from faceoff.formats.passes import PassRecord
from matrix.cell import Cell
from matrix.model import Matrix
from matrix.rule import Criterion, NotAccepted, Rule
from workload.metrics import higher_is_better

CONFIDENCE = 0.95  # every ratio interval's, and so the rule's
METHOD = (
    f'sequential cells: the K passes of a replicates = "auto" cell are the looks of a '
    f"group-sequential design ({SPENDING} alpha spending over K equal looks, each side of a "
    "bound at (1 − confidence)/2); at look k the passes' log ratios are averaged, their "
    "standard errors read from each pass's block-bootstrap interval, widened by the "
    "DerSimonian–Laird variance between passes, and the interval at the look's nominal "
    "confidence (the spending's z boundary as a Student t critical value, Welch–"
    "Satterthwaite degrees of freedom) is judged against the bound; a criterion is decided at "
    "the first look whose interval clears it; a cell runs another pass only while a candidate "
    "whose outcome is open has a criterion undecided in it; a criterion stops undecided "
    f"(futile) at a look before the last whose interval at the futility level ({FUTILITY}, "
    "the inner wedge sized so that the last look's meets the efficacy boundary at 80 % power; "
    "non-binding) still holds its bound"
)


@dataclass(frozen=True)
class SequentialGroup:
    """A sequential cell as written, and its replicates (passes) in order."""

    written: str
    kind: str
    cells: tuple[Cell, ...]

    @property
    def design(self) -> Design:
        return obf_design(len(self.cells), CONFIDENCE)

    @property
    def futility(self) -> Futility:
        return futility_design(self.design)

    @property
    def ids(self) -> set[str]:
        return {self.written, *(c.id for c in self.cells)}


def sequential_groups(cells: Sequence[Cell]) -> list[SequentialGroup]:
    """Every sequential cell of the matrix, in matrix order."""
    found: dict[str, list[Cell]] = {}
    for cell in cells:
        if cell.sequential and cell.replicate is not None:
            found.setdefault(cell.replicate.of, []).append(cell)
    return [
        SequentialGroup(written, replicas[0].kind.value, tuple(replicas))
        for written, replicas in found.items()
    ]


def criterion_looks(
    group: SequentialGroup, criterion: Criterion, candidate: str, entries: Mapping[str, CellEntry]
) -> SequentialCriterion:
    """Every look of one criterion for one candidate in the group's passes that ran. A look
    whose passes include one with a descriptive interval (too few requests, no width) is
    descriptive too: shown, undecided. An energy figure (one point ratio per window) is
    judged by the Student t interval of its passes' point ratios at the look's level."""
    higher, bound = higher_is_better(criterion.metric), bound_of(criterion)
    looks: list[LookEntry] = []
    passes: list[PassEstimate] = []
    points: list[float] = []
    reasons: list[str] = []
    futile_at: int | None = None
    for entry in (entries[c.id] for c in group.cells if c.id in entries):
        found = _pass_ratio(entry, criterion, candidate)
        if found is None:
            point = _pass_figure(entry, criterion, candidate)
            if point is not None:
                points.append(point.ratio)
                looks.append(_point_look(points, group.design, bound, higher))
            continue
        reason = of_ratio(found, entry.concurrency).descriptive
        reasons += [reason] if reason else []
        passes.append(_estimate(found))
        look = look_at(passes, group.design, bound, higher)
        said = reasons[0] if reasons else (None if look.se > 0 else "a zero-width interval")
        if said is None and futile_at is None and futile(look, group.futility, bound):
            futile_at = look.look
        looks.append(LookEntry(look=look.look, ratio=look.ratio, low=look.low, high=look.high,
                               confidence=look.confidence,
                               status="inconclusive" if said else look.status,
                               descriptive=said))  # fmt: skip
    decided = next((look for look in looks if look.status in ("met", "not_met")), None)
    last = decided or (looks[-1] if looks else None)
    return SequentialCriterion(
        candidate=candidate,
        metric=criterion.metric,
        statistic=criterion.statistic,
        bound=bound,
        looks=looks,
        decided_at=decided.look if decided else None,
        futile_at=futile_at if decided is None else None,
        status=last.status if last else "missing",
    )


def judged(
    rule: Rule, groups: Sequence[SequentialGroup], candidates: Sequence[str],
    entries: Mapping[str, CellEntry],
) -> dict[str, list[SequentialCriterion]]:  # fmt: skip
    """Per group (id as written), every criterion judging it, per candidate."""
    return {
        g.written: [
            criterion_looks(g, criterion, candidate, entries)
            for candidate in candidates
            for criterion in rule.criteria
            if rule.counts(g.ids, g.kind, criterion)
        ]
        for g in groups
    }


def deciding_figures(
    groups: Mapping[str, Sequence[SequentialCriterion]], max_passes: Mapping[str, int]
) -> dict[tuple[str, str, FigureKey], Figure]:
    """The ruling's figure of each group and criterion: its deciding look, else its last."""
    found = {}
    for written, lines in groups.items():
        for line in lines:
            look = next((k for k in line.looks if k.look == line.decided_at), None)
            look = look or (line.looks[-1] if line.looks else None)
            if look is None or look.ratio is None or look.low is None or look.high is None:
                continue
            words = f"sequential interval at look {look.look} of {max_passes[written]}:"
            confidence = (
                None if look.confidence >= 1.0 and look.low == look.high else look.confidence
            )
            key = (written, line.candidate, (line.metric, line.statistic, line.bound))
            found[key] = Figure(look.ratio, look.low, look.high, confidence, words,
                                look.descriptive, adjustable=False)  # fmt: skip
    return found


def sequential_replicates(
    matrix: Matrix, entries: Sequence[CellEntry], base: Replicates
) -> Replicates:
    """``base`` with every sequential group's deciding looks."""
    groups = sequential_groups(matrix.cells)
    if matrix.rule is None or not groups:
        return base
    by_id = {e.id: e for e in entries}
    lines = judged(matrix.rule, groups, [a.name for a in matrix.candidates], by_id)
    passes = {g.written: len(g.cells) for g in groups}
    return Replicates(base.ratios, base.written, deciding_figures(lines, passes))


def settled(rule: Rule, ruling: CandidateRuling) -> str | None:
    """Why the candidate's outcome can no longer change on the cells run so far; None while
    it can."""
    who, words = ruling.candidate, OUTCOME_WORDS[ruling.outcome]
    if ruling.outcome != "no_decision":
        return f"{who}'s outcome is settled: {words}"
    if ruling.not_accepted and rule.not_accepted is NotAccepted.NO_DECISION:
        return f"{who}'s outcome is settled: no decision (counted cell runs not accepted)"
    return None


def fidelity_said(ruling: CandidateRuling) -> list[str]:
    """The candidate's fidelity limits as judged: once, on every window of its fidelity cells
    (scored in its first walk), so each stands at every look."""
    return [
        f"for {ruling.candidate}, {line.sentence} (fidelity, judged once on every window)"
        for line in ruling.criteria
        if line.test == "limit"
    ]


@dataclass(frozen=True)
class Need:
    """Whether a sequential cell needs another pass, and why (or why not); ``futile`` when no
    further pass rests on a futility stop (a criterion of an open candidate left undecided)."""

    more: bool
    why: str
    futile: bool = False


def needing_pass(
    matrix: Matrix, entries: Sequence[CellEntry], fidelity: Sequence[FidelityEntry] = ()
) -> dict[str, Need]:
    """Each sequential cell (id as written) that ran at least once: whether it needs another
    pass, given the cells run so far (``entries``) and the fidelity cells scored
    (``fidelity``: the rule's fidelity limits settle a candidate as they settle the rule)."""
    rule, groups = matrix.rule, sequential_groups(matrix.cells)
    if rule is None or not groups:
        return {}
    written = {c.id: c.prompt_id for c in matrix.cells}
    by_id = {e.id: e for e in entries}
    lines = judged(rule, groups, [a.name for a in matrix.candidates], by_id)
    figures = deciding_figures(lines, {g.written: len(g.cells) for g in groups})
    replicates = Replicates((), written, figures)
    # a pass of a sequential cell that was not accepted gives no look, and a later pass may:
    # it settles nothing while the cell runs on
    passes = {c.id for g in groups for c in g.cells}
    kept = [e for e in entries if e.id not in passes or all(p.comparable for p in e.pairs)]
    ruled = sum(1 for a in matrix.candidates if rule.judges(a.name))
    rulings = [
        candidate_ruling(rule, kept, a.name, replicates, ruled, fidelity=fidelity)
        for a in matrix.candidates
    ]
    closed = {r.candidate: settled(rule, r) for r in rulings}
    limits = [said for r in rulings for said in fidelity_said(r)]
    return {
        g.written: _need(lines[g.written], closed, limits)
        for g in groups
        if any(c.id in by_id for c in g.cells)
    }


def _need(
    lines: Sequence[SequentialCriterion],
    closed: Mapping[str, str | None],
    limits: Sequence[str],
) -> Need:
    open_lines = [ln for ln in lines if closed[ln.candidate] is None and ln.decided_at is None]
    undecided = [ln for ln in open_lines if ln.futile_at is None]
    if undecided:
        said = join_words([f"{label(ln)} for {ln.candidate}" for ln in undecided], "and")
        return Need(True, f"undecided: {said}")
    settled_words = [why for why in closed.values() if why is not None]
    parts = [
        f"{label(ln)} {ln.status.replace('_', ' ')} for {ln.candidate} at look {ln.decided_at}"
        for ln in lines
        if ln.decided_at is not None
    ]
    futile = [
        f"{label(ln)} futile for {ln.candidate} at look {ln.futile_at} (its interval at the "
        "futility level still holds the bound: no decision is plausible in the passes left)"
        for ln in open_lines
    ]
    said = "; ".join([*parts, *futile, *limits, *settled_words]) or "no criterion to decide"
    return Need(False, said, futile=bool(futile))


def sequential_view(
    matrix: Matrix, entries: Sequence[CellEntry], record: PassRecord | None
) -> SequentialView | None:
    """The card's account of every sequential cell; None without one."""
    groups = sequential_groups(matrix.cells)
    if matrix.rule is None or not groups:
        return None
    by_id = {e.id: e for e in entries}
    lines = judged(matrix.rule, groups, [a.name for a in matrix.candidates], by_id)
    return SequentialView(
        spending=SPENDING,
        futility=FUTILITY,
        confidence=CONFIDENCE,
        cells=[_cell_view(g, lines[g.written], by_id, record) for g in groups],
        budget=_budget(record),
        method=METHOD,
    )


def _cell_view(
    group: SequentialGroup,
    lines: Sequence[SequentialCriterion],
    entries: Mapping[str, CellEntry],
    record: PassRecord | None,
) -> SequentialCell:
    design = group.design
    ran = [c.id for c in group.cells if c.id in entries]
    return SequentialCell(
        cell=group.written,
        max_passes=design.looks,
        passes_run=ran,
        boundaries=list(design.boundaries),
        spent=list(design.spent),
        levels=[design.nominal_confidence(k) for k in range(1, design.looks + 1)],
        futility=list(group.futility.boundaries),
        criteria=list(lines),
        stopped=_stopped(group, ran, lines, record),
    )


def _stopped(
    group: SequentialGroup,
    ran: Sequence[str],
    lines: Sequence[SequentialCriterion],
    record: PassRecord | None,
) -> str:
    """Why no further pass of the cell ran: the record's reason where it skipped one."""
    ids = {c.id for c in group.cells}
    skipped = next((s for s in (record.skipped if record else []) if ids & set(s.cells)), None)
    if skipped is not None:
        return (
            skipped.sentence
            if skipped.reason == "decided"
            else f"{skipped.reason}: {skipped.sentence}"
        )
    decided = sum(1 for line in lines if line.decided_at is not None)
    futile = sum(1 for line in lines if line.futile_at is not None)
    tally = f"{decided} of {len(lines)} criteria decided" + (f", {futile} futile" if futile else "")
    return f"every pass ran; {tally}" if len(ran) == len(group.cells) else tally


def _budget(record: PassRecord | None) -> BudgetView | None:
    if record is None:
        return None
    return BudgetView(
        budget_end=record.budget_end,
        restore_reserve_s=record.restore_reserve_s,
        passes=len(record.passes),
        stop=record.stop,
    )


def label(line: SequentialCriterion) -> str:
    """'TTFT p50', 'goodput (req/s)': how the card names a criterion's figure."""
    return CELL_FIGURE_LABELS.get(line.metric) or f"{RATIO_LABELS[line.metric]} {line.statistic}"


def _pass_figure(entry: CellEntry, criterion: Criterion, candidate: str) -> Figure | None:
    if not any(p.candidate == candidate and p.comparable for p in entry.pairs):
        return None
    return figure(entry, criterion.metric, candidate, criterion.statistic)


def _pass_ratio(entry: CellEntry, criterion: Criterion, candidate: str) -> Ratio | None:
    """The pass's ratio with an interval (None for a point figure, or a pair not compared)."""
    if not any(p.candidate == candidate and p.comparable for p in entry.pairs):
        return None
    return ratio_of(entry, criterion.metric, candidate, criterion.statistic)


def _estimate(found: Ratio) -> PassEstimate:
    return PassEstimate.of_interval(
        found.ratio, found.low, found.high, found.confidence,
        min(found.blocks_incumbent, found.blocks_candidate),
    )  # fmt: skip


def _point_look(points: Sequence[float], design: Design, bound: float, higher: bool) -> LookEntry:
    """Look k of a point figure: the Student t interval (k − 1 degrees of freedom) of the k
    passes' log point ratios at the look's nominal level; one pass alone is descriptive."""
    k = len(points)
    if k < 2:
        return LookEntry(look=k, ratio=points[0], low=points[0], high=points[0], confidence=1.0,
                         status="inconclusive", descriptive=POINT)  # fmt: skip
    logs = [math.log(p) for p in points]
    mean = statistics.fmean(logs)
    confidence = design.nominal_confidence(min(k, design.looks))
    half = student_t.quantile(confidence, k - 1) * statistics.stdev(logs) / math.sqrt(k)
    half = min(half, MAX_LOG_HALF)
    low, high = math.exp(mean - half), math.exp(mean + half)
    said = interval_reason(low, high)
    status = "inconclusive" if said else standing(low, high, bound, higher)
    return LookEntry(look=k, ratio=math.exp(mean), low=low, high=high, confidence=confidence,
                     status=status, descriptive=said)  # fmt: skip
