"""How long an engine step takes, from the profile's curves. Pure functions.

A step runs some prefill chunks and one decode pass over the decoding sequences.
A chunk of ``n`` tokens starting at context position ``c`` costs ``n / rate`` where
the rate is read from the prefill curve at the chunk's middle (attention makes later
tokens dearer). The decode pass costs the batch-size curve plus a term for the KV
resident in the batch. Speculative decoding is folded into the decode curve (the
profile measures whole steps) and into how many tokens a step yields.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from simulator.profile import Curve, SpeculativeSpec, TimingSpec
from simulator.scheduler import Step


def interpolate(curve: Curve, x: float) -> float:
    """Linear between points, flat beyond the ends."""
    xs = [p[0] for p in curve]
    index = bisect_left(xs, x)
    if index == 0:
        return curve[0][1]
    if index == len(curve):
        return curve[-1][1]
    (x0, y0), (x1, y1) = curve[index - 1], curve[index]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def prefill_seconds(timing: TimingSpec, chunks: Sequence[tuple[int, int]]) -> float:
    """``chunks`` are (context position before the chunk, tokens in the chunk)."""
    return sum(n / interpolate(timing.prefill_rate, start + n / 2) for start, n in chunks)


def decode_seconds(timing: TimingSpec, batch: int, resident_tokens: int) -> float:
    if batch == 0:
        return 0.0
    ms = interpolate(timing.decode_step_ms, batch)
    ms += timing.decode_ms_per_1k_context * resident_tokens / 1000
    return ms / 1000


def step_seconds(
    timing: TimingSpec, chunks: Sequence[tuple[int, int]], batch: int, resident_tokens: int
) -> float:
    prefill = prefill_seconds(timing, chunks)
    if chunks and batch:
        prefill *= timing.mixed_prefill_factor
    overhead = timing.step_overhead_ms / 1000 if chunks or batch else 0.0
    return overhead + prefill + decode_seconds(timing, batch, resident_tokens)


def tokens_per_step(spec: SpeculativeSpec, kind: str) -> float:
    """Expected tokens a decode step yields: 1 + a + a² + … + a^k for k draft tokens."""
    if spec.num_speculative_tokens == 0:
        return 1.0
    accept = spec.acceptance_structured if kind == "structured" else spec.acceptance_prose
    return sum(accept**i for i in range(spec.num_speculative_tokens + 1))


def step_cost(timing: TimingSpec, step: Step) -> float:
    """Seconds (simulated) that one scheduled step takes."""
    chunks = [(start, tokens) for _seq, start, tokens in step.prefill]
    resident = sum(seq.computed for seq in step.decode)
    return step_seconds(timing, chunks, len(step.decode), resident)
