"""The longest a campaign can take by its own deadlines, for ``faceoff validate``. Pure.

Each arm with cells starts once (its startup deadline), runs its warmups under its
first cell's deadline and each cell under that cell's deadline; then restoration
starts the incumbent again and smokes it. A lane that dies and is started again,
the flows' grace periods and the stops come on top.
"""

from __future__ import annotations

from dataclasses import dataclass

from lanes.probes import PROBE_TIMEOUT_S
from matrix.arm import Arm
from matrix.campaign_plan import plan
from matrix.model import Matrix

HOUR_S = 3600.0


@dataclass(frozen=True)
class WorstCase:
    startup_s: float  # every arm with cells, started once
    warmups_s: float  # arm warmups, bounded by the first cell's deadline
    cells_s: float  # every cell run's deadline
    restoration_s: float  # the incumbent's startup again, then its smokes

    @property
    def total_s(self) -> float:
        return self.startup_s + self.warmups_s + self.cells_s + self.restoration_s

    @property
    def sentence(self) -> str:
        parts = [
            f"startup {self.startup_s:,.0f} s",
            f"warmups {self.warmups_s:,.0f} s",
            f"cells {self.cells_s:,.0f} s",
            f"restoration {self.restoration_s:,.0f} s",
        ]
        return (
            f"worst case by the deadlines: {self.total_s / HOUR_S:.1f} h "
            f"({' + '.join(parts)}); restarts of a lane that died and grace periods come on top"
        )


def worst_case(matrix: Matrix) -> WorstCase:
    arms = [p for p in plan(matrix).arms if p.cells]
    return WorstCase(
        startup_s=sum(p.arm.startup_deadline_s for p in arms),
        warmups_s=sum(p.cells[0].deadline_s for p in arms if p.arm.warmups),
        cells_s=sum(c.deadline_s for p in arms for c in p.cells),
        restoration_s=matrix.incumbent.startup_deadline_s + smokes_s(matrix.incumbent),
    )


def smokes_s(arm: Arm) -> float:
    """Every restoration probe timing out: direct smokes, then the router's."""
    json_on = arm.probes.json_smoke
    probes = arm.probes.smoke_requests + (arm.probes.json_smoke_requests if json_on else 0)
    if arm.router is not None:
        probes += arm.router.smoke_requests * (2 if json_on else 1)
    return probes * PROBE_TIMEOUT_S
