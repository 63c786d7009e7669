"""The ``host_stall`` rule: were the scored requests measured while the host could run them?

Two witnesses, both in the host-stall monitor's ``stalls.jsonl``: its own late wake-ups and
the client's CPU wait over the cell window. The cell is blocked when too many scored
requests overlap too much stall, or the client waited too long for a CPU; fewer affected
requests pass *flagged*. Blocked, not failed: a busy host says nothing about the lane, and
it must not trigger the stop policy. The bounds and why: docs/guards.md, "Host stalls".
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.stall_log import StallLog, client_wait_share, overlap_ns
from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.verdict import Evidence, RuleResult
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts
from guards.outcomes import failed, not_evaluated, passed
from matrix.cell import Cell
from matrix.thresholds import Thresholds

MAX_LISTED = 10
CODE = Reason.HOST_STALL
METHOD = (
    "Host stalls: a monitor process beside each cell wakes every 1 ms and records each wake-up "
    "late by stall_threshold_ms or more; it also reads the client's own CPU wait (Linux "
    "schedstat) every 20 ms. A scored request is affected when the stalls inside its send-to-end "
    "span exceed max_request_stall_ms; a cell with more than max_stalled_requests of its "
    "requests affected, or whose client waited for a CPU more than max_client_cpu_wait of the "
    "window, is blocked host_stall (fewer affected requests are flagged, by index)"
)


@dataclass(frozen=True)
class Exposure:
    """How much of each sent scored request the host spent stalled."""

    sent: int
    affected: list[int]  # request indices over the per-request bound
    worst_index: int
    worst_ns: int
    client_wait_share: float | None


def exposure(
    log: StallLog, sent: list[RequestOutcome], art: CellArtifacts, t: Thresholds
) -> Exposure:
    overlaps = {o.index: overlap_ns(log.stalls, o.send_ns or 0, o.end_ns) for o in sent}
    bound = t.max_request_stall_ms * 1e6
    worst = max(overlaps, key=lambda i: overlaps[i])
    window = art.record.window
    wait = client_wait_share(log.client, window.start_ns, window.end_ns) if window else None
    return Exposure(
        sent=len(sent),
        affected=sorted(i for i, ns in overlaps.items() if ns > bound),
        worst_index=worst,
        worst_ns=overlaps[worst],
        client_wait_share=wait,
    )


def host_stall(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    log = art.stalls
    if log is None or log.start is None:
        return not_evaluated(CODE, "no host-stall monitor ran for this cell (no stalls.jsonl)")
    sent = [o for o in art.scored if o.send_ns is not None]
    if not sent:
        return not_evaluated(CODE, "no scored request was sent")
    first_send = min(o.send_ns or 0 for o in sent)
    last_end = max(o.end_ns for o in sent)
    if log.start.started_ns > first_send or log.watched_until(first_send) < last_end:
        return not_evaluated(
            CODE, "the monitor's watch does not span the scored requests (it was killed?)"
        )
    return _judge(exposure(log, sent, art, t), t)


def _judge(e: Exposure, t: Thresholds) -> RuleResult:
    share = len(e.affected) / e.sent
    wait = e.client_wait_share
    evidence: Evidence = {
        "sent": e.sent,
        "affected": len(e.affected),
        "affected_requests": e.affected[:MAX_LISTED],
        "affected_share": round(share, 6),
        "worst_index": e.worst_index,
        "worst_stall_ms": round(e.worst_ns / 1e6, 3),
        "client_cpu_wait_share": None if wait is None else round(wait, 6),
        "max_request_stall_ms": t.max_request_stall_ms,
        "max_stalled_requests": t.max_stalled_requests,
        "max_client_cpu_wait": t.max_client_cpu_wait,
        "flagged": bool(e.affected),
    }
    named = f": requests {e.affected[:MAX_LISTED]}" if e.affected else ""
    wait_text = "unknown" if wait is None else f"{wait:.1%} of the window"
    detail = (
        f"{len(e.affected)} of {e.sent} scored requests overlapped more than "
        f"{t.max_request_stall_ms:g} ms of host stall{named} (worst: request {e.worst_index}, "
        f"{e.worst_ns / 1e6:.0f} ms); the client waited for a CPU {wait_text} (the matrix "
        f"blocks above {t.max_stalled_requests:.0%} of requests or {t.max_client_cpu_wait:.0%} "
        f"CPU wait)"
    )
    if share > t.max_stalled_requests or (wait is not None and wait > t.max_client_cpu_wait):
        return failed(CODE, detail, **evidence)
    return passed(CODE, f"flagged: {detail}" if e.affected else detail, **evidence)
