"""The campaign's passes, one after another, each admitted by the evidence and the budget.
The same concept at another layer: ``evidence.audit.passes``, ``faceoff.formats.passes``.

Replicate k of a cell runs in pass k of the campaign, every arm in turn: the incumbent first
in odd passes and last in even ones (ABBA: a drift across the night cannot favour one arm
in every pass). Before each pass
after the first, the passes so far are judged (``evidence.comparison.sequential``): a
sequential cell's next replicate runs only while a candidate whose outcome is still open
(the rule's fidelity limits included, judged on the fidelity cells scored in each arm's
first walk) has a rule criterion undecided in it that has not stopped for futility. With a
night's window or deadline (``matrix.night_window.budget_end``), the pass is then estimated from
what the night has measured (``flows.campaign.budget``) and runs only if it can finish, the
incumbent's restoration reserved, before the budget ends; otherwise only its rule-counted
cells, if they fit, and else nothing: the campaign stops and closes with the decision its
evidence supports. With a budget, each arm walks its rule-counted cells first. What was
run, skipped and why is ``passes.json`` (``faceoff.formats.passes``), written after every
pass.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from evidence.comparison.build import CellEntries
from evidence.comparison.fidelity.entries import fidelity_entries
from evidence.comparison.read import load_campaign
from evidence.comparison.sequential import needing_pass
from evidence.folder.layout import CampaignFolder
from faceoff.formats.bundle.comparison import CellEntry
from faceoff.formats.passes import (
    PASSES_FILE,
    ArmWalk,
    PassEntry,
    PassRecord,
    SkippedCells,
    SkipReason,
    read_passes,
)
from flows.campaign.budget import NightSoFar, admit, estimate
from flows.campaign.context import CampaignContext
from ledger.campaigns import require_campaign
from ledger.cells import latest_attempts
from ledger.db import session_scope
from matrix.arm import Arm
from matrix.cell import Cell
from matrix.model import Matrix

Work = list[tuple[Arm, list[Cell]]]


@dataclass
class PassLog:
    """The record as it grows during the run."""

    record: PassRecord
    pending: set[str]  # the cell ids left to run: only these can be skipped (the pilot's
    # blocks and earlier runs' dispositions stand)
    walks: list[ArmWalk] = field(default_factory=list)


def campaign_passes(
    context: CampaignContext, work: Work, budget_end: datetime | None
) -> Iterator[tuple[Arm, list[Cell]]]:
    """``work`` (per pass, per arm: ``flows.campaign.opening.remaining_work``) as the walks to
    run, each pass admitted when the one before it has run. An arm with no cell left in a
    pass is no walk of it."""
    matrix = context.frozen.matrix
    work = [(arm, cells) for arm, cells in work if cells]
    log = PassLog(_opened(context, budget_end), pending=_ids(work))
    passes = itertools.groupby(work, key=lambda item: item[1][0].pass_index)
    for index, items in passes:
        skipped = log.record.skipped_cells()
        planned = arm_order(
            [(arm, [c for c in cells if c.id not in skipped]) for arm, cells in items], index
        )
        admitted = _admitted(context, log, index, _ordered(matrix, planned, budget_end))
        if admitted is None:
            break
        walks = []
        for arm, cells in admitted.work:
            started = context.now()
            yield arm, cells
            walks.append(ArmWalk(arm=arm.name, started_at=started, ended_at=context.now(),
                                 cells=[c.id for c in cells]))  # fmt: skip
        entry = PassEntry(index=index, estimated_s=admitted.estimate, walks=walks)
        _save(context, log, passes=[*log.record.passes, entry])
    if log.record.stop is None:
        ran = "every planned pass ran" if work else "no cell run was left to run"
        _save(context, log, stop=ran)


@dataclass(frozen=True)
class Admitted:
    work: Work
    estimate: float | None


def _admitted(context: CampaignContext, log: PassLog, index: int, planned: Work) -> Admitted | None:
    """The part of pass ``index`` that runs (recording what does not), or None: stop."""
    matrix = context.frozen.matrix
    wanted = _needed(context, log, index, planned)
    if not any(cells for _, cells in wanted):
        _stopped(context, log, index, "no cell needs a further pass")
        return None
    measured = _measured(context, log)
    restore = measured.restore_reserve(matrix.incumbent.name)
    reserve = None if restore is None else restore + measured.look_reserve(context.now())
    for work in (wanted, _counted_only(matrix, wanted)):
        needed = estimate([(arm.name, cells) for arm, cells in work if cells], measured)
        fits = admit(needed, reserve, context.now(), log.record.budget_end)
        if fits.fits and any(cells for _, cells in work):
            left_out = _ids(wanted) - _ids(work)
            if left_out:
                why = f"the whole pass would not fit: {fits.sentence}"
                _skip(context, log, index, left_out, reason="budget", why=why)
            log.record = log.record.model_copy(update={"restore_reserve_s": reserve})
            return Admitted([(arm, cells) for arm, cells in work if cells], needed)
    _stopped(context, log, index, f"pass {index} not started: {fits.sentence}")
    return None


def _needed(context: CampaignContext, log: PassLog, index: int, planned: Work) -> Work:
    """The pass's cells less the passes of sequential cells that need no further pass
    (recorded with why, cell by cell)."""
    matrix = context.frozen.matrix
    if index == 1 or not any(c.sequential for _, cells in planned for c in cells):
        return planned
    fidelity = fidelity_entries(context.campaign_dir, matrix)
    needing = needing_pass(matrix, entries_so_far(context), fidelity)
    done: set[str] = set()
    for written, need in needing.items():
        if need.more:
            continue
        cells = {c.id for _, cs in planned for c in cs if c.sequential and c.prompt_id == written}
        later = {c.id for c in matrix.cells if c.prompt_id == written and c.pass_index >= index}
        later = (later & log.pending) - log.record.skipped_cells()
        if cells:
            reason: SkipReason = "futile" if need.futile else "decided"
            _skip(context, log, index, later, reason=reason, why=need.why)
        done |= later
    return [(arm, [c for c in cells if c.id not in done]) for arm, cells in planned]


def entries_so_far(context: CampaignContext) -> list[CellEntry]:
    """The comparison's entry of every cell that has run, read from the campaign folder."""
    inputs = load_campaign(CampaignFolder(context.campaign_dir))
    entries = CellEntries(inputs)
    ran = {cell for cell, _ in inputs.attempts}
    return [entries(c) for c in context.frozen.matrix.cells if c.id in ran]


