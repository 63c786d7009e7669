"""Speculative-decoding acceptance of one cell, from its engine counter deltas (pure).
The same concept at another layer: ``evidence.comparison.speculation``,
``evidence.views.card.speculation``.

vLLM counts, per engine step and request that carried draft tokens: one *draft*, its
*draft tokens*, the *accepted* ones, and per draft position whether that position was
accepted (``vllm/v1/spec_decode/metrics.py``). Over a cell, from the counters' deltas
between the baseline and the final engine sample:

- acceptance rate = accepted tokens / draft tokens;
- mean acceptance length = 1 + accepted tokens / drafts (vLLM's convention: the bonus
  token the target model adds to every step is included);
- acceptance at position i = accepted at i / drafts.

A cell without drafts (no speculative decoding, or none in the window) has no rates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from faceoff.formats.attempt.telemetry import CounterDelta
from faceoff.formats.bundle.lane_facts import SpecAcceptance

DRAFTS = "spec_decode_num_drafts"
DRAFT_TOKENS = "spec_decode_num_draft_tokens"
ACCEPTED = "spec_decode_num_accepted_tokens"
PER_POSITION = re.compile(r'^spec_decode_num_accepted_tokens_per_pos\{position="(\d+)"\}$')


def spec_acceptance(counters: Mapping[str, CounterDelta]) -> SpecAcceptance | None:
    """The cell's acceptance, or None where the engine exposes no speculative counters."""
    if DRAFTS not in counters:
        return None
    drafts, drafted = counters[DRAFTS].delta, _delta(counters, DRAFT_TOKENS)
    accepted = _delta(counters, ACCEPTED)
    positions = sorted(
        (int(m.group(1)), delta.delta)
        for key, delta in counters.items()
        if (m := PER_POSITION.match(key))
    )
    used = [DRAFTS, DRAFT_TOKENS, ACCEPTED, *(k for k in counters if PER_POSITION.match(k))]
    why = sorted(
        {d.why_inexact or "inexact" for k in used if (d := counters.get(k)) and not d.exact}
    )
    return SpecAcceptance(
        drafts=drafts,
        draft_tokens=drafted,
        accepted_tokens=accepted,
        acceptance_rate=accepted / drafted if drafted > 0 else None,
        mean_acceptance_length=1 + accepted / drafts if drafts > 0 else None,
        per_position=[at / drafts for _, at in positions] if drafts > 0 else [],
        exact=not why,
        why_inexact="; ".join(why) or None,
    )


def _delta(counters: Mapping[str, CounterDelta], name: str) -> float:
    found = counters.get(name)
    return 0.0 if found is None else found.delta
