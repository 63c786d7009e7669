"""``build_comparison``: the comparison as a pure function of the loaded campaign."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from evidence.attempt.energy import METHOD as ENERGY_METHOD
from evidence.attempt.goodput import METHOD as GOODPUT_METHOD
from evidence.attempt.tails import METHOD as TAIL_METHOD
from evidence.attempt.window_blocks import window_metrics
from evidence.comparison.aa import METHOD as AA_METHOD
from evidence.comparison.aa import aa_calibration
from evidence.comparison.arm_totals import arm_totals
from evidence.comparison.arms import arm_entry
from evidence.comparison.attempts import with_standing
from evidence.comparison.caveats import caveats
from evidence.comparison.cells import cell_entry
from evidence.comparison.coverage import coverage, failures, restoration, ticket_refs
from evidence.comparison.fidelity.entries import FIDELITY_METHOD, fidelity_entries
from evidence.comparison.quality import quality_results
from evidence.comparison.read import CampaignInputs
from evidence.comparison.replicates import METHOD as REPLICATE_METHOD
from evidence.comparison.replicates import replicated_ratios
from evidence.comparison.ruling import Replicates, rule_ruling
from evidence.comparison.sequential import sequential_replicates, sequential_view
from evidence.comparison.speculation import spec_pairs
from evidence.folder.layout import AttemptDir
from evidence.stats.bootstrap import PERCENTILE_METHOD, RATIO_METHOD
from faceoff.formats.bundle.comparison import (
    CellEntry,
    Comparison,
    ReplicatedRatio,
    ReviewRef,
    Ruling,
)
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from faceoff.formats.host_posture import LaneGpuPosture, lane_postures, with_lanes
from faceoff.formats.passes import unplanned
from faceoff.formats.reasons import Disposition
from guards.dispositions import pair_view
from guards.host_stall import METHOD as HOST_STALL_METHOD
from matrix.campaign_plan import CellRunKey, plan
from matrix.cell import Cell
from matrix.families import FamilyStatus
from matrix.model import Matrix
from workload.metrics import DEFINITIONS


def build_comparison(
    inputs: CampaignInputs,
    *,
    reviews: Sequence[ReviewRef],
    cells: Sequence[CellEntry] | None = None,
) -> Comparison:
    """``cells``: the entries ``CellEntries`` builds, when the caller built them already."""
    matrix = inputs.frozen.matrix
    order = matrix.arm_order()
    arms = [arm_entry(arm, inputs.lanes.get(arm.name, [])) for arm in order]
    the_plan = plan(matrix).without(unplanned(inputs.passes, matrix.cells))
    cells = list(CellEntries(inputs)) if cells is None else list(cells)
    covered = coverage(the_plan, cells)
    replicated = replicated_ratios(matrix.cells, cells)
    failed = failures(cells, matrix.campaign.name)
    restored = restoration(inputs.receipt)
    not_applicable = {
        f.name: f.not_applicable_reason or "declared not applicable"
        for f in inputs.frozen.registry
        if f.status is FamilyStatus.NOT_APPLICABLE
    }
    fidelity = fidelity_entries(inputs.folder.root, matrix)
    return Comparison(
        campaign=matrix.campaign.name,
        description=matrix.campaign.description,
        matrix_id=inputs.frozen.matrix_id,
        seed=matrix.campaign.seed,
        observed_from=_first_start(inputs),
        observed_to=restored.completed_at,
        arms=arms,
        cells=cells,
        totals=[arm_totals(arm.name, cells) for arm in order],
        coverage=covered,
        failures=failed,
        restoration=restored,
        tickets=ticket_refs(failed, matrix.campaign.name),
        reviews=[with_standing(r, cells) for r in reviews],
        not_applicable=not_applicable,
        caveats=caveats(arms, cells, covered, restored, not_applicable),
        percentile_method=PERCENTILE_METHOD,
        ratio_method=f"{RATIO_METHOD}; {REPLICATE_METHOD}" if replicated else RATIO_METHOD,
        definitions=DEFINITIONS,
        aa=aa_calibration(cells) if matrix.campaign.aa else None,
        instrument_method=f"{HOST_STALL_METHOD}. {AA_METHOD}.",
        quality=quality_results(matrix.quality, matrix.incumbent.name, inputs.quality),
        posture=with_lanes(inputs.posture, _lane_postures(inputs)),
        replicated=replicated,
        goodput_method=GOODPUT_METHOD,
        ruling=_ruling(matrix, cells, replicated, fidelity),
        carried=inputs.carried.view() if inputs.carried else None,
        preflight=list(inputs.preflight),
        pilot=inputs.pilot,
        sequential=sequential_view(matrix, cells, inputs.passes),
        spec_pairs=spec_pairs(cells),
        energy_method=ENERGY_METHOD if any(a.energy for c in cells for a in c.arms) else "",
        tail_method=TAIL_METHOD,
        fidelity=fidelity,
        fidelity_method=FIDELITY_METHOD if matrix.fidelity else "",
    )


class CellEntries:
    """Each cell's entry, built when asked (``entries(cell)``, or in the matrix's order by
    iterating): the audit checks a cell's attempts and then asks for its entry, so that the
    cell's journals and plans are read once for both (``faceoff.recent`` keeps the last
    few), and cells can be handed to separate processes."""

    def __init__(self, inputs: CampaignInputs) -> None:
        self.inputs = inputs
        self.matrix = inputs.frozen.matrix
        self.plan = plan(self.matrix)
        self.dispositions = _dispositions(inputs)
        self.unplanned = unplanned(inputs.passes, self.matrix.cells)

    def __call__(self, cell: Cell) -> CellEntry:
        matrix, inputs = self.matrix, self.inputs
        ours = [p for p in self.plan.pairs if p.cell_id == cell.id]
        return cell_entry(
            cell,
            [p.arm for p in self.plan.arms if cell in p.cells],
            inputs.attempts,
            history=inputs.history,
            pairs=pair_view(ours, self.dispositions, inputs.pairs),
            seed=matrix.campaign.seed,
            root=inputs.folder.root,
            tail_metrics=matrix.rule.tail_metrics() if matrix.rule else (),
            p99_metrics=matrix.rule.tail_metrics("p99") if matrix.rule else (),
            window_metrics=window_metrics(matrix.rule),
        )

    @property
    def cell_ids(self) -> list[str]:
        """The planned cells in matrix order: a sequential cell's passes that never ran are
        not planned (passes.json)."""
        return [c.id for c in self.matrix.cells if c.id not in self.unplanned]

    def __iter__(self) -> Iterator[CellEntry]:
        return (self(c) for c in self.matrix.cells if c.id not in self.unplanned)

    def of(self, cell_id: str) -> CellEntry:
        """The entry of the matrix's cell ``cell_id`` (a walk's ``cells_with_attempts``)."""
        return self(next(c for c in self.matrix.cells if c.id == cell_id))


def cells_with_attempts(
    cell_ids: Sequence[str], attempts: Iterable[AttemptDir]
) -> Iterator[tuple[str | None, list[AttemptDir]]]:
    """Each matrix cell in order with its attempt folders, then (under None) the attempts of
    cells the matrix does not have: the walk of a caller that does something with a cell's
    attempts and then asks ``CellEntries`` for its entry."""
    by_cell: dict[str, list[AttemptDir]] = {}
    for attempt in attempts:
        by_cell.setdefault(attempt.cell_id, []).append(attempt)
    for cell_id in cell_ids:
        yield cell_id, by_cell.pop(cell_id, [])
    if by_cell:
        yield None, [a for found in by_cell.values() for a in found]


def _ruling(
    matrix: Matrix,
    cells: Sequence[CellEntry],
    replicated: Sequence[ReplicatedRatio],
    fidelity: Sequence[FidelityEntry],
) -> Ruling | None:
    if matrix.rule is None:
        return None
    written = {c.id: c.prompt_id for c in matrix.cells}  # a replicate -> the id as written
    candidates = [arm.name for arm in matrix.candidates]
    replicates = sequential_replicates(matrix, cells, Replicates(replicated, written))
    return rule_ruling(matrix.rule, cells, candidates, replicates, fidelity)


def _lane_postures(inputs: CampaignInputs) -> list[LaneGpuPosture]:
    return lane_postures(
        [
            (arm, run.run, run.gpu_posture)
            for arm, runs in inputs.lanes.items()
            for run in runs
            if run.gpu_posture is not None
        ]
    )


def _dispositions(inputs: CampaignInputs) -> dict[CellRunKey, Disposition]:
    return {
        CellRunKey(cell, arm): Disposition(attempt.standing.disposition)
        for (cell, arm), attempt in inputs.attempts.items()
        if attempt.standing.disposition != Disposition.PENDING.value
    }


def _first_start(inputs: CampaignInputs) -> datetime | None:
    starts = [
        run.record.created_at
        for runs in inputs.lanes.values()
        for run in runs
        if run.record is not None
    ]
    return min(starts) if starts else None
