"""Requests grouped by the role they play in their cell's pattern, and the counted set.

A head-of-line cell mixes one long cold prefill with short requests queued behind
it, a session-reuse cell first and second turns: pooled, their distributions
describe neither. Statistics are therefore also taken role by role, wherever a cell
has more than one role. Which requests a statistic counts is decided here too:
scored requests that ended ``ok``, and those that stopped at ``max_tokens`` unasked
when the cell's ``length_finishes`` rule includes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from faceoff.formats.attempt.journal import Phase, RequestOutcome, RequestRole, Status
from matrix.cell import LengthRule


def counted_statuses(length_rule: LengthRule) -> frozenset[Status]:
    """The terminal statuses of the scored requests a statistic counts."""
    if length_rule == "include":
        return frozenset({Status.OK, Status.LENGTH_LIMIT})
    return frozenset({Status.OK})


def counted(outcomes: Iterable[RequestOutcome], length_rule: LengthRule) -> list[RequestOutcome]:
    """The scored requests a statistic counts, in journal order."""
    statuses = counted_statuses(length_rule)
    return [o for o in outcomes if o.phase is Phase.SCORED and o.status in statuses]


def length_limited(outcomes: Sequence[RequestOutcome]) -> int:
    """Scored requests that stopped at max_tokens without having asked for it."""
    return sum(1 for o in outcomes if o.phase is Phase.SCORED and o.status is Status.LENGTH_LIMIT)


def by_role(outcomes: Sequence[RequestOutcome]) -> dict[RequestRole, list[RequestOutcome]]:
    """The requests of each role, roles in their enum order; empty when there is one role."""
    groups = {role: [o for o in outcomes if o.role is role] for role in RequestRole}
    present = {role: group for role, group in groups.items() if group}
    return present if len(present) > 1 else {}


def by_stream(outcomes: Sequence[RequestOutcome]) -> dict[int, list[RequestOutcome]]:
    """The requests of each closed-loop stream, streams in order."""
    streams: dict[int, list[RequestOutcome]] = {}
    for outcome in sorted(outcomes, key=lambda o: (o.stream, o.index)):
        streams.setdefault(outcome.stream, []).append(outcome)
    return streams
