"""``passes.json``: the passes a campaign ran, the ones it did not and why, and its budget.
The same concept at another layer: ``evidence.audit.passes``, ``flows.campaign.passes``.

A campaign with sequential cells (``replicates = "auto"``) or a night's window
(``[campaign] window`` / ``deadline``) decides between passes what the next one runs
(``flows.campaign.passes``): a sequential cell's later replicates run only while the rule's
criteria in it are undecided, and no pass starts that its estimated time cannot finish
before the budget ends, the incumbent's restoration reserved. The flow writes this record
after every pass; the comparison reads it to leave out the replicates that never needed
to run (they are not part of the plan) and to say on the card why each cell stopped. What
the evidence decided can be recomputed from the bundle; what the clock decided is
recorded here with the estimate it rested on.

Format history of ``PassRecord.schema_version``:
  1 — first release.
  2 — a skip's ``reason`` may be ``futile``; version 1 files read unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from matrix.cell import Cell

PASSES_FILE = "passes.json"
SkipReason = Literal["decided", "futile", "budget"]


class ArmWalk(Spec):
    arm: str = Field(description="The arm whose lane ran the pass's cells.")
    started_at: datetime = Field(description="When its walk began (UTC).")
    ended_at: datetime = Field(description="When its lane was down again (UTC).")
    cells: list[str] = Field(description="Cell ids it walked, in order.")


class PassEntry(Spec):
    index: int = Field(ge=1, description="Pass number; replicate k runs in pass k.")
    estimated_s: float | None = Field(
        description="Seconds the pass was estimated to take when it was admitted (None for a "
        "pass admitted before anything was measured, or without a budget)."
    )
    walks: list[ArmWalk] = Field(description="Each arm's walk of the pass, in order.")


class SkippedCells(Spec):
    index: int = Field(ge=1, description="The pass they would have run in.")
    cells: list[str] = Field(description="Cell ids not run, on any arm.")
    reason: SkipReason = Field(
        description="decided: the sequential cell's criteria were decided (or its candidates "
        "were); futile: those left undecided stopped for futility (no decision plausible in "
        "the passes left); budget: the pass could not finish before the budget ends."
    )
    sentence: str = Field(description="Why, with the numbers.")


class PassRecord(Artifact):
    schema_version: Literal[1, 2] = Field(default=2, description="passes.json format version.")
    campaign: str = Field(description="Campaign name.")
    budget_end: datetime | None = Field(
        description="When the campaign must be over, incumbent restored (matrix.night_window); "
        "None without a window or deadline."
    )
    restore_reserve_s: float | None = Field(
        description="Seconds kept at the last admission after its pass: the look that "
        "follows it and the incumbent's restoration."
    )
    passes: list[PassEntry] = Field(description="The passes run, in order.")
    skipped: list[SkippedCells] = Field(description="Cells of later passes that never ran.")
    stop: str | None = Field(description="Why the campaign ran no further pass, in words.")

    def skipped_cells(self) -> set[str]:
        return {c for s in self.skipped for c in s.cells}


def read_passes(root: Path) -> PassRecord | None:
    """The bundle's ``passes.json``; None for a campaign that decided nothing between passes."""
    path = Path(root) / PASSES_FILE
    return PassRecord.read(path) if path.is_file() else None


def unplanned(record: PassRecord | None, cells: Sequence[Cell]) -> set[str]:
    """The sequential replicates that never ran, for either reason: optional looks of a
    design, so no longer part of the plan (a budget-skipped cell that is not one stays
    planned, and pending)."""
    if record is None:
        return set()
    skipped = record.skipped_cells()
    return {c.id for c in cells if c.sequential} & skipped
