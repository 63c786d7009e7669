"""Admission and delivery: the two parts of a client's timing error, for `fidelity_peers`.

For a client whose send and chunk times are absolute CLOCK_MONOTONIC stamps (faceoff's
perf_counter_ns, the compiled spin reader's), the truth server's records split its error:

- **admission** = the server's arrival of the request − the client's send: the server's
  own queueing, set by its load when the request was sent; no client can fix it;
- **delivery** = the client's date of a content chunk − the server's write of it: how late
  the client noticed bytes already in its socket (the server stamps just after each
  write, so a kernel receive stamp can come out slightly negative).

Each is printed per mode, C and client (p50, p99 of the first and the last token), then
the delivery p99 of faceoff, in each receive mode run (sleep: "faceoff", spin: "faceoff
spin"), as a ratio to the spin reader's (the physical limit), with the target (≤ 2×) and
how many of its first tokens came more than half an inter-token gap late (a chunk dated by
the next one's arrival is a whole gap late).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks.peer_clients import SPIN, Seen
from benchmarks.percentiles import pair, pct

LIMIT = "spin reader"  # benchmarks.spin_reader: the physical limit, never a peer
RATIO_TARGET = 2.0


@dataclass
class Split:
    """One client's admission and delivery errors at one C and mode, in ms."""

    admission_ms: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    last_ms: list[float] = field(default_factory=list)

    def add(self, seen: Seen, truth: dict[str, Any]) -> None:
        if seen.send_ns is None:  # no absolute stamps: no split
            return
        served = truth["chunks_ns"]
        self.admission_ms.append((truth["arrival_ns"] - seen.send_ns) / 1e6)
        self.first_ms.append((seen.send_ns + seen.ttft_s * 1e9 - served[0]) / 1e6)
        self.last_ms.append((seen.send_ns + seen.last_s * 1e9 - served[-1]) / 1e6)


SPLIT_HEADER = (
    "mode       C client          n   admission ms    delivery first   delivery last\n"
    "                                  p50     p99      p50     p99      p50     p99"
)


def split_rows(mode: str, c: int, splits: dict[str, Split]) -> list[str]:
    """One row per client that kept absolute stamps."""
    return [
        f"{mode:8} {c:>3} {name:14} {len(s.first_ms):>4}  {pair(s.admission_ms)}  "
        f"{pair(s.first_ms)}  {pair(s.last_ms)}"
        for name, s in splits.items()
        if s.first_ms
    ]


def late_firsts(s: Split, gap_ms: float) -> int:
    """First tokens delivered more than half an inter-token gap late."""
    return sum(x > gap_ms / 2 for x in s.first_ms)


def delivery_lines(mode: str, c: int, splits: dict[str, Split], gap_ms: float) -> list[str]:
    """Each faceoff receive mode's delivery p99 against the spin reader's, where both ran."""
    limit, lines = splits.get(LIMIT), []
    for name in ("faceoff", SPIN):
        ours = splits.get(name)
        if limit is not None and ours is not None and ours.first_ms:
            lines.append(f"{mode} C{c} " + delivery_line(name, ours, limit, gap_ms))
    return lines


def delivery_line(name: str, ours: Split, limit: Split, gap_ms: float) -> str:
    """``name``'s delivery p99 of the first and last token against the spin reader's."""
    parts = []
    for label, field_name in (("first", "first_ms"), ("last", "last_ms")):
        mine, floor = pct(getattr(ours, field_name), 0.99), pct(getattr(limit, field_name), 0.99)
        if mine is None or floor is None:
            parts.append(f"{label} — (n < 200)")
            continue
        ratio = mine / floor if floor > 0 else float("inf")
        met = "met" if mine <= RATIO_TARGET * max(floor, 0.0) else "MISSED"
        parts.append(f"{label} {mine:.3f} vs {floor:.3f} = {ratio:.2f}× ({met})")
    late = f"{late_firsts(ours, gap_ms)} of {len(ours.first_ms)}"
    return (
        f"delivery p99 ms, {name} vs {LIMIT} (target ≤ {RATIO_TARGET:g}×): "
        + "; ".join(parts)
        + f"; {name} first tokens > ½ gap late: {late}"
    )