def _measured(context: CampaignContext, log: PassLog) -> NightSoFar:
    with session_scope(context.engine) as session:
        rows = latest_attempts(session, require_campaign(session, context.name))
    timed = sorted(
        (r for r in rows.values() if r.started_at is not None and r.ended_at is not None),
        key=lambda r: r.started_at or datetime.min,
    )
    seconds = {(r.cell_id, r.arm): (r.ended_at - r.started_at).total_seconds() for r in timed}  # type: ignore[operator]
    written = {c.id: c.prompt_id for c in context.frozen.matrix.cells}
    walks = [w for p in log.record.passes for w in p.walks]
    return NightSoFar(walks, seconds, written)


def walk_order(work: Work) -> Work:
    """``work`` (per pass, per arm) as the walks run, pass by pass (``arm_order``)."""
    passes = itertools.groupby(work, key=lambda item: item[1][0].pass_index if item[1] else 1)
    return [walk for index, items in passes for walk in arm_order(list(items), index)]


def arm_order(work: Work, index: int) -> Work:
    """The pass's arms: incumbent first in odd passes, last in even ones (ABBA), so a drift
    across the night (heat, a neighbour, a cache that grows) weighs on both arms alike
    instead of on the candidate every pass; within the pass, its single-window cells
    alternate which arm runs them first (``alternated``)."""
    return alternated(work if index % 2 == 1 else work[::-1])


