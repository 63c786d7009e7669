"""An arm's fidelity to the reference: KLD, top-1, Δp, perplexity, greedy agreement, floor.
The same concept at another layer: ``evidence.views.card.fidelity``, ``matrix.fidelity``,
``workload.fidelity``.

The figures follow llama.cpp's ``--kl-divergence`` report (mean, median, p99 and max
KLD; same top token; Δp; ln of the perplexity ratio) over the ids a vLLM-style engine
returns (``evidence.stats.divergence``). Positions within a window are not independent,
so intervals rest on whole windows (the blocks): the mean KLD's on its window means as a
lognormal sample, and so the share of positions whose top id differs; the p99 KLD's by
Woodruff's method with windows as clusters; ln(PPL ratio)'s a seeded expanded
percentile bootstrap over windows; greedy prompts are
independent, so the share identical to the end has an exact binomial (Clopper–Pearson)
interval. Every figure a rule may bound has an interval. A candidate whose
mean KLD interval reaches the noise floor (the reference scored a second time) is
indistinguishable from the reference, not "0". Pure numpy.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evidence.stats import student_t
from evidence.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    expanded_tail,
    quantile,
)
from evidence.stats.divergence import covers_vocabulary, position_klds, same_top1, top_delta_p
from faceoff.formats.fidelity_scores import ScoredPositions

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FigureInterval:
    """A figure with its percentile bootstrap interval over windows."""

    value: float
    low: float
    high: float

    def holds(self, bound: float) -> bool:
        """Whether the whole interval is at or below ``bound``."""
        return self.high <= bound


@dataclass(frozen=True)
class FidelityFigures:
    """One arm against the reference over the same windows."""

    positions: int
    windows: int
    exact: bool  # the returned ids held all the mass: the KLD is the full one, not a bound
    kld_mean: FigureInterval
    kld_median: float
    kld_p99: FigureInterval  # the pooled 99th percentile, windows as clusters
    kld_max: float
    top1_agreement: FigureInterval  # share of positions whose most likely id is the reference's
    delta_p_mean: float  # mean arm p − reference p of the reference's top id
    ppl_reference: float
    ppl_arm: float
    ln_ppl_ratio: FigureInterval  # ln(PPL arm / PPL reference)
    kld_quantiles: tuple[float, ...]  # at 0, 5, …, 100 %: the distribution the report draws

    @property
    def ppl_ratio(self) -> float:
        return math.exp(self.ln_ppl_ratio.value)


@dataclass(frozen=True)
class WindowSums:
    """Per-window sums and counts: what a bootstrap over windows resamples."""

    sums: FloatArray
    counts: FloatArray

    def mean(self) -> float:
        return float(self.sums.sum() / self.counts.sum())


def fidelity_figures(
    reference: Sequence[ScoredPositions],
    arm: Sequence[ScoredPositions],
    *,
    seed: int,
) -> FidelityFigures:
    """``arm`` against ``reference``, window by window (the same windows, in order)."""
    if len(reference) != len(arm) or not reference:
        raise ValueError(f"{len(arm)} arm windows for {len(reference)} reference windows")
    klds = [position_klds(r, a) for r, a in zip(reference, arm, strict=True)]
    ref_lp = [r.token_logprobs for r in reference]
    arm_lp = [a.token_logprobs for a in arm]
    every = np.sort(np.concatenate(klds))
    ordered = every.tolist()
    return FidelityFigures(
        positions=len(ordered),
        windows=len(reference),
        exact=all(covers_vocabulary(r) for r in reference),
        kld_mean=lognormal_mean(sums_of(klds), seed),
        kld_median=quantile(ordered, 0.5),
        kld_p99=woodruff_quantile(klds, 0.99, P99_CONFIDENCE),
        kld_max=ordered[-1],
        kld_quantiles=tuple(quantile(ordered, q / 20) for q in range(21)),
        top1_agreement=agreement_share(per_window(same_top1, reference, arm), seed),
        delta_p_mean=pooled_mean(top_delta_p, reference, arm),
        ppl_reference=math.exp(-sums_of(ref_lp).mean()),
        ppl_arm=math.exp(-sums_of(arm_lp).mean()),
        ln_ppl_ratio=bootstrap_mean(
            sums_of([r - a for r, a in zip(ref_lp, arm_lp, strict=True)]), seed
        ),
    )


def sums_of(per_window: Sequence[FloatArray]) -> WindowSums:
    return WindowSums(
        sums=np.asarray([float(v.sum()) for v in per_window]),
        counts=np.asarray([float(v.size) for v in per_window]),
    )


PositionFigure = Callable[[ScoredPositions, ScoredPositions], npt.NDArray[Any]]


def per_window(
    figure: PositionFigure, reference: Sequence[ScoredPositions], arm: Sequence[ScoredPositions]
) -> list[FloatArray]:
    return [figure(r, a).astype(np.float64) for r, a in zip(reference, arm, strict=True)]


def pooled_mean(
    figure: PositionFigure, reference: Sequence[ScoredPositions], arm: Sequence[ScoredPositions]
) -> float:
    return float(np.mean(np.concatenate(per_window(figure, reference, arm))))


def bootstrap_mean(
    windows: WindowSums,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> FigureInterval:
    """The pooled mean and its expanded percentile interval, whole windows resampled: a
    plain percentile interval over a few dozen windows errs 3.5–4 % a side on a limit,
    the expansion (``evidence.stats.bootstrap.expanded_tail``) about 2.5 %."""
    n = windows.sums.size
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    means = windows.sums[picks].sum(axis=1) / windows.counts[picks].sum(axis=1)
    tail = expanded_tail(confidence, n)
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return FigureInterval(value=windows.mean(), low=float(low), high=float(high))


# Woodruff's 95 % interval of the p99 over skewed windows errs 4 % a side on a limit; at
# 98 % it errs at most 2 % a side from 12 windows on (benchmarks/README.md).
P99_CONFIDENCE = 0.98


def woodruff_quantile(
    per_window_values: Sequence[FloatArray], q: float, confidence: float = DEFAULT_CONFIDENCE
) -> FigureInterval:
    """The pooled ``q`` quantile (type 7) and Woodruff's interval with windows as clusters:
    the share of positions at or below the quantile gets a Student-t interval from the
    windows' variance of that share, and its ends are read back as quantiles. A tail
    quantile of positions that come in windows is as uncertain as the windows are few; a
    percentile bootstrap of it is far too narrow (benchmarks/README.md)."""
    pooled = np.sort(np.concatenate(per_window_values))
    value = quantile(pooled.tolist(), q)
    below = sums_of([(v <= value).astype(np.float64) for v in per_window_values])
    n = below.sums.size
    if n < 2:
        return FigureInterval(value=value, low=value, high=value)
    share = below.mean()
    spread = (below.sums - share * below.counts) / below.counts.mean()
    error = math.sqrt(float((spread**2).sum()) / (n * (n - 1)))
    reach = student_t.quantile(confidence, n - 1) * error
    low, high = np.quantile(pooled, [max(q - reach, 0.0), min(q + reach, 1.0)])
    return FigureInterval(value=value, low=float(low), high=float(high))


def agreement_share(agree: Sequence[FloatArray], seed: int) -> FigureInterval:
    """A share of positions that agree (1 or 0 each, per window), its interval that of the
    share that differs: a small, right-skewed figure per window, bounded as the mean KLD is."""
    differ = lognormal_mean(sums_of([1.0 - a for a in agree]), seed)
    return FigureInterval(value=1.0 - differ.value, low=1.0 - differ.high, high=1.0 - differ.low)


PIVOT_DRAWS = 20_000  # one seed serves a campaign: the quantiles' own noise must be small


def lognormal_mean(
    windows: WindowSums,
    seed: int,
    draws: int = PIVOT_DRAWS,
    confidence: float = DEFAULT_CONFIDENCE,
) -> FigureInterval:
    """The pooled mean of a non-negative figure and the generalized pivotal interval of a
    lognormal mean over its window means (Krishnamoorthy & Mathew).

    Window means of a divergence are right-skewed (a few hard stretches of text carry much
    of it): a percentile bootstrap over few such windows is too narrow on its upper side,
    and a limit is falsely met 7 % of the time at 24 windows, where this interval errs
    about 2 % on either side (benchmarks/README.md). Where a window's mean is 0 (the
    arms agree exactly there) its log does not exist: the window bootstrap stands in.
    """
    means = windows.sums / windows.counts
    if means.size < 2 or np.any(means <= 0.0):
        return bootstrap_mean(windows, seed, confidence=confidence)
    logs = np.log(means)
    n, centre, spread = logs.size, float(logs.mean()), float(logs.var(ddof=1))
    rng = np.random.default_rng(seed)
    chi = rng.chisquare(n - 1, draws)
    normal = rng.standard_normal(draws)
    pivots = centre - normal * np.sqrt(spread * (n - 1) / chi / n) + 0.5 * (n - 1) * spread / chi
    tail = (1.0 - confidence) / 2.0
    low, high = np.exp(np.quantile(pivots, [tail, 1.0 - tail]))
    return FigureInterval(value=windows.mean(), low=float(low), high=float(high))


@dataclass(frozen=True)
class GreedyAgreement:
    """Greedy answers of an arm against the reference's, prompt by prompt."""

    prompts: int
    tokens: int  # tokens asked per prompt
    median_tokens_to_divergence: float  # a prompt that never diverges counts ``tokens``
    identical_share: FigureInterval  # prompts identical to the end, Clopper–Pearson interval


