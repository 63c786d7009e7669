"""The needle search's bisection, pure: what each probe says, the bounds, the next length.

A probe whose marker came back verbatim raises the verified length; a garbled answer or
a refusal (an HTTP error: the length is beyond the lane) lowers the failed one; a probe
that ended otherwise (timeout, broken stream, cancelled) says nothing either way. The
client's search (``workload.needle_search``) and the attempt summary
(``evidence.attempt.needle_search``) share these, so the summary recomputes what the search saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from faceoff.formats.attempt.journal import RequestOutcome, Status
from matrix.search import NeedleSearch


@dataclass(frozen=True)
class Probe:
    index: int
    target_tokens: int
    input_tokens: int  # the prompt tokens the lane counted
    recalled: bool | None  # None: no answer either way (timeout, broken stream, cancelled)

    @classmethod
    def of(cls, outcome: RequestOutcome) -> Probe:
        return cls(
            outcome.index, outcome.target_input_tokens, outcome.input_tokens, recalled(outcome)
        )


def recalled(outcome: RequestOutcome) -> bool | None:
    """Whether a probe's answer held its marker; a refusal is a miss, other errors say
    nothing about the length."""
    if outcome.status is Status.OK:
        return bool(outcome.marker_found)
    if outcome.status is Status.HTTP_ERROR:
        return False
    return None


def bounds(probes: Sequence[Probe]) -> tuple[int | None, int | None]:
    """The longest input recalled and the shortest missed (None: no such probe)."""
    verified = max((p.input_tokens for p in probes if p.recalled), default=None)
    failed = min((p.input_tokens for p in probes if p.recalled is False), default=None)
    return verified, failed


def next_length(
    verified: int | None, failed: int | None, low: int, high: int, step: int
) -> int | None:
    """The next input target: ``low`` first, then ``high``, then the midpoint of the
    bounds; None once they are within ``step`` (or the low end already fails, or the
    high end already recalls)."""
    if verified is None:
        return low if failed is None else None
    if failed is None:
        return high if verified < high else None
    if failed - verified <= step:
        return None
    return (verified + failed) // 2


def next_target(probes: Sequence[Probe], search: NeedleSearch) -> int | None:
    """The next probe's input target, or None when the search is done or its budget spent."""
    if len(probes) >= search.budget:
        return None
    verified, failed = bounds(probes)
    return next_length(verified, failed, search.low, search.high, search.step)
