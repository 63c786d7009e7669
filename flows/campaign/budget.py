"""The night's window as a budget: how long the next pass should take, from what the night has
measured, and whether it can finish with the incumbent restored before the budget ends. Pure.

A pass walks each arm in turn: the lane comes up (start, identity, warmups), its cells run,
the lane goes down. What the night measured gives both parts: each cell run's time (the
ledger's start and end of its latest attempt, replicates of a cell sharing their
measurement) and each arm's overhead (its walks' time less their cells'). A cell the night
has not measured yet counts its ``deadline_s``. The restoration brings the incumbent's lane
up again, so it is kept the incumbent's largest overhead; the look that follows the last pass
(reading the night, judging its sequential cells) runs before it, so the time the current
look took is kept too. Estimates are stretched by ``SAFETY``: a pass admitted on an estimate a
quarter short still ends in time.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from faceoff.formats.passes import ArmWalk
from matrix.cell import Cell

SAFETY = 1.25


@dataclass(frozen=True)
class NightSoFar:
    """What the night has measured so far."""

    walks: Sequence[ArmWalk]
    run_seconds: Mapping[tuple[str, str], float]  # (cell id, arm) -> its latest attempt's s
    written: Mapping[str, str]  # cell id -> the id it was written under (replicates share it)

    def cell(self, cell: Cell, arm: str) -> float:
        """The cell's time on the arm: its own, or another replicate's, or its deadline."""
        seen = [s for (c, a), s in self.run_seconds.items()
                if a == arm and self.written.get(c, c) == cell.prompt_id]  # fmt: skip
        return seen[-1] if seen else cell.deadline_s

    def overhead(self, arm: str) -> float | None:
        """The arm's typical walk less its cells (lane up, warmups, lane down); None unseen."""
        spent = self._overheads(arm)
        return max(0.0, statistics.median(spent)) if spent else None

    def restore_reserve(self, incumbent: str) -> float | None:
        """Seconds to keep for restoring the incumbent: its largest overhead, stretched."""
        spent = self._overheads(incumbent)
        return SAFETY * max(spent) if spent else None

    def look_reserve(self, now: datetime) -> float:
        """Seconds to keep for the look after the next pass: this look's (the time since the
        last walk ended, spent reading and judging the night), stretched. The look that ends
        the passes runs before the restoration, so the reserve must hold it too."""
        if not self.walks:
            return 0.0
        since = (now - max(w.ended_at for w in self.walks)).total_seconds()
        return SAFETY * max(0.0, since)

    def _overheads(self, arm: str) -> list[float]:
        return [
            (w.ended_at - w.started_at).total_seconds()
            - sum(self.run_seconds.get((c, arm), 0.0) for c in w.cells)
            for w in self.walks
            if w.arm == arm
        ]


def estimate(work: Sequence[tuple[str, Sequence[Cell]]], measured: NightSoFar) -> float | None:
    """Seconds the pass ``work`` ((arm, cells) in walk order) should take, stretched by
    ``SAFETY``; None while an arm of it has never walked (nothing to estimate from)."""
    total = 0.0
    for arm, cells in work:
        overhead = measured.overhead(arm)
        if overhead is None:
            return None
        total += overhead + sum(measured.cell(c, arm) for c in cells)
    return SAFETY * total


@dataclass(frozen=True)
class Admission:
    fits: bool
    sentence: str  # the numbers either way


def admit(
    needed_s: float | None, reserve_s: float | None, now: datetime, budget_end: datetime | None
) -> Admission:
    """Whether a pass estimated at ``needed_s`` can end, and the incumbent be restored in
    ``reserve_s``, before ``budget_end``."""
    if budget_end is None:
        return Admission(True, "no window or deadline")
    if needed_s is None:
        return Admission(True, "nothing measured yet to estimate it from")
    left = (budget_end - now).total_seconds()
    reserve = reserve_s or 0.0
    said = (
        f"it needs ≈ {_s(needed_s)} (the night's measurements ×{SAFETY:g}) and the "
        f"restoration ≈ {_s(reserve)}; {_s(max(left, 0.0))} are left before {_utc(budget_end)}"
    )
    return Admission(needed_s + reserve <= left, said)


def _s(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 100 else f"{seconds:.1f} s"


def _utc(moment: datetime) -> str:
    return (moment - (moment.utcoffset() or timedelta())).strftime("%Y-%m-%d %H:%M:%S UTC")
