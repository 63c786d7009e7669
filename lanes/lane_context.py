"""What a lane needs besides its arm: who starts it, for what, and where it records.

A lane run records under ``<campaign>/lanes/<arm>/<purpose>-<NNN>/``; a new run
never reuses an old folder, so every start of every arm keeps its own evidence.
What a lane keeps writing while it runs (a host process's output, a record of a
stop from outside) goes to the same path under ``<workdir>/.live/`` instead, so a
sealed bundle never changes under a restored incumbent that outlives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from faceoff.formats.lane import LANES_DIR
from faceoff.ports import Clock
from matrix.arm import Arm

LIVE_DIR = ".live"  # <workdir>/.live/<campaign>/lanes/<arm>/<run>/: outside every bundle
LABEL_CAMPAIGN = "faceoff.campaign"
LABEL_ARM = "faceoff.arm"
LABEL_MATRIX = "faceoff.matrix"
LABEL_PURPOSE = "faceoff.purpose"
LABEL_RUN = "faceoff.run"


class LanePurpose(StrEnum):
    CAMPAIGN = "campaign"  # started by the campaign flow to measure the arm
    RESTORE = "restore"  # the incumbent brought back; it outlives faceoff


@dataclass(frozen=True)
class LaneContext:
    """The campaign side of a lane run; built by the flow or by restoration."""

    campaign: str
    matrix_id: str
    purpose: LanePurpose
    run_dir: Path
    environ: Mapping[str, str]
    now: Clock

    @property
    def run(self) -> str:
        return self.run_dir.name

    def labels(self, arm: Arm) -> dict[str, str]:
        """Docker labels that let a later process find this lane without the orchestrator."""
        return {
            LABEL_CAMPAIGN: self.campaign,
            LABEL_ARM: arm.name,
            LABEL_MATRIX: self.matrix_id,
            LABEL_PURPOSE: self.purpose.value,
            LABEL_RUN: self.run,
        }


def arm_lanes_dir(campaign_dir: Path, arm: str) -> Path:
    return Path(campaign_dir) / LANES_DIR / arm


def live_run_dir(run_dir: Path) -> Path:
    """Where the lane run ``<workdir>/<campaign>/lanes/<arm>/<run>`` writes while it runs."""
    run_dir = Path(run_dir)
    campaign_dir = run_dir.parents[2]
    return campaign_dir.parent / LIVE_DIR / campaign_dir.name / run_dir.relative_to(campaign_dir)


def next_run_dir(campaign_dir: Path, arm: str, purpose: LanePurpose) -> Path:
    """Create and return the next unused ``<purpose>-<NNN>`` folder of the arm."""
    parent = arm_lanes_dir(campaign_dir, arm)
    parent.mkdir(parents=True, exist_ok=True)
    taken = [_run_number(p.name, purpose) for p in parent.iterdir() if p.is_dir()]
    number = max([n for n in taken if n is not None], default=0) + 1
    while True:
        path = parent / f"{purpose.value}-{number:03d}"
        try:
            path.mkdir()
        except FileExistsError:  # a concurrent start took it; take the next one
            number += 1
            continue
        return path


def _run_number(name: str, purpose: LanePurpose) -> int | None:
    prefix, _, digits = name.rpartition("-")
    return int(digits) if prefix == purpose.value and digits.isdigit() else None
