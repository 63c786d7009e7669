"""The card's speculative decoding: draft acceptance per cell and arm beside its decode rate,
and structured decode against prose. Renders ``comparison.json``; computes nothing.
The same concept at another layer: ``collectors.speculation``,
``evidence.comparison.speculation``.
"""

from __future__ import annotations

from evidence.views.card.markdown import Sources, table
from faceoff import format as fmt
from faceoff.formats.bundle.comparison import ArmCell, Comparison, SpecPair
from faceoff.formats.bundle.lane_facts import SpecAcceptance
from faceoff.formats.reasons import Disposition

NOTE = (
    "From the engine's `spec_decode` counter deltas over each cell (warmups included): "
    "acceptance rate = accepted / draft tokens; mean acceptance length = 1 + accepted / "
    "drafts (tokens per verified step, the target's bonus token included); per position = "
    "accepted at that draft position / drafts."
)
PAIR_NOTE = (
    "A draft model guesses predictable text better: each arm's decode_structured cell beside "
    "its decode_prose twin (same input and load)."
)


def words(s: SpecAcceptance | None) -> str:
    """'72.10% accepted, 3.16 tokens/step' (the headline row beside decode)."""
    if s is None:
        return "no speculation"
    if s.acceptance_rate is None or s.mean_acceptance_length is None:
        return "no drafts in the cell"
    return f"{fmt.percent(s.acceptance_rate)} accepted, {s.mean_acceptance_length:.2f} tokens/step"


def per_position(s: SpecAcceptance) -> str:
    return " / ".join(f"{p:.0%}" for p in s.per_position) or fmt.MISSING


HEADER = ["cell", "arm", "acceptance rate", "mean acceptance length", "per position",
          "drafts", "decode p50 tok/s", "source"]  # fmt: skip


def section(c: Comparison, sources: Sources) -> str:
    rows = [
        _row(cell.id, a, sources)
        for cell in c.cells
        for a in cell.arms
        if a.speculation is not None and a.disposition is Disposition.ACCEPTED
    ]
    if not rows:
        return "No arm's engine reported speculative-decoding counters."
    body = NOTE + "\n\n" + table(HEADER, rows)
    if c.spec_pairs:
        body += "\n\n" + PAIR_NOTE + "\n\n" + _pairs(c.spec_pairs)
    return body


def _row(cell: str, a: ArmCell, sources: Sources) -> list[str]:
    s = a.speculation
    assert s is not None
    decode = a.metrics.get("decode_tps")
    files = [a.sources[k] for k in ("telemetry", "engine") if k in a.sources]
    return [
        cell,
        a.arm,
        fmt.percent(s.acceptance_rate),
        fmt.MISSING if s.mean_acceptance_length is None else f"{s.mean_acceptance_length:.2f}",
        per_position(s),
        fmt.count(s.drafts),
        fmt.rate(decode.p50 if decode else None),
        sources.ref(f"cells[{cell}].arms[{a.arm}].speculation", files),
    ]


def _pairs(pairs: list[SpecPair]) -> str:
    rows = [
        [
            p.arm,
            f"{p.structured_cell} / {p.prose_cell}",
            f"{_rate(p.structured)} / {_rate(p.prose)}",
            f"{_length(p.structured)} / {_length(p.prose)}",
            f"{fmt.rate(p.structured_decode_tps)} / {fmt.rate(p.prose_decode_tps)}",
        ]
        for p in pairs
    ]
    header = ["arm", "structured / prose cell", "acceptance rate", "mean acceptance length",
              "decode p50 tok/s"]  # fmt: skip
    return table(header, rows)


def _rate(s: SpecAcceptance | None) -> str:
    return "no speculation" if s is None else fmt.percent(s.acceptance_rate)


def _length(s: SpecAcceptance | None) -> str:
    if s is None or s.mean_acceptance_length is None:
        return fmt.MISSING
    return f"{s.mean_acceptance_length:.2f}"
