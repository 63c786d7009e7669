"""Descriptive statistics and candidate/incumbent ratios. Pure: the stdlib's maths and numpy.

A ratio compares one cell on two arms, never a pool: samples of different strata are
refused. Its interval is a seeded block bootstrap of the ratio of medians, since requests
measured close together in time are not independent: blocks as long as the values'
own dependence asks (``evidence.stats.block_length``), drawn for both arms at once where
both sent the same prompts by index (a paired bootstrap), expanded where it rests on few
blocks, since a plain percentile interval is then too narrow, and widened by the variance
a block bootstrap of dependent values misses. Percentiles, blocks, the expansion and its
calibration: docs/evidence.md, "Statistics".
"""

from __future__ import annotations

import collections
import functools
import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evidence.stats import student_t
from evidence.stats.block_length import dependence, variance_inflation

Floats = npt.NDArray[np.float64]
Counts = npt.NDArray[np.float32]  # whole numbers of draws or values
Ints = npt.NDArray[np.int64]

PERCENTILE_METHOD = (
    "p50 and p95 by linear interpolation between closest ranks (Hyndman & Fan type 7): "
    "position h = (n − 1)·q in the ascending values, interpolated between its neighbours"
)
RATIO_METHOD = (
    "ratio = candidate p50 / incumbent p50 of the same cell; interval: percentile block "
    "bootstrap of that ratio (each arm's scored requests grouped in send order into blocks of "
    "max(concurrency, ⌈n^⅓⌉, L) consecutive requests, L the Politis–White length of the "
    "values' ranks or their AR(1) plug-in, whichever is longer, at most n/5 so there are at "
    "least 5 blocks; whole blocks resampled with replacement, the same blocks of request "
    "indices on both arms where both sent the same prompt vectors), seeded by the campaign "
    "seed; the interval is the expanded percentile one: with b the fewer blocks of the two "
    "arms, its tails are the resamples' Φ(−√(b/(b − 1))·t(b − 1)) points, t(b − 1) the "
    "two-sided Student t multiplier, so that few blocks widen it; then widened in log scale "
    "about the ratio by √(1/(1 − Ĝ/(ĝ·length))), the variance a block of that length misses"
)
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
MIN_BLOCKS = 5  # fewer blocks than this and the interval would rest on a handful of draws
# Fewer blocks per arm than this and an interval is descriptive only: it decides no rule
# criterion and gives no verdict (benchmarks/decisions.py measures the calibration by blocks).
CALIBRATED_BLOCKS = 8
CHUNK = 64  # sorted values per step of the weighted-median search
DIRECT_VALUES = 2 * CHUNK  # up to this many values the search is not chunked (faster)


class StratumMismatch(ValueError):
    """Two samples of different strata were about to be compared or pooled."""


@dataclass(frozen=True)
class Distribution:
    """n, mean, extremes and the two percentiles the card shows."""

    n: int
    mean: float
    min: float
    max: float
    p50: float
    p95: float


@dataclass(frozen=True)
class Sample:
    """The values of one metric in one cell on one arm, labelled with the cell's stratum.

    ``blocks`` gives each value its block (``time_blocks``); empty, every value is
    its own block. ``keys`` gives each value its request index and prompt-vector hash:
    two samples with the same keys are resampled as pairs. ``memory`` is the values'
    dependence (``block_length.Dependence.memory``; 0: independent).
    """

    stratum: str
    values: tuple[float, ...]
    blocks: tuple[int, ...] = ()
    keys: tuple[tuple[int, str], ...] = ()
    memory: float = 0.0

    def __post_init__(self) -> None:
        if self.blocks and len(self.blocks) != len(self.values):
            raise ValueError(f"{len(self.blocks)} block labels for {len(self.values)} values")
        if self.keys and len(self.keys) != len(self.values):
            raise ValueError(f"{len(self.keys)} request keys for {len(self.values)} values")

    @property
    def block_length(self) -> int:
        """Values in its longest block."""
        return max(collections.Counter(self.blocks).values(), default=1)

    def grouped(self) -> list[tuple[float, ...]]:
        """The values block by block, in block order."""
        if not self.blocks:
            return [(v,) for v in self.values]
        groups: dict[int, list[float]] = {}
        for block, value in zip(self.blocks, self.values, strict=True):
            groups.setdefault(block, []).append(value)
        return [tuple(groups[b]) for b in sorted(groups)]


