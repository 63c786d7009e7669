"""The block length a series' own dependence asks for. Pure: numpy.

A block bootstrap keeps whatever dependence lies within a block and breaks what lies
between blocks, so blocks must be about as long as the series remembers. A fixed length
(⌈n^⅓⌉) is right for independent requests and too short for clustered stalls or latencies
that follow one another (AR(1)): the interval then under-covers. The length here is
Politis & White's automatic choice for the circular block bootstrap (2004, with the
correction of Patton, Politis & White 2009): the first run of insignificant
autocorrelations sets the bandwidth of a flat-top lag window, whose estimates of the
long-run variance g and of G = Σ |k|·R(k) give b = (2G²/D)^⅓·n^⅓ with D = (4/3)·g².

It reads the series' ranks, not its values: a median (or any percentile) moves with
the order of the values, and one stall's outliers would otherwise dominate the
autocovariances.

A window of a few dozen requests holding one or two stall episodes (runs of slow requests
that outlast the rest) shows too few of them for any autocorrelation to be significant,
and the length falls back to ⌈n^⅓⌉, shorter than an episode: the blocks then cut the
episode apart and a resample draws its pieces independently, as if the host had stalled
that many times at random. ``episode_floor`` reads the episode off the series itself, the
longest run of values above its upper quartile, so that a block can hold one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

SIGNIFICANCE = 2.0  # c of the insignificance threshold c·√(log10(n)/n)
SHORTEST = 8  # fewer values say nothing about their dependence: one value per block
SLOW_QUANTILE = 0.75  # a value above the series' upper quartile is slow
# Blocks laid on a fixed grid rarely start where an episode starts, and its first and last
# requests (or a quick one inside it) often fall below the quartile, so the longest slow run
# understates the episode. 1.5 runs: the decisions benchmark's clustered stalls (8-request
# episodes) hold their 2.5 % false promotions on throughput and goodput; one run did not
# (3.05 % and 2.80 % of 2,000 campaigns), and independent requests keep their widths.
EPISODE_STRETCH = 1.5


@dataclass(frozen=True)
class Dependence:
    """How long a series remembers: the block ``length`` to resample it by, and ``memory``,
    Ĝ/ĝ = Σ |k|·R(k) / Σ R(k) (0 for independent values), which says how much a block
    bootstrap of that length under-states the variance (``variance_inflation``)."""

    length: int
    memory: float


NONE = Dependence(1, 0.0)


def dependence(series: Sequence[float] | Floats) -> Dependence:
    """The dependence of ``series`` (in time order) over its ranks: Politis–White's length, or
    the AR(1) plug-in of its lag-1 correlation where that is longer (with few values the
    flat-top window is cut short and misses much of a slow decay); at most min(3√n, n/3)."""
    n = len(series)
    if n < SHORTEST:
        return NONE
    centred = _mid_ranks(np.asarray(series, dtype=np.float64))
    centred -= centred.mean()
    if not centred.any():
        return NONE
    runs = max(5, math.ceil(math.sqrt(math.log10(n))))
    most = math.ceil(math.sqrt(n)) + runs
    covariances = _autocovariances(centred, min(most + runs, n - 1))
    bandwidth = min(2 * _first_quiet_lag(covariances, runs, n), most)
    weights = _flat_top(np.arange(bandwidth + 1) / max(bandwidth, 1))
    kept = covariances[: bandwidth + 1] * weights
    g = kept[0] + 2 * kept[1:].sum()
    big_g = 2 * (np.arange(1, bandwidth + 1) * kept[1:]).sum()
    rho = max(0.0, covariances[1] / covariances[0])
    memory = max(big_g / g if g > 0 else 0.0, 2 * rho / (1 - rho * rho) if rho < 1 else n)
    chosen = (1.5 * memory**2) ** (1 / 3) * n ** (1 / 3)  # (2G²/D)^⅓·n^⅓, D = (4/3)·g²
    longest = math.ceil(min(3 * math.sqrt(n), n / 3))
    return Dependence(int(min(max(1, math.ceil(chosen)), longest)), float(memory))


def slow_run(series: Sequence[float] | Floats) -> int:
    """The most consecutive values of ``series`` (in time order) above its upper quartile;
    0 for fewer than ``SHORTEST`` values or none above it."""
    values = np.asarray(series, dtype=np.float64)
    if len(values) < SHORTEST:
        return 0
    slow = (values > np.quantile(values, SLOW_QUANTILE)).astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], slow, [0]))))
    return int((edges[1::2] - edges[::2]).max(initial=0))


def episode_floor(series: Sequence[float] | Floats) -> int:
    """The shortest block that holds the longest stall episode ``series`` (durations in time
    order) shows: ``EPISODE_STRETCH`` times its longest slow run, at least 1."""
    return max(1, math.ceil(EPISODE_STRETCH * slow_run(series)))


def block_length(series: Sequence[float] | Floats) -> int:
    """The block length ``series`` asks for (``dependence``)."""
    return dependence(series).length


def variance_inflation(memory: float, length: int) -> float:
    """The factor by which a block bootstrap with blocks of ``length`` under-states the
    variance of a series with ``memory``: 1/(1 − memory/length) (Künsch 1989: the bias of
    the block variance is −G/(b·n)), at most 2 (beyond that the blocks are far too short
    and the interval should not decide anyway)."""
    if length <= 0:
        return 1.0
    return 1.0 / (1.0 - min(memory / length, 0.5))


def _mid_ranks(values: Floats) -> Floats:
    """Each value's rank, ties sharing their mean rank (equal values carry no order)."""
    ordered = np.sort(values)
    low = np.searchsorted(ordered, values, side="left")
    high = np.searchsorted(ordered, values, side="right")
    ranks: Floats = (low + high - 1) / 2.0
    return ranks


def independent(series: Sequence[float] | Floats) -> int:
    """How many independent blocks ``series`` (in time order) holds: its values over the
    block length their dependence asks for. A claim that counts values as independent
    trials (a p99's order-statistic bound) counts these instead."""
    return len(series) // dependence(series).length


def _autocovariances(centred: Floats, lags: int) -> Floats:
    """The autocovariances up to ``lags``, by FFT (a journal's millions of chunk gaps in a
    fraction of a second)."""
    n = len(centred)
    spectrum = np.fft.rfft(centred, 2 * n)
    found: Floats = np.fft.irfft(spectrum * np.conj(spectrum), 2 * n)[: lags + 1] / n
    return found


def _first_quiet_lag(covariances: Floats, runs: int, n: int) -> int:
    """The lag m̂ after which ``runs`` autocorrelations in a row are insignificant (at least 1;
    the last lag examined when no such run comes)."""
    threshold = SIGNIFICANCE * math.sqrt(math.log10(n) / n)
    correlations = np.abs(covariances[1:] / covariances[0])
    quiet = 0
    for lag, value in enumerate(correlations, start=1):
        quiet = quiet + 1 if value < threshold else 0
        if quiet == runs:
            return max(1, lag - runs)
    return max(1, len(correlations) - runs)


def _flat_top(t: Floats) -> Floats:
    """Politis–Romano's trapezoid: 1 up to ½, falling linearly to 0 at 1."""
    weights: Floats = np.clip(2 * (1 - np.abs(t)), 0.0, 1.0)
    return weights
