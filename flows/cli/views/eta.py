"""When a running campaign should be done: its own pace so far, bounded by its deadlines. Pure.

The bound is ``lanes.deadlines.worst_case`` over what is left: each arm with cell runs
left pays its startup and warmups unless one of its cell runs has already finished
in this run, every cell run left pays its deadline, restoration pays the incumbent's
startup and smokes. The pace is this run's elapsed time over the cell runs it has
finished (lane boots and warmups included), times the cell runs left, never above
the bound; the running cell run counts as left less the share of its requests done.
Before a cell run finishes there is no pace, only the bound; once none is left, what
remains is restoration and the bundle.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from flows.cli.views.durations import clock
from lanes.deadlines import smokes_s
from matrix.campaign_plan import CellRunKey, plan
from matrix.model import Matrix


@dataclass(frozen=True)
class Eta:
    remaining_s: float | None  # at this run's pace; None before a cell run finished
    bound_s: float  # by the deadlines of what is left

    @property
    def line(self) -> str:
        bound = f"≤ {clock(self.bound_s)} by the deadlines"
        if self.remaining_s is None:
            return f"ETA {bound}"
        if self.remaining_s == 0:
            return f"ETA: restoration and the bundle ({bound})"
        return f"ETA ~{clock(self.remaining_s)} ({bound})"


def eta(
    matrix: Matrix,
    finished: Collection[CellRunKey],
    *,
    elapsed_s: float,
    finished_here: int,
    running_done: float = 0.0,
) -> Eta:
    """``finished``: cell runs with a final disposition; ``finished_here``: how many of them
    this run finished (a resume's earlier ones took no time of it); ``running_done``: the
    share (0–1) of the running cell run's requests done."""
    left = [key for key in plan(matrix).cell_runs if key not in finished]
    bound = deadline_bound(matrix, finished)
    if finished_here == 0:
        return Eta(None, bound)
    runs_left = max(0.0, len(left) - running_done) if left else 0.0
    return Eta(min(bound, elapsed_s / finished_here * runs_left), bound)


def deadline_bound(matrix: Matrix, finished: Collection[CellRunKey]) -> float:
    total = matrix.incumbent.startup_deadline_s + smokes_s(matrix.incumbent)
    for arm_plan in plan(matrix).arms:
        arm = arm_plan.arm
        left = [c for c in arm_plan.cells if CellRunKey(c.id, arm.name) not in finished]
        if not left:
            continue
        if len(left) == len(arm_plan.cells):  # its lane has not served a cell run yet
            total += arm.startup_deadline_s + (left[0].deadline_s if arm.warmups else 0.0)
        total += sum(c.deadline_s for c in left)
    return total
