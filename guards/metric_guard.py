"""The metric guard: every family of the frozen registry judged over one cell (pure).

The registry (names, sources, required/supplemental/not-applicable) comes from
the frozen matrix, never from this code: a family declared not applicable there
is reported so with the matrix's reason, every other one is judged by its
presence rule. A registry family this version of faceoff has no rule for is an
error, not a silent pass: missing measurements cannot become a complete comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.verdict import FamilyVerdict, Presence
from guards.artifacts import CellArtifacts
from guards.families import PRESENCE_RULES, Found
from matrix.families import FamilySpec, FamilyStatus
from matrix.thresholds import Thresholds


def check_registry(registry: Sequence[FamilySpec]) -> None:
    """Refuse a registry naming a family without a presence rule."""
    unknown = [fam.name for fam in registry if fam.name not in PRESENCE_RULES]
    if unknown:
        raise FaceoffError(
            f"the frozen registry names families this faceoff has no presence rule for: "
            f"{', '.join(unknown)}",
            where="matrix.frozen.json registry",
            fix="upgrade faceoff to the version that froze this matrix",
        )


def judge_family(art: CellArtifacts, fam: FamilySpec, thresholds: Thresholds) -> FamilyVerdict:
    if fam.status is FamilyStatus.NOT_APPLICABLE:
        why = fam.not_applicable_reason or "declared not applicable in the frozen matrix"
        found = Found(Presence.NOT_APPLICABLE, why)
    else:
        found = PRESENCE_RULES[fam.name](art, thresholds)
    return FamilyVerdict(
        name=fam.name,
        source=fam.source,
        status=fam.status,
        presence=found.presence,
        why=found.why,
        evidence=found.evidence,
    )


def metric_guard(
    art: CellArtifacts, registry: Sequence[FamilySpec], thresholds: Thresholds
) -> list[FamilyVerdict]:
    """Every registry family, in registry order, as present / missing / not applicable."""
    check_registry(registry)
    return [judge_family(art, fam, thresholds) for fam in registry]