@dataclass(frozen=True)
class RatioInterval:
    """candidate p50 / incumbent p50 with a bootstrap interval and the n it rests on."""

    ratio: float
    low: float
    high: float
    confidence: float
    resamples: int  # the resamples the interval rests on: a zero incumbent median is dropped
    seed: int
    n_incumbent: int
    n_candidate: int
    blocks_incumbent: int
    blocks_candidate: int


def quantile(ordered: Sequence[float], q: float) -> float:
    """Type-7 quantile of ascending, non-empty ``ordered`` at fraction ``q`` in [0, 1]."""
    if not ordered:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile fraction {q} is outside [0, 1]")
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def describe(values: Sequence[float]) -> Distribution | None:
    """The distribution of ``values``; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return Distribution(
        n=len(ordered),
        mean=statistics.fmean(ordered),
        min=ordered[0],
        max=ordered[-1],
        p50=quantile(ordered, 0.5),
        p95=quantile(ordered, 0.95),
    )


def block_size(n: int, concurrency: int, length: int = 1) -> int:
    """Requests per block: a whole round of concurrent requests, ⌈n^⅓⌉ or the ``length`` the
    values' dependence asks for, whichever is most, but small enough to leave
    ``MIN_BLOCKS`` blocks where n allows."""
    wanted = max(concurrency, math.ceil(math.cbrt(n)), length)
    return max(1, min(wanted, n // MIN_BLOCKS))


def calibrated(n: int, concurrency: int) -> bool:
    """Whether an interval on ``n`` requests per arm is calibrated: its blocks are whole
    (not cut smaller to leave ``MIN_BLOCKS`` of them) and there are ``CALIBRATED_BLOCKS``."""
    if n <= 0:
        return False
    size = block_size(n, concurrency)
    whole = size == max(concurrency, math.ceil(math.cbrt(n)))
    return whole and math.ceil(n / size) >= CALIBRATED_BLOCKS


def calibrated_requests(concurrency: int) -> int:
    """The fewest requests per arm from which every interval is calibrated (``calibrated``:
    just above some n a larger ⌈n^⅓⌉ leaves fewer blocks, so a lone calibrated n is not it)."""
    n = CALIBRATED_BLOCKS
    while not all(calibrated(m, concurrency) for m in range(n, 4 * n)):
        n += 1
    return n


def time_blocks(send_ns: Sequence[int], concurrency: int, length: int = 1) -> tuple[int, ...]:
    """Each request's block: requests in send order, ``block_size`` consecutive ones a block."""
    size = block_size(len(send_ns), concurrency, length)
    order = sorted(range(len(send_ns)), key=lambda i: send_ns[i])
    blocks = [0] * len(send_ns)
    for rank, i in enumerate(order):
        blocks[i] = rank // size
    return tuple(blocks)


def timed_sample(
    stratum: str,
    timed: Sequence[tuple[int, float, tuple[int, str]]],
    concurrency: int,
) -> Sample:
    """A sample of (send_ns, value, request key) triples, its blocks as long as the values'
    dependence in send order asks (``block_length.dependence``)."""
    ordered = sorted(timed, key=lambda t: t[0])
    values = tuple(v for _, v, _ in ordered)
    found = dependence(values)
    blocks = time_blocks([t for t, _, _ in ordered], concurrency, found.length)
    return Sample(stratum, values, blocks, tuple(k for *_, k in ordered), found.memory)


def paired(incumbent: Sample, candidate: Sample) -> tuple[Sample, Sample] | None:
    """Both samples in request-index order with the same blocks of indices, where both hold
    the same requests with the same prompt vectors; else None (resampled apart). A block is
    as long as the longer of the two arms' own."""
    if not incumbent.keys or sorted(incumbent.keys) != sorted(candidate.keys):
        return None
    length = max(incumbent.block_length, candidate.block_length)
    return _by_key(incumbent, length), _by_key(candidate, length)