def greedy_agreement(
    reference: Sequence[Sequence[int]], arm: Sequence[Sequence[int]], tokens: int
) -> GreedyAgreement:
    if len(reference) != len(arm) or not reference:
        raise ValueError(f"{len(arm)} arm answers for {len(reference)} reference answers")
    reached = [first_divergence(r, a, tokens) for r, a in zip(reference, arm, strict=True)]
    return GreedyAgreement(
        prompts=len(reached),
        tokens=tokens,
        median_tokens_to_divergence=float(statistics.median(reached)),
        identical_share=clopper_pearson(sum(1 for t in reached if t == tokens), len(reached)),
    )


def clopper_pearson(
    successes: int, trials: int, confidence: float = DEFAULT_CONFIDENCE
) -> FigureInterval:
    """The share and its exact binomial interval: each end the share at which seeing
    ``successes`` or more (fewer) has probability (1 − confidence) / 2, so each side errs
    at most that often whatever the share."""
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else solved(lambda p: upper_tail(successes, trials, p), tail)
    high = (
        1.0
        if successes == trials
        else solved(lambda p: upper_tail(successes + 1, trials, p), 1.0 - tail)
    )
    return FigureInterval(value=successes / trials, low=low, high=high)


def upper_tail(successes: int, trials: int, share: float) -> float:
    """P(X ≥ successes) for X ~ Binomial(trials, share)."""
    return sum(
        math.comb(trials, k) * share**k * (1.0 - share) ** (trials - k)
        for k in range(successes, trials + 1)
    )


def solved(rising: Callable[[float], float], target: float) -> float:
    """The share in [0, 1] where a function rising in it reaches ``target`` (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2.0
        low, high = (middle, high) if rising(middle) < target else (low, middle)
    return (low + high) / 2.0


def first_divergence(reference: Sequence[int], arm: Sequence[int], tokens: int) -> int:
    """Tokens the two answers share before they first differ (``tokens`` if never)."""
    for index in range(tokens):
        ours = reference[index] if index < len(reference) else None
        theirs = arm[index] if index < len(arm) else None
        if ours is None or ours != theirs:
            return index
    return tokens


def within_floor(arm: FigureInterval, floor: FigureInterval) -> bool:
    """Whether the arm's mean KLD cannot be told from the engine's own noise.

    The floor is the reference scored twice; an arm whose interval reaches down into
    the floor's interval is indistinguishable from the reference on this corpus.
    """
    return arm.low <= floor.high