def alternated(work: Work) -> Work:
    """The walks with the second, fourth … single-window cell (no replicate: it has no other
    pass to balance it) that every arm runs taken out of the arms' walks and run after them
    in the reverse arm order, the last arm running both halves on one lane: A B C becomes
    A B C′ B′ A′, one more lane start per arm but the last. A drift within the pass then
    favours the incumbent in half of those cells and the candidate in the other half. With
    one arm, or fewer than two such cells, the walks are unchanged."""
    if len(work) < 2:
        return work
    shared = [
        c.id
        for c in work[0][1]
        if c.replicate is None and all(c.id in {d.id for d in cells} for _, cells in work[1:])
    ]
    later = set(shared[1::2])
    if not later:
        return work
    forward = [(arm, [c for c in cells if c.id not in later]) for arm, cells in work]
    back = [(arm, [c for c in cells if c.id in later]) for arm, cells in reversed(work)]
    pivot = (forward[-1][0], forward[-1][1] + back[0][1])
    return [(arm, cells) for arm, cells in [*forward[:-1], pivot, *back[1:]] if cells]


def _ordered(matrix: Matrix, work: Work, budget_end: datetime | None) -> Work:
    """With a budget, each arm's rule-counted cells first (stable otherwise)."""
    if budget_end is None or matrix.rule is None:
        return work
    rule = matrix.rule
    return [(arm, sorted(cells, key=lambda c: not rule.counts_cell({c.id, c.prompt_id})))
            for arm, cells in work]  # fmt: skip


def _counted_only(matrix: Matrix, work: Work) -> Work:
    rule = matrix.rule
    if rule is None:
        return []
    return [
        (arm, [c for c in cells if rule.counts_cell({c.id, c.prompt_id})]) for arm, cells in work
    ]


def _stopped(context: CampaignContext, log: PassLog, index: int, why: str) -> None:
    """No pass from ``index`` on: its cells and every later pass's are skipped."""
    later = {c.id for c in context.frozen.matrix.cells if c.pass_index >= index}
    later = (later & log.pending) - log.record.skipped_cells()
    if later:
        reason: SkipReason = "budget" if why.startswith("pass") else "decided"
        _skip(context, log, index, later, reason=reason, why=why)
    _save(context, log, stop=why)


def _skip(
    context: CampaignContext,
    log: PassLog,
    index: int,
    cells: set[str],
    *,
    reason: SkipReason,
    why: str,
) -> None:
    ordered = [c.id for c in context.frozen.matrix.cells if c.id in cells]
    entry = SkippedCells(index=index, cells=ordered, reason=reason, sentence=why)
    _save(context, log, skipped=[*log.record.skipped, entry])


def _ids(work: Work) -> set[str]:
    return {c.id for _, cells in work for c in cells}


def _opened(context: CampaignContext, budget_end: datetime | None) -> PassRecord:
    """The record a resumed run left, else a new one."""
    found = read_passes(context.campaign_dir)
    if found is not None:  # a resumed run: its own budget, from its own start
        return found.model_copy(update={"budget_end": budget_end, "stop": None})
    return PassRecord(campaign=context.name, budget_end=budget_end, restore_reserve_s=None,
                      passes=[], skipped=[], stop=None)  # fmt: skip


def _save(context: CampaignContext, log: PassLog, **update: object) -> None:
    log.record = log.record.model_copy(update=update)
    log.record.write(context.campaign_dir / PASSES_FILE, replace=True)


def uses_passes(matrix: Matrix) -> bool:
    """Whether the campaign decides between passes: sequential cells or a budget."""
    sequential = any(c.sequential for c in matrix.cells)
    return sequential or matrix.campaign.window is not None or matrix.campaign.deadline is not None