def _by_key(sample: Sample, length: int) -> Sample:
    order = sorted(range(len(sample.values)), key=lambda i: sample.keys[i])
    return Sample(
        sample.stratum,
        tuple(sample.values[i] for i in order),
        tuple(rank // length for rank in range(len(order))),
        tuple(sample.keys[i] for i in order),
        sample.memory,
    )


def widened(ratio: float, low: float, high: float, inflation: float) -> tuple[float, float]:
    """An interval's ends moved away from ``ratio`` in log scale by √``inflation``: the
    standard error a variance ``inflation`` times larger would give (unchanged where an end
    is not positive: there is no log scale to widen in)."""
    if inflation == 1.0 or min(ratio, low, high) <= 0:
        return low, high
    scale = math.sqrt(inflation)
    return ratio * (low / ratio) ** scale, ratio * (high / ratio) ** scale


def ensure_same_stratum(incumbent: Sample, candidate: Sample) -> None:
    if incumbent.stratum != candidate.stratum:
        raise StratumMismatch(
            f"refusing to compare stratum {candidate.stratum!r} with {incumbent.stratum!r}: "
            "ratios are taken within one cell, never across input strata"
        )


Statistic = Callable[[Sequence[float]], float]


def p95(values: Sequence[float]) -> float:
    return quantile(sorted(values), 0.95)


def p99(values: Sequence[float]) -> float:
    return quantile(sorted(values), 0.99)


def median_ratio(
    incumbent: Sample,
    candidate: Sample,
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    statistic: Statistic = statistics.median,
) -> RatioInterval | None:
    """candidate/incumbent ratio of medians (or of ``statistic``, e.g. ``p95``) with its
    bootstrap interval.

    None when either side has no value or the incumbent's statistic is not positive
    (a ratio to zero says nothing).
    """
    ensure_same_stratum(incumbent, candidate)
    if not incumbent.values or not candidate.values:
        return None
    base = statistic(incumbent.values)
    if base <= 0:
        return None
    both = paired(incumbent, candidate)
    inc_blocks, cand_blocks = (side.grouped() for side in both or (incumbent, candidate))
    ratios = _bootstrap(
        inc_blocks, cand_blocks, seed, resamples, statistic, paired=both is not None
    )
    if not ratios:
        return None
    tail = expanded_tail(confidence, min(len(inc_blocks), len(cand_blocks)))
    ratio = statistic(candidate.values) / base
    low, high = widened(ratio, quantile(ratios, tail), quantile(ratios, 1.0 - tail),
                        _inflation(incumbent, candidate))  # fmt: skip
    return RatioInterval(
        ratio=ratio,
        low=low,
        high=high,
        confidence=confidence,
        resamples=len(ratios),
        seed=seed,
        n_incumbent=len(incumbent.values),
        n_candidate=len(candidate.values),
        blocks_incumbent=len(inc_blocks),
        blocks_candidate=len(cand_blocks),
    )


def _inflation(incumbent: Sample, candidate: Sample) -> float:
    return max(variance_inflation(s.memory, s.block_length) for s in (incumbent, candidate))


def expanded_tail(confidence: float, blocks: int) -> float:
    """The fraction of resamples below the interval (and above it) with ``blocks`` blocks:
    Φ(−√(b/(b − 1))·t(b − 1)); with one block every resample is inside."""
    if blocks < 2:
        return 0.0
    widened = math.sqrt(blocks / (blocks - 1)) * student_t.quantile(confidence, blocks - 1)
    return statistics.NormalDist().cdf(-widened)


def _bootstrap(
    incumbent: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    seed: int,
    resamples: int,
    statistic: Statistic,
    *,
    paired: bool = False,
) -> list[float]:
    """Sorted ratios of the statistic of block resamples; a zero incumbent one is skipped.
    ``paired``: block k of each arm holds the same requests, and both draw the same blocks.

    The median (every ratio the card shows) takes the fast path, ``_median_ratios``; any
    other statistic (the p95 a declared rule may judge) pools each resample's draws.
    """
    if statistic is statistics.median:
        return _median_ratios(incumbent, candidate, seed, resamples, paired)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        picks = _picks(rng, len(incumbent))
        base = statistic(_pooled(incumbent, picks))
        top = statistic(_pooled(candidate, picks if paired else _picks(rng, len(candidate))))
        if base > 0:
            ratios.append(top / base)
    return sorted(ratios)


def _picks(rng: random.Random, blocks: int) -> list[int]:
    """As many block indices as there are blocks, drawn with replacement."""
    return rng.choices(range(blocks), k=blocks)


def _pooled(blocks: Sequence[Sequence[float]], picks: Sequence[int]) -> list[float]:
    return [v for k in picks for v in blocks[k]]


def _median_ratios(
    incumbent: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    seed: int,
    resamples: int,
    paired: bool = False,
) -> list[float]:
    """Sorted ratios of medians of block resamples; a zero incumbent median is skipped.

    Each resample draws ``len(incumbent)`` incumbent blocks, then ``len(candidate)``
    candidate blocks, as ``random.Random(seed).choices`` would (index ⌊u·n⌋ of the same
    Mersenne Twister stream), and takes ``statistics.median`` of each side's pooled
    values. The pool is never built: a block drawn c times weighs c, and the median
    is found by those weights in the side's values sorted once (``_medians``), so a
    cell of many thousand requests costs milliseconds, not minutes. ``paired``: the
    candidate's blocks are weighed as the incumbent's.
    """
    weights = _draws(seed, resamples, len(incumbent), len(candidate))
    base = _medians(incumbent, weights[0])
    top = _medians(candidate, weights[0] if paired else weights[1])
    kept = base > 0
    return sorted((top[kept] / base[kept]).tolist())


@functools.lru_cache(maxsize=4)
def _draws(seed: int, resamples: int, incumbent: int, candidate: int) -> tuple[Counts, Counts]:
    """Per resample, how often each incumbent and each candidate block is drawn.

    The same for every metric of a pair (and every cell of the same shape): cached.
    """
    words = random.Random(seed).getstate()[1]
    stream = np.random.RandomState()
    stream.set_state(("MT19937", np.array(words[:-1], dtype=np.uint32), words[-1], 0, 0.0))
    uniforms = stream.random_sample(resamples * (incumbent + candidate))
    drawn = uniforms.reshape(resamples, incumbent + candidate)
    return _counts(drawn[:, :incumbent]), _counts(drawn[:, incumbent:])


def _counts(uniforms: Floats) -> Counts:
    rows, blocks = uniforms.shape
    picks = np.floor(uniforms * float(blocks)).astype(np.int64)  # choices' index ⌊u·n⌋
    flat = (picks + np.arange(rows)[:, None] * blocks).ravel()
    counts = np.bincount(flat, minlength=rows * blocks).reshape(rows, blocks)
    # float32 is exact here (every sum is a whole number of values, far below 2**24) and
    # halves the matrix products' work
    return counts.astype(np.float32)


def _medians(blocks: Sequence[Sequence[float]], weights: Counts) -> Floats:
    """Per row of ``weights`` (draws per block): the median of the pooled draws."""
    sizes = np.array([len(b) for b in blocks], dtype=np.float32)
    values = np.fromiter((v for block in blocks for v in block), dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    labels = np.repeat(np.arange(len(blocks)), sizes.astype(np.int64))[order]
    total = (weights @ sizes).astype(np.int64)
    low, high = _ranks(blocks, weights, labels, ((total - 1) // 2, total // 2))
    return np.where(total % 2 == 1, ordered[high], (ordered[low] + ordered[high]) / 2)


def _ranks(
    blocks: Sequence[Sequence[float]], weights: Counts, labels: Ints, nths: Sequence[Ints]
) -> list[Ints]:
    """Per row and ``nths`` entry, the position in the ascending values of its nth pooled
    value. Few values: every value's weight in a row at once (one row's running count);
    many: the chunked search of ``_nth``, whose memory stays rows × chunks."""
    if len(labels) <= DIRECT_VALUES:
        counted = np.cumsum(np.take(weights, labels, axis=1), axis=1)
        # compared in float32, as counted (exact: whole numbers below 2**24)
        return [np.count_nonzero(counted <= n[:, None].astype(np.float32), axis=1) for n in nths]
    chunk_of = np.arange(len(labels)) // CHUNK
    per_chunk = np.zeros((len(blocks), int(chunk_of[-1]) + 1), dtype=np.float32)
    np.add.at(per_chunk, (labels, chunk_of), 1.0)
    reached = weights @ np.cumsum(per_chunk, axis=1)  # pooled values up to each chunk's end
    return [_nth(reached, weights, labels, nth) for nth in nths]


def _nth(reached: Counts, weights: Counts, labels: Ints, nth: Ints) -> Ints:
    """Per row, the position in the ascending values of its ``nth`` (0-based) pooled value,
    each value counting its block's weight in that row: first the chunk, then within it."""
    chunk = (reached <= nth[:, None]).sum(axis=1)
    rows = np.arange(weights.shape[0])
    before = np.where(chunk > 0, reached[rows, np.maximum(chunk - 1, 0)], 0.0)
    inside = chunk[:, None] * CHUNK + np.arange(CHUNK)
    valid = inside < len(labels)
    inside = np.minimum(inside, len(labels) - 1)
    counted = before[:, None] + np.cumsum(weights[rows[:, None], labels[inside]] * valid, axis=1)
    result: Ints = chunk * CHUNK + (counted <= nth[:, None]).sum(axis=1)
    return result
