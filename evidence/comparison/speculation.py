"""Speculative decoding by content: each arm's decode_structured cell beside its
decode_prose twin. Pure.
The same concept at another layer: ``collectors.speculation``,
``evidence.views.card.speculation``.

A draft model guesses predictable text (JSON, code) better than prose, so the probe pair
is reported side by side: the n-th decode_structured cell of an input target and load is
paired with the n-th decode_prose cell of the same input target and load (a replicated
cell's replicates pair in order), and each arm accepted in both shows its acceptance and
decode rate in each.
"""

from __future__ import annotations

from collections.abc import Sequence

from faceoff.formats.bundle.comparison import ArmCell, CellEntry, SpecPair
from faceoff.formats.reasons import Disposition
from matrix.cell import WorkloadKind

STRUCTURED, PROSE = WorkloadKind.DECODE_STRUCTURED.value, WorkloadKind.DECODE_PROSE.value


def spec_pairs(cells: Sequence[CellEntry]) -> list[SpecPair]:
    """Per structured cell with a prose twin, per arm accepted in both: in matrix order."""
    twins = _by_load(cells, PROSE)
    found = []
    for key, structured in _by_load(cells, STRUCTURED).items():
        for cell, twin in zip(structured, twins.get(key, []), strict=False):
            prose = {a.arm: a for a in twin.arms if _accepted(a)}
            found += [
                _pair(cell.id, twin.id, arm, prose[arm.arm])
                for arm in cell.arms
                if arm.arm in prose and _accepted(arm)
            ]
    return found


def _by_load(cells: Sequence[CellEntry], kind: str) -> dict[str, list[CellEntry]]:
    """The cells of ``kind`` by input target and load (their stratum past the kind)."""
    found: dict[str, list[CellEntry]] = {}
    for cell in cells:
        if cell.kind == kind:
            found.setdefault(cell.stratum.split("/", 1)[1], []).append(cell)
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
