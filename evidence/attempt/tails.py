"""Tails of one cell attempt: inter-token latency from the chunk times, and the p99s its
sample can claim. Pure.
The same concept at another layer: ``evidence.views.card.tails``.

ITL is the gap between two consecutive token-bearing chunks of one request, as the client
read them off the socket (``chunk_offsets_us``), pooled over the requests a statistic
counts: ``vllm bench serve``'s definition (a chunk that carries several tokens, as under
speculative decoding, is one gap). A p99 is *claimed* only where the sample is large
enough for its second-largest value to bound the 99th percentile from above at the
card's confidence (``evidence.stats.power.tail_floor``: 473 values at 95 %). That bound
counts the values as independent trials; requests measured close together are not
(a stall slows a run of them), so the floor counts independent blocks — the values in
journal order over the block length their dependence asks for
(``evidence.stats.block_length.independent``) — not raw values. A smaller sample's p99 is
shown as an estimate, with its n. An ITL sample counts gaps, which within one request are
not independent: its blocks say so (docs/evidence.md, "Tails").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import pairwise

import numpy as np

from evidence.stats.block_length import independent
from evidence.stats.bootstrap import DEFAULT_CONFIDENCE
from evidence.stats.power import tail_floor
from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.summary import TailStats

ITL = "itl_s"
TAIL_METRICS = ("ttft_s", "e2e_s")  # request metrics whose p99 the card shows beside ITL's
US_PER_S = 1e6
QUANTILES = (0.5, 0.95, 0.99)
METHOD = (
    "ITL = the gap between two consecutive token-bearing chunks of a request (socket-read "
    "times), pooled over the counted scored requests; a p99 is claimed where the sample's "
    "second-largest value bounds the 99th percentile from above at the stated confidence "
    "(binomial order statistics, MLPerf LoadGen's floor) counting independent blocks, not "
    "values (the values in journal order over their Politis–White block length), else it "
    "is an estimate"
)


@cache
def p99_floor(confidence: float = DEFAULT_CONFIDENCE) -> int:
    return tail_floor(0.99, confidence)


def tail_of(values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> TailStats:
    """``values`` may be an ``array('d')`` of millions of chunk gaps: read as one numpy
    array, never as a list of Python floats; percentiles of type 7 (numpy's linear)."""
    found = np.asarray(values, dtype=np.float64)
    floor = p99_floor(confidence)
    p50, p95, p99 = (
        (float(v) for v in np.quantile(found, QUANTILES, method="linear"))
        if len(found)
        else (None, None, None)
    )
    return TailStats(
        n=len(found),
        p50=p50,
        p95=p95,
        p99=p99,
        max=float(found.max()) if len(found) else None,
        confidence=confidence,
        p99_floor=floor,
        p99_claimed=len(found) >= floor and independent(found) >= floor,
    )


def chunk_gaps(outcome: RequestOutcome) -> list[float]:
    """The request's inter-token latencies in seconds: one per pair of consecutive chunks."""
    return [(b - a) / US_PER_S for a, b in pairwise(outcome.chunk_offsets_us)]
