"""Cold start per arm: the first request after a lane start against the warm ones after it.

An engine pays its JIT compilation and graph capture on the first request that has
work; an operator's day-one impression is that request, steady state the others. The
arm's warmups (journaled under its first campaign lane run, never scored) are the
only requests that see it, so they answer it: the first warmup's TTFT against the
median TTFT of the warmups that followed. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from faceoff.formats.attempt.journal import RequestOutcome, Status
from faceoff.formats.bundle.lane_facts import ColdStart
from workload.metrics import ttft


def cold_start(lane_run: str, warmups: Sequence[RequestOutcome], source: str) -> ColdStart | None:
    """None when no warmup ended with a visible token."""
    timed = sorted(
        ((o.send_ns, value) for o in warmups if o.status is Status.OK and o.send_ns is not None
         if (value := ttft(o).value) is not None),
        key=lambda pair: pair[0],
    )  # fmt: skip
    if not timed:
        return None
    later = [v for _, v in timed[1:]]
    return ColdStart(
        lane_run=lane_run,
        first_ttft_s=timed[0][1],
        warm_ttft_p50_s=statistics.median(later) if later else None,
        warm_n=len(later),
        source=source,
    )
