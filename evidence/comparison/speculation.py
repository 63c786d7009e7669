"""Speculative decoding by content: each arm's decode_structured cell beside its
decode_prose twin. Pure.

A draft model guesses predictable text (JSON, code) better than prose, so the probe pair
is reported side by side: the twin of ``decode_structured-<input>-<load>`` is
``decode_prose-<input>-<load>`` (the same input target, load and replicate), and each arm
accepted in both shows its acceptance and decode rate in each.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.comparison.model import ArmCell, CellEntry, SpecPair
from guards.reasons import Disposition
from matrix.cell import WorkloadKind

STRUCTURED, PROSE = WorkloadKind.DECODE_STRUCTURED.value, WorkloadKind.DECODE_PROSE.value


def spec_pairs(cells: Sequence[CellEntry]) -> list[SpecPair]:
    """Per structured cell with a prose twin, per arm that has both: in matrix order."""
    by_id = {c.id: c for c in cells}
    found = []
    for cell in cells:
        twin = by_id.get(cell.id.replace(STRUCTURED, PROSE, 1))
        if cell.kind != STRUCTURED or twin is None or twin.kind != PROSE:
            continue
        prose = {a.arm: a for a in twin.arms if _accepted(a)}
        found += [
            _pair(cell.id, twin.id, arm, prose[arm.arm])
            for arm in cell.arms
            if arm.arm in prose and _accepted(arm)
        ]
    return found


def _pair(structured_cell: str, prose_cell: str, structured: ArmCell, prose: ArmCell) -> SpecPair:
    return SpecPair(
        arm=structured.arm,
        structured_cell=structured_cell,
        prose_cell=prose_cell,
        structured=structured.speculation,
        prose=prose.speculation,
        structured_decode_tps=_decode_p50(structured),
        prose_decode_tps=_decode_p50(prose),
    )


def _accepted(arm: ArmCell) -> bool:
    return arm.disposition is Disposition.ACCEPTED


def _decode_p50(arm: ArmCell) -> float | None:
    stats = arm.metrics.get("decode_tps")
    return stats.p50 if stats else None
