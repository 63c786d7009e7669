"""A sourced cell's prefix reuse: what the plan expected offline beside what each arm's engine
hit. Pure but for the plan, read lazily (``AttemptInputs.plan_source``), as a journal is.
The same concept at another layer: ``evidence.views.card.reuse``.

A trace cell's plan computes its reuse offline from the records' ``hash_ids``
(``workload.traffic.trace_text.offline_reuse``, ``requests.json``: ``source.reuse``): the
prompt tokens an earlier scored record already computed, which an engine with an unbounded
prefix cache would hit. Each arm's measured hit ratio is the engine's
``prefix_cache_hits`` / ``prefix_cache_queries`` deltas over the cell (``telemetry.json``,
from the engine samples), read only where both counters are exact. A dataset's plan computes
no reuse (its rows share what their texts share); its arms' ratios are shown alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evidence.comparison.read import AttemptInputs
from faceoff.formats.attempt.request_plan import PLAN_NAME, TraceSource
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.formats.bundle.prefix_reuse import ArmHits, PrefixReuse
from matrix.cell import Cell

SOURCED = frozenset({"dataset", "trace"})


def prefix_reuse(
    cell: Cell, attempts: Sequence[tuple[str, AttemptInputs | None]], root: Path
) -> PrefixReuse | None:
    """``attempts``: each arm's standing attempt (None: not run), in arm order; None for a
    cell whose prompts are not sourced."""
    if cell.kind.value not in SOURCED:
        return None
    ran = [a for _, a in attempts if a is not None]
    planned = ran[0].plan_source() if ran else None  # the same rows on every arm (pair guard)
    reuse = planned.reuse if isinstance(planned, TraceSource) else None
    files = [
        f"{a.where.relative(root)}/{name}"
        for a in ran
        for name in (PLAN_NAME, TELEMETRY_FILE)
        if (a.where.path / name).is_file()
    ]
    return PrefixReuse(
        source="trace" if cell.kind.value == "trace" else "dataset",
        expected=reuse.ratio if reuse else None,
        hit_tokens=reuse.hit_tokens if reuse else None,
        input_tokens=reuse.input_tokens if reuse else None,
        arms=[_arm_hits(arm, a.telemetry if a else None) for arm, a in attempts],
        sources=files,
    )


def _arm_hits(arm: str, telemetry: TelemetrySummary | None) -> ArmHits:
    counters = telemetry.engine.counters if telemetry else {}
    hits, queries = counters.get("prefix_cache_hits"), counters.get("prefix_cache_queries")
    return ArmHits(
        arm=arm,
        ratio=hit_ratio(telemetry),
        hits=hits.delta if hits and hits.exact else None,
        queries=queries.delta if queries and queries.exact else None,
    )


def hit_ratio(telemetry: TelemetrySummary | None) -> float | None:
    """prefix_cache_hits / prefix_cache_queries deltas over the cell, when both are exact."""
    if telemetry is None:
        return None
    counters = telemetry.engine.counters
    hits, queries = counters.get("prefix_cache_hits"), counters.get("prefix_cache_queries")
    if hits is None or queries is None or not (hits.exact and queries.exact) or queries.delta <= 0:
        return None
    return hits.delta / queries.delta
