"""The card's tails: inter-token latency per cell and arm, and each p99 with its n and whether
the sample can claim it. Renders ``comparison.json``; computes nothing.
The same concept at another layer: ``evidence.attempt.tails``.
"""

from __future__ import annotations

from evidence.attempt.tails import ITL
from evidence.views.card.markdown import Sources, table
from faceoff import format as fmt
from faceoff.formats.attempt.summary import TailStats
from faceoff.formats.bundle.comparison import ArmCell, CellEntry, Comparison
from faceoff.formats.reasons import Disposition

HEADER = ["cell", "arm", "ITL p50 / p95 / p99 / max", "TTFT p99", "E2E p99", "ITL p99",
          "source"]  # fmt: skip


def section(c: Comparison, sources: Sources) -> str:
    rows = [
        _row(cell, a, sources)
        for cell in c.cells
        for a in cell.arms
        if a.tails and a.disposition is Disposition.ACCEPTED
    ]
    if not rows:
        return "No accepted cell has its tails summarised."
    tail = next(t for cell in c.cells for a in cell.arms for t in a.tails.values())
    note = (
        f"ITL is the gap between two consecutive token-bearing chunks of a request, pooled over "
        f"the cell's requests. A p99 is **claimed** only where its sample is large enough for "
        f"the second-largest value to bound it at {fmt.level(tail.confidence)} confidence "
        f"({tail.p99_floor} values); otherwise it is an **estimate**, shown with its n. ITL "
        "counts chunk gaps, which within one request are not independent."
    )
    return note + "\n\n" + table(HEADER, rows)


def _row(cell: CellEntry, a: ArmCell, sources: Sources) -> list[str]:
    itl = a.tails.get(ITL)
    spread = (
        " / ".join(fmt.seconds(v) for v in (itl.p50, itl.p95, itl.p99, itl.max))
        if itl
        else fmt.MISSING
    )
    files = [a.sources[k] for k in ("summary", "journal") if k in a.sources]
    return [
        cell.id,
        a.arm,
        spread,
        *(p99_words(a.tails.get(name)) for name in ("ttft_s", "e2e_s", ITL)),
        sources.ref(f"cells[{cell.id}].arms[{a.arm}].tails", files),
    ]


def p99_words(tail: TailStats | None) -> str:
    """'1.23 s (n=800, claimed)' or '1.23 s (n=12, estimate)'."""
    if tail is None or tail.p99 is None:
        return fmt.MISSING
    claim = "claimed" if tail.p99_claimed else "estimate"
    return f"{fmt.seconds(tail.p99)} (n={tail.n:,}, {claim})"
