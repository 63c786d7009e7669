"""A needle search's answer in its attempt summary: each probe, and the bounds they set. Pure.
The same concept at another layer: ``workload.needle_search``.

The probes' lines (phase ``probe``) are no latency samples: the summary's statistics
leave them out, and this is what they say instead, recomputed from the journal with
the bounds the client's search used (``workload.needle_bounds``).
"""

from __future__ import annotations

from collections.abc import Sequence

from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.summary import SearchProbe, SearchSummary
from workload.needle_bounds import Probe, bounds, recalled


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
