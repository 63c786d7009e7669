"""A needle search's answer in its attempt summary: each probe, and the bounds they set. Pure.
The same concept at another layer: ``workload.needle_search``.

The probes' lines (phase ``probe``) are no latency samples: the summary's statistics
leave them out, and this is what they say instead, recomputed from the journal with
the bounds the client's search used (``workload.needle_bounds``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from faceoff.artifact import Spec
from faceoff.formats.attempt.journal import RequestOutcome
from workload.needle_bounds import Probe, bounds, recalled


class SearchProbe(Spec):
    index: int = Field(description="Probe number, from 0, in the order sent.")
    target_input_tokens: int = Field(description="Input target the bisection asked for.")
    input_tokens: int = Field(description="Prompt tokens the lane counted.")
    status: str = Field(description="Terminal status of the probe's request.")
    recalled: bool | None = Field(
        description="The marker came back verbatim; False: garbled or refused; None: no answer."
    )


class SearchSummary(Spec):
    probes: list[SearchProbe] = Field(description="Every probe, in the order sent.")
    verified_tokens: int | None = Field(
        description="Longest input (lane tokens) whose marker came back; None: none did."
    )
    failed_tokens: int | None = Field(
        description="Shortest input that missed; None: every answered probe recalled."
    )
    resolution_tokens: int | None = Field(
        description="failed − verified: how precisely the search bracketed the edge."
    )


def search_summary(lines: Sequence[RequestOutcome]) -> SearchSummary:
    """The search's probes and bounds, from its probe lines."""
    ordered = sorted(lines, key=lambda o: o.index)
    verified, failed = bounds([Probe.of(o) for o in ordered])
    return SearchSummary(
        probes=[_probe(o) for o in ordered],
        verified_tokens=verified,
        failed_tokens=failed,
        resolution_tokens=None if verified is None or failed is None else failed - verified,
    )


def _probe(outcome: RequestOutcome) -> SearchProbe:
    return SearchProbe(
        index=outcome.index,
        target_input_tokens=outcome.target_input_tokens,
        input_tokens=outcome.input_tokens,
        status=outcome.status.value,
        recalled=recalled(outcome),
    )
