"""Rates over a cell window with a time-block bootstrap interval. Pure: numpy.

Output throughput, goodput and attainment are one figure per arm and cell: a sum over the
window's requests divided by the window (or by the requests). Their candidate/incumbent
ratio still has sampling error, and a decision on the point ratio alone is wrong about as
often as it is right when the truth sits on the bound. The window is cut where the latency
ratios cut it (``bootstrap.time_blocks``: consecutive requests in send order, as many as the
dependence of the requests' durations and amounts asks, and never fewer than the longest
stall episode the durations show, ``block_length.episode_floor``: a window rate is a sum of
durations, and an episode cut into pieces that resample apart is a variance the interval
would not see); each block
carries its amount (completion tokens, good requests …) and its share of the window (from
its first send to the next block's first send, the last to the window's end). A resample
draws whole blocks with replacement on each arm and takes Σ amount / Σ share, so the
interval sees what drifts within the window; its tails are the expanded percentile ones of
the latency ratios (``bootstrap.expanded_tail``), widened as theirs for the variance blocks
of dependent requests miss. The two arms are resampled apart: a window's blocks are spans
of time, which the two arms' request indices do not share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evidence.stats.block_length import (
    NONE,
    Dependence,
    dependence,
    episode_floor,
    variance_inflation,
)
from evidence.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Floats,
    Ints,
    RatioInterval,
    expanded_tail,
    time_blocks,
    widened,
)

METHOD = (
    "cell-window figures (output throughput, goodput, attainment): Σ amount / Σ window over "
    "the scored requests; interval: two-sample block bootstrap of the candidate/incumbent "
    "ratio, the window cut into the latency ratios' blocks (consecutive requests in send "
    "order, as long as the ratios' blocks with L from the requests' durations and amounts, "
    "and at least 1.5× the longest run of durations above their upper quartile: a stall "
    "episode whole), "
    "each block its amount and its span (first send to the next block's first send), whole "
    "blocks resampled on each arm, the expanded and widened tails of the latency ratios"
)


@dataclass(frozen=True)
class WindowRequest:
    """One scored request of the window: when it was sent, when it ended, what it adds to
    the numerator (tokens, 1 when good …) and to the denominator when that counts requests
    rather than seconds."""

    send_ns: int
    end_ns: int
    amount: float
    weight: float = 1.0


@dataclass(frozen=True)
class WindowBlocks:
    """Each block's amount and span: seconds of the window, or requests (``per_request``),
    and the dependence the blocks were cut by."""

    amounts: Floats
    spans: Floats
    requests: int
    dependence: Dependence = NONE

    @property
    def inflation(self) -> float:
        """The variance its blocks miss (``block_length.variance_inflation``)."""
        length = -(-self.requests // len(self.amounts))
        return variance_inflation(self.dependence.memory, length)

    @property
    def rate(self) -> float:
        return float(self.amounts.sum() / self.spans.sum())


def window_blocks(
    requests: Sequence[WindowRequest], concurrency: int, *, per_request: bool = False
) -> WindowBlocks | None:
    """The window's blocks; None with no request or a window of no time."""
    if not requests:
        return None
    ordered = sorted(requests, key=lambda r: r.send_ns)
    found = _dependence(ordered)
    labels = np.array(time_blocks([r.send_ns for r in requests], concurrency, found.length))
    count = int(labels.max()) + 1
    amounts = np.zeros(count)
    np.add.at(amounts, labels, [r.amount for r in requests])
    if per_request:
        spans = np.zeros(count)
        np.add.at(spans, labels, [r.weight for r in requests])
    else:
        spans = _spans(requests, labels, count)
    if spans.sum() <= 0:
        return None
    return WindowBlocks(amounts, spans, len(requests), found)


def _dependence(ordered: Sequence[WindowRequest]) -> Dependence:
    """The longer dependence of the requests' durations and of their amounts, in send order,
    its length at least the durations' longest stall episode (``episode_floor``)."""
    seconds = [float(r.end_ns - r.send_ns) for r in ordered]
    durations, amounts = dependence(seconds), dependence([r.amount for r in ordered])
    length = max(durations.length, amounts.length, episode_floor(seconds))
    return Dependence(length, max(durations.memory, amounts.memory))


def _spans(requests: Sequence[WindowRequest], labels: Ints, count: int) -> Floats:
    """Seconds from each block's first send to the next one's (the last: to the last end)."""
    starts = np.full(count, np.inf)
    np.minimum.at(starts, labels, [float(r.send_ns) for r in requests])
    ends = np.append(starts[1:], float(max(r.end_ns for r in requests)))
    spans: Floats = np.maximum(ends - starts, 0.0) / 1e9
    return spans


def window_ratio(
    incumbent: WindowBlocks,
    candidate: WindowBlocks,
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> RatioInterval | None:
    """Candidate/incumbent ratio of the window rates with its block-bootstrap interval; None
    when the incumbent's rate is not positive (a ratio to nothing says nothing)."""
    base = incumbent.rate
    if base <= 0:
        return None
    rng = np.random.default_rng(seed)
    low_rates = _resampled(incumbent, rng, resamples)
    top_rates = _resampled(candidate, rng, resamples)
    kept = low_rates > 0
    ratios = np.sort(top_rates[kept] / low_rates[kept])
    if not len(ratios):
        return None
    blocks_inc, blocks_cand = len(incumbent.amounts), len(candidate.amounts)
    tail = expanded_tail(confidence, min(blocks_inc, blocks_cand))
    ratio = candidate.rate / base
    low, high = widened(ratio, float(np.quantile(ratios, tail)),
                        float(np.quantile(ratios, 1.0 - tail)),
                        max(incumbent.inflation, candidate.inflation))  # fmt: skip
    return RatioInterval(
        ratio=ratio,
        low=low,
        high=high,
        confidence=confidence,
        resamples=len(ratios),
        seed=seed,
        n_incumbent=incumbent.requests,
        n_candidate=candidate.requests,
        blocks_incumbent=blocks_inc,
        blocks_candidate=blocks_cand,
    )


def _resampled(blocks: WindowBlocks, rng: np.random.Generator, resamples: int) -> Floats:
    """Per resample, Σ amount / Σ span of as many blocks as there are, drawn with replacement."""
    count = len(blocks.amounts)
    picks = rng.integers(0, count, size=(resamples, count))
    spans = blocks.spans[picks].sum(axis=1)
    rates: Floats = np.where(spans > 0, blocks.amounts[picks].sum(axis=1) / spans, 0.0)
    return rates
