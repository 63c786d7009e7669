"""The card's "Prefix reuse" section: for each dataset or trace cell, one line with the reuse
its plan expected offline beside each arm's measured prefix-cache hit ratio. A renderer of
``comparison.json``'s cell ``reuse``: it computes nothing.
The same concept at another layer: ``evidence.comparison.reuse``.
"""

from __future__ import annotations

from evidence.views.card.markdown import Sources
from faceoff.format import join_words
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.bundle.prefix_reuse import ArmHits, PrefixReuse

NOTE = (
    "A trace's reuse is computed offline from its records' hash_ids: the prompt tokens an "
    "earlier record already computed, which an engine with an unbounded prefix cache would "
    "hit. Each arm's hit ratio is its engine's prefix_cache_hits / prefix_cache_queries "
    "deltas over the cell (exact counters only)."
)


def sections(c: Comparison, sources: Sources) -> list[str]:
    """The section, or none when no cell's prompts come from a dataset or a trace."""
    lines = [line(cell.id, cell.reuse, sources) for cell in c.cells if cell.reuse is not None]
    if not lines:
        return []
    return ["## Prefix reuse\n\n" + NOTE + "\n\n" + "\n".join(lines)]


def line(cell_id: str, reuse: PrefixReuse, sources: Sources) -> str:
    """The cell's line: what the plan expected, then each arm's ratio, then its source."""
    ref = sources.ref(f"cells[{cell_id}].reuse", reuse.sources)
    measured = join_words([_arm(a) for a in reuse.arms], "and")
    said = f"{_expected(reuse)}; prefix-cache hit ratio {measured}"
    return f"- **{cell_id}** ({reuse.source}): {said} {ref}."


def _expected(reuse: PrefixReuse) -> str:
    if reuse.source == "dataset":
        return "planned: no offline reuse (computed for traces only)"
    if reuse.expected is None or reuse.hit_tokens is None or reuse.input_tokens is None:
        return "planned: no offline reuse recorded"
    return (
        f"planned {reuse.expected:.1%} offline ({reuse.hit_tokens:,} of "
        f"{reuse.input_tokens:,} prompt tokens)"
    )


def _arm(hits: ArmHits) -> str:
    if hits.queries == 0:  # vLLM without prefix caching looks nothing up
        return f"{hits.arm} none (0 tokens queried)"
    if hits.ratio is None or hits.hits is None or hits.queries is None:
        return f"{hits.arm} not measured (no exact prefix-cache counters)"
    return f"{hits.arm} {hits.ratio:.1%} ({hits.hits:,.0f} of {hits.queries:,.0f} tokens hit)"
