"""``verdict.json``: what the guard decided about one cell attempt, and from what.

A verdict lists every registry family, every validity rule and the disposition, each with
the values it judged, and the sha256 of each native artifact it was computed from, so
``faceoff audit`` can recompute it from those files and compare. It carries no timestamp:
the same inputs give the same verdict, byte for byte.

Format history of ``schema_version``:
  1 — first release.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.formats.reasons import Disposition, Reason
from matrix.families import FamilySource, FamilyStatus

VERDICT_FILE = "verdict.json"

EvidenceValue = int | float | str | bool | list[int] | list[str] | None
Evidence = dict[str, EvidenceValue]


class Presence(StrEnum):
    PRESENT = "present"
    MISSING = "missing"
    NOT_APPLICABLE = "not_applicable"


class FamilyVerdict(Spec):
    name: str = Field(description="Registry name of the family.")
    source: FamilySource = Field(description="The artifact that proves it.")
    status: FamilyStatus = Field(description="required | supplemental | not_applicable (frozen).")
    presence: Presence = Field(description="present | missing | not_applicable.")
    why: str | None = Field(description="Why missing or not applicable; None when present.")
    evidence: Evidence = Field(description="The values the presence rule judged.")

    @property
    def blocks(self) -> bool:
        """A required family that is missing: the cell cannot be accepted."""
        return self.status is FamilyStatus.REQUIRED and self.presence is Presence.MISSING


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "not_applicable"  # the rule does not apply to this cell (e.g. no contract)
    NOT_EVALUATED = "not_evaluated"  # the data it needs is missing; the detail says which


class RuleResult(Spec):
    code: Reason = Field(description="The rule's reason code: the failure it checks for.")
    outcome: Outcome = Field(description="passed | failed | not_applicable | not_evaluated.")
    detail: str = Field(description="One sentence with the values.")
    evidence: Evidence = Field(description="The values the rule judged.")

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED


class Verdict(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Verdict format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id the verdict was judged under.")
    cell_id: str = Field(description="Cell id.")
    arm: str = Field(description="Arm name.")
    attempt: int = Field(ge=1, description="Attempt number of the cell run.")
    families: list[FamilyVerdict] = Field(description="Every registry family, in registry order.")
    rules: list[RuleResult] = Field(description="Every validity rule, in precedence order.")
    disposition: Disposition = Field(description="accepted | failed | blocked.")
    reason: Reason = Field(description="The reason code of the disposition.")
    sentence: str = Field(description="One human sentence with the evidence.")
    inputs: dict[str, str] = Field(
        description="Native artifact file name -> sha256 of its bytes, as read."
    )

    def family(self, name: str) -> FamilyVerdict:
        for fam in self.families:
            if fam.name == name:
                return fam
        raise KeyError(name)

    def rule(self, code: Reason) -> RuleResult:
        for rule in self.rules:
            if rule.code is code:
                return rule
        raise KeyError(code)
