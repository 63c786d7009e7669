"""Per-arm totals across accepted cells: the card's campaign-level rows. Pure.

Extremes are taken over single cells and single devices and name the cell they
come from; nothing is summed across devices, and only counts are summed across
cells.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from faceoff.formats.bundle.comparison import ArmCell, ArmTotals, CellEntry
from faceoff.formats.reasons import Disposition


def arm_totals(arm: str, cells: Sequence[CellEntry]) -> ArmTotals:
    runs = [(c.id, a) for c in cells for a in c.arms if a.arm == arm]
    accepted = [(cid, a) for cid, a in runs if a.disposition is Disposition.ACCEPTED]
    pool = next(
        (
            (cid, a.engine.kv_pool_tokens)
            for cid, a in accepted
            if a.engine and a.engine.kv_pool_tokens
        ),
        (None, None),
    )
    used = _extreme(accepted, lambda a: a.memory.worst_gpu_used_bytes if a.memory else None, max)
    free = _extreme(accepted, lambda a: a.memory.min_gpu_free_bytes if a.memory else None, min)
    lane = _extreme(accepted, lambda a: a.memory.lane_peak_bytes if a.memory else None, max)
    return ArmTotals(
        arm=arm,
        kv_pool_tokens=pool[1],
        kv_pool_cell=pool[0],
        worst_gpu_used_bytes=used[1],
        worst_gpu_cell=used[0],
        min_gpu_free_bytes=free[1],
        min_gpu_free_cell=free[0],
        lane_peak_bytes=lane[1],
        lane_peak_cell=lane[0],
        scored_ok=sum(a.statuses.get("ok", 0) for _, a in accepted),
        oom_cells=sum(1 for _, a in runs if a.oom),
        preemptions=sum(a.engine.preemptions or 0 for _, a in accepted if a.engine),
        refusals=sum(a.refusals for _, a in accepted),
    )


def _extreme(
    runs: Sequence[tuple[str, ArmCell]],
    value: Callable[[ArmCell], int | None],
    pick: Callable[..., tuple[int, str]],
) -> tuple[str | None, int | None]:
    present = [(v, cid) for cid, a in runs if (v := value(a)) is not None]
    if not present:
        return None, None
    chosen, cell = pick(present, key=lambda p: p[0])
    return cell, chosen
