"""``pilot/pilot.json``: what the pilot found, one request of each cell contract on every arm
before the scored cells, and the cell runs it blocked. Written by ``flows.campaign.pilot``
from the requests it judged (``evidence.attempt.pilot``).

Format history of ``PilotRecord.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

PILOT_DIR = "pilot"
PILOT_FILE = "pilot.json"


class PilotMode(StrEnum):
    ON = "on"  # failing cells are blocked pilot_failed; the rest run
    STRICT = "strict"  # any failure stops the campaign before its scored cells


class PilotLane(Spec):
    arm: str = Field(description="The arm whose lane the pilot ran on.")
    lane_run: str = Field(description="Its lane run folder, bundle-relative.")
    reason: str | None = Field(description="Why it could not serve the pilot; None: it did.")


class PilotProbe(Spec):
    arm: str = Field(description="The arm that answered.")
    cell_id: str = Field(description="The cell whose prompts the request carried.")
    contract: str = Field(description="The contract in words: kind and output contract.")
    contract_cells: list[str] = Field(description="Every cell of that contract on this arm.")
    input_tokens: int | None = Field(description="Prompt tokens by the lane's /tokenize.")
    status: str = Field(description="The request's terminal status, or not_run.")
    finish_reason: str | None = Field(description="finish_reason the stream ended with.")
    output_words: int | None = Field(description="Words of visible content.")
    failure: str | None = Field(description="What breaks the cell's judging; None: it passed.")
    folder: str = Field(description="pilot/<arm>/<cell>, bundle-relative.")


class PilotBlock(Spec):
    cell_id: str = Field(description="The blocked cell.")
    arm: str = Field(description="The arm it is blocked on.")
    reason_code: Literal["pilot_failed", "stop_policy"] = Field(
        description="pilot_failed; stop_policy: the rest of a strict pilot's stop."
    )
    sentence: str = Field(description="Why, as its verdict says it.")


class PilotRecord(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Pilot record format version.")
    mode: PilotMode = Field(description="on, or strict: a failure stops the campaign.")
    at: datetime = Field(description="When the pilot began (UTC).")
    lanes: list[PilotLane] = Field(description="The lane run of each arm piloted, in order.")
    probes: list[PilotProbe] = Field(description="Every pilot request, in the order sent.")
    blocked: list[PilotBlock] = Field(description="Cell runs blocked before the scored cells.")
    stopped: bool = Field(description="Strict, and something failed: no scored cell ran.")

    @property
    def failures(self) -> list[PilotProbe]:
        return [p for p in self.probes if p.failure is not None]

    @property
    def sentence(self) -> str:
        contracts = len({(p.arm, p.contract) for p in self.probes})
        said = f"the pilot sent {len(self.probes)} request(s) over {contracts} arm contract(s)"
        lanes = [f"{lane.arm}'s lane could not serve it" for lane in self.lanes if lane.reason]
        if not self.failures and not lanes:
            return f"{said}; every one passed"
        ending = (
            "the strict pilot stopped the campaign before its scored cells"
            if self.stopped
            else f"{len(self.blocked)} cell run(s) blocked pilot_failed before the scored cells"
        )
        return "; ".join([said, *lanes, *self._failed_contracts(), ending])

    def _failed_contracts(self) -> list[str]:
        """Each contract that failed, the arms it failed on and its first failure."""
        by_contract: dict[str, list[PilotProbe]] = {}
        for probe in self.failures:
            by_contract.setdefault(probe.contract, []).append(probe)
        return [
            f"{contract} failed on {' and '.join(dict.fromkeys(p.arm for p in found))} "
            f"({found[0].cell_id}: {found[0].failure})"
            for contract, found in by_contract.items()
        ]
