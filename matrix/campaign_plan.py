"""The plan a frozen matrix implies: cell runs per arm, pairs, request totals."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from matrix.arm import Arm
from matrix.cell import Cell
from matrix.model import Matrix


@dataclass(frozen=True)
class CellRunKey:
    """One cell on one arm: the unit that gets a disposition."""

    cell_id: str
    arm: str

    def __str__(self) -> str:
        return f"{self.cell_id}/{self.arm}"


@dataclass(frozen=True)
class PairKey:
    """A cell run on the incumbent matched with the same cell on a candidate."""

    cell_id: str
    incumbent: str
    candidate: str


@dataclass(frozen=True)
class ArmPlan:
    arm: Arm
    cells: tuple[Cell, ...]

    @property
    def scored_requests(self) -> int:
        return sum(c.scored_requests for c in self.cells)

    @property
    def warmup_requests(self) -> int:
        return self.arm.warmups + sum(c.warmups for c in self.cells)


@dataclass(frozen=True)
class Plan:
    arms: tuple[ArmPlan, ...]
    pairs: tuple[PairKey, ...]

    @property
    def cell_runs(self) -> tuple[CellRunKey, ...]:
        return tuple(CellRunKey(c.id, p.arm.name) for p in self.arms for c in p.cells)

    def without(self, cell_ids: Collection[str]) -> Plan:
        """The plan less the cells ``cell_ids`` (a sequential cell's passes that never ran)."""
        if not cell_ids:
            return self
        arms = tuple(ArmPlan(p.arm, tuple(c for c in p.cells if c.id not in cell_ids))
                     for p in self.arms)  # fmt: skip
        return Plan(arms, tuple(p for p in self.pairs if p.cell_id not in cell_ids))


def plan(matrix: Matrix) -> Plan:
    arms = tuple(ArmPlan(a, tuple(matrix.cells_for(a))) for a in matrix.arm_order())
    incumbent, *candidates = arms
    pairs = tuple(
        PairKey(cell.id, incumbent.arm.name, cand.arm.name)
        for cand in candidates
        for cell in cand.cells
        if cell in incumbent.cells
    )
    return Plan(arms=arms, pairs=pairs)
