"""The needle rule: a cell whose scored requests do not recall their marker fails.

A needle request's answer is compared with its planted marker by the client
(``marker_found``); the rule counts the scored requests that ended and missed it,
and fails the cell when their share exceeds the matrix's ``needle_max_missed``. A needle
search is looking for where the misses begin, so the rule does not apply to it.
"""

from __future__ import annotations

from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.verdict import RuleResult
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts
from guards.outcomes import judged, not_applicable, not_evaluated
from matrix.cell import Cell, WorkloadKind
from matrix.thresholds import Thresholds

MAX_LISTED = 10
SEARCH_MISSES = (
    "a needle_search cell misses its marker beyond its answer by design: its misses bound "
    "the longest verified length, they fail nothing"
)


def needle(art: CellArtifacts, cell: Cell, t: Thresholds) -> RuleResult:
    code = Reason.NEEDLE_MISSED
    if cell.kind is WorkloadKind.NEEDLE_SEARCH:
        return not_applicable(code, SEARCH_MISSES)
    planted = [o for o in art.scored if o.marker_expected is not None]
    if not planted:
        return not_applicable(code, f"a {cell.kind.value} cell plants no needle marker")
    answered = [o for o in planted if o.marker_found is not None]
    if not answered:
        return not_evaluated(code, "no scored needle request ran to an answer")
    missed = [o for o in answered if not o.marker_found]
    share = len(missed) / len(answered)
    return judged(
        code,
        share <= t.needle_max_missed,
        f"{len(missed)} of {len(answered)} scored needle requests missed the marker "
        f"({share:.0%}; the matrix allows {t.needle_max_missed:.0%})" + _first(missed),
        answered=len(answered),
        missed=len(missed),
        missed_indices=[o.index for o in missed][:MAX_LISTED],
        needle_max_missed=t.needle_max_missed,
    )


def _first(missed: list[RequestOutcome]) -> str:
    if not missed:
        return ""
    first = missed[0]
    return (
        f"; first: request {first.index} expected {first.marker_expected}, answered "
        f"{first.output_excerpt[:80]!r}"
    )
