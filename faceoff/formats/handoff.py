"""``handoffs/handoff-<NNN>.json``: what the take-over did to free the GPUs before a run's
first lane, one file per run of the campaign (a resume takes over again): the incumbent's
router drain and the lanes it stopped. Written by ``flows.campaign.takeover``.

Format history of ``HandoffRecord.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.formats.receipt import RouterAction

HANDOFFS_DIR = "handoffs"
HANDOFF_GLOB = "handoff-*.json"


def handoff_name(number: int) -> str:
    """The file name of a campaign's ``number``-th handoff (from 1)."""
    return f"handoff-{number:03d}.json"


class StoppedLane(Spec):
    campaign: str = Field(description="Campaign whose lane it was.")
    arm: str = Field(description="Arm name.")
    run: str = Field(description="Lane run folder name, e.g. restore-001.")
    kind: Literal["container", "process"] = Field(description="Container or host process.")
    ident: str = Field(description="Container id or pid.")
    purpose: str = Field(description="campaign | restore.")


class HandoffRecord(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Handoff record format version.")
    campaign: str = Field(description="Campaign name.")
    incumbent: str = Field(description="Incumbent arm name.")
    at: datetime = Field(description="When the handoff began (UTC).")
    drain: RouterAction | None = Field(description="Router drain; None when the arm has no router.")
    stopped: list[StoppedLane] = Field(description="Lanes stopped or removed to free the GPUs.")
