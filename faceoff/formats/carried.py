"""``carried.json``: the cells a successor campaign carried over from a closed campaign, the
hashes of what it copied, and why every other cell was measured afresh.
The same concept at another layer: ``evidence.audit.carried``, ``evidence.views.card.carried``.

The flow writes it once, when the successor opens (``flows.campaign.succession``); the comparison
shows it (``Carryover``) and the audit verifies it against the source bundle
(``evidence.audit.carried``).

Format history of ``CarriedRecord.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

CARRIED_FILE = "carried.json"
CARRIED_DIR = "carried"  # carried/<source>/matrix.frozen.json: the source's frozen matrix


class CarriedRun(Spec):
    arm: str
    attempt: int = Field(ge=1, description="The source's standing attempt, copied as such.")
    reason_code: str | None = Field(description="Its disposition's reason code in the source.")
    started_at: datetime | None = Field(description="When it began in the source (UTC).")


class CarriedCell(Spec):
    cell_id: str
    cell_key: str = Field(description="sha256 of the cell's frozen content in both matrices.")
    runs: list[CarriedRun] = Field(description="Every arm's run of the cell, accepted there.")


class FreshCell(Spec):
    cell_id: str
    reason: str = Field(description="Why it could not be carried over, so it runs here.")


class Carryover(Spec):
    """What comparison.json says of a successor's carried-over cells."""

    source: str = Field(description="The closed campaign the cells were carried from.")
    source_matrix_id: str = Field(description="Its frozen matrix id.")
    cells: list[CarriedCell] = Field(description="Carried over: measured there, not here.")
    fresh: list[FreshCell] = Field(description="Measured here, each with why.")


class CarriedRecord(Artifact):
    schema_version: Literal[1] = Field(default=1, description="carried.json format version.")
    campaign: str = Field(description="The successor campaign.")
    source: str = Field(description="The closed campaign (matrix campaign.successor_of).")
    source_matrix_id: str = Field(description="Its frozen matrix id.")
    source_bundle: str = Field(description="Where its bundle was when the cells were copied.")
    source_frozen: str = Field(description="Its matrix.frozen.json, copied here (bundle path).")
    cells: list[CarriedCell] = Field(description="The cells carried over, in matrix order.")
    fresh: list[FreshCell] = Field(description="The cells measured afresh, in matrix order.")
    files: dict[str, str] = Field(
        description="Bundle path -> sha256 in the source's SHA256SUMS of every file copied "
        "(attempt folders, the lane runs they ran on, the source's frozen matrix)."
    )

    def carried_run(self, cell_id: str, arm: str, attempt: int) -> bool:
        return any(
            c.cell_id == cell_id and (arm, attempt) == (r.arm, r.attempt)
            for c in self.cells
            for r in c.runs
        )

    def view(self) -> Carryover:
        return Carryover(source=self.source, source_matrix_id=self.source_matrix_id,
                         cells=self.cells, fresh=self.fresh)  # fmt: skip


def read_carried(root: Path) -> CarriedRecord | None:
    """The bundle's ``carried.json``; None for a campaign that carried nothing over."""
    path = Path(root) / CARRIED_FILE
    return CarriedRecord.read(path) if path.is_file() else None


def source_frozen_name(source: str) -> str:
    return f"{CARRIED_DIR}/{source}/matrix.frozen.json"
