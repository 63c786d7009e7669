"""Speculative decoding as the simulator plays it: which drafts the target model accepts.

Each decode step of a request proposes ``num_speculative_tokens`` draft tokens; draft
position i is accepted only if every earlier one was, at the profile's per-position
rate ``a``, so position i is accepted in a share ``a^(i+1)`` of the steps and a step
yields 1 + a + … + a^k tokens on average (``costmodel.tokens_per_step``). The rate
follows the content being written: a reasoning model's reasoning is prose whatever the
request asked, its answer is structured text (JSON, code: predictable, high acceptance)
or prose (near the draft model's base rate).

Acceptance is drawn without randomness, by one credit per draft position that grows by
``a^(i+1)`` each step and pays 1 when its position is accepted: every request gets the
long-run rates exactly, the per-position counters come out as vLLM's would, and a
cell's timing stays reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.profile import SpeculativeSpec

STRUCTURED = "structured"


@dataclass(frozen=True)
class Acceptance:
    """One request's per-position acceptance rate, by the part of the output being written."""

    reasoning_tokens: int
    reasoning_rate: float
    answer_rate: float

    def at(self, generated: int) -> float:
        """The rate for a step that starts after ``generated`` tokens."""
        return self.reasoning_rate if generated < self.reasoning_tokens else self.answer_rate


def acceptance_for(spec: SpeculativeSpec, reasoning_tokens: int, kind: str) -> Acceptance | None:
    """The acceptance of a request whose answer is of ``kind``; None without speculation."""
    if not spec.num_speculative_tokens:
        return None
    answer = spec.acceptance_structured if kind == STRUCTURED else spec.acceptance_prose
    return Acceptance(reasoning_tokens, spec.acceptance_prose, answer)


def fresh_credits(draft_tokens: int) -> list[float]:
    """Half a token of credit per position: counts round to the nearest, not down."""
    return [0.5] * draft_tokens


def accepted_drafts(credits: list[float], rate: float) -> int:
    """Draft tokens accepted in one step (a prefix of the draft); updates ``credits``."""
    for position in range(len(credits)):
        credits[position] += rate ** (position + 1)
    accepted = 0
    for position, credit in enumerate(credits):
        if credit < 1:
            break
        credits[position] -= 1
        accepted += 1
    return accepted
