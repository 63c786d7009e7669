"""The request rate a profile sustains, derived from its cost model: the sweep's known answer.

With ``max_num_seqs`` sequences running (the KV pool permitting), every engine step
advances each of them by one decode token, or by its prefill for a sequence just
admitted (whose step yields its first token). A request of ``input`` prompt tokens and
``output`` completion tokens therefore holds one of the B slots for about
``output / tokens_per_step`` steps, and its prefill adds its chunks' cost to one of
them. At saturation the engine completes

    rate = B / (steps × (overhead + decode(B, resident)) + B × prefill(input) × mixed)

requests per simulated second (``× time_scale`` per wall second), where ``resident`` is
B sequences half way through their output. Below this rate arrivals find a free slot
and wait for nothing; above it the waiting queue, and with it every TTFT, grows for as
long as the load lasts. That is the rate a sweep with a TTFT SLO must bracket
(docs/simulator.md "Capacity"); it holds for requests with exact output lengths
(``ignore_eos``), since an answer's natural length is drawn at random.
"""

from __future__ import annotations

from simulator.costmodel import decode_seconds, prefill_seconds, tokens_per_step
from simulator.profile import Profile


def running_slots(profile: Profile, input_tokens: int, output_tokens: int) -> int:
    """Sequences that can run at once: max_num_seqs, unless the KV pool holds fewer."""
    engine = profile.engine
    blocks = -(-(input_tokens + output_tokens) // engine.block_size)
    fit = engine.kv_cache_tokens // (blocks * engine.block_size)
    return max(1, min(engine.max_num_seqs, fit))


def prefill_chunks(profile: Profile, input_tokens: int) -> list[tuple[int, int]]:
    """(start, tokens) of a prompt's chunks under the step budget and per-request cap."""
    budget = profile.engine.max_num_batched_tokens
    if profile.engine.long_prefill_token_threshold:
        budget = min(budget, profile.engine.long_prefill_token_threshold)
    return [(start, min(budget, input_tokens - start)) for start in range(0, input_tokens, budget)]


def saturated_rate(
    profile: Profile, input_tokens: int, output_tokens: int, *, text_kind: str = "prose"
) -> float:
    """Requests per simulated second the engine completes when every slot is busy."""
    timing = profile.timing
    slots = running_slots(profile, input_tokens, output_tokens)
    steps = output_tokens / tokens_per_step(profile.speculative, text_kind)
    resident = slots * (input_tokens + output_tokens // 2)
    per_step = timing.step_overhead_ms / 1000 + decode_seconds(timing, slots, resident)
    prefill = prefill_seconds(timing, prefill_chunks(profile, input_tokens))
    return slots / (steps * per_step + slots * prefill * timing.mixed_prefill_factor)
