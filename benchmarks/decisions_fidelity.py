"""Right decisions on fidelity limits: Monte Carlo over faceoff's own fidelity criteria.

    .venv/bin/python -m benchmarks.decisions_fidelity                   # 1,000 campaigns a row
    .venv/bin/python -m benchmarks.decisions_fidelity --campaigns 4000

``benchmarks.decisions`` prints these rows after its own. Each campaign scores ``WINDOWS``
windows of ``POSITIONS`` positions of one candidate against the reference, each position's
figure drawn from a model of known truth, and judges one ``[[rule.fidelity]]`` limit with
faceoff's own functions: the mean KLD's interval by ``evidence.stats.fidelity``'s bootstrap
over whole windows, the standing by ``evidence.comparison.fidelity.criteria``.

Models (windows differ: a window is one stretch of text, some harder than others):
  kld_mean        each position's KLD exponential (a long right tail, as real KLDs have)
                  around its window's level, the window levels lognormal (σ 0.5), both
                  with mean 1, scaled to the true mean KLD; the limit 0.03 nats.
  kld_p99         the same positions' pooled 99th percentile, its interval Woodruff's at 98 %
                  with windows as clusters; the limit 0.15 nats (the truth: the model's
                  own 99th percentile, from 4 million draws).
  ppl_ratio       each position's ln p(reference) − ln p(arm) normal (σ 0.3) around its
                  window's level, the levels normal (σ 0.02) around ln of the true ratio;
                  the limit 1.02, its interval ln(PPL ratio)'s bootstrap over windows.
  top1_agreement  each position agrees with the reference's top id with its window's
                  probability, the windows' probabilities Beta around the true share
                  (concentration 20); the limit 0.90, its interval the share that differs'
                  as ``evidence.stats.fidelity.agreement_share`` bounds it.
  greedy          ``GREEDY_PROMPTS`` prompts, each identical to the end with the true
                  share; the limit 0.90, its interval exact binomial (Clopper–Pearson).

The kld_mean row again with window levels of σ 1 (a corpus whose hard stretches carry
far more of the divergence): the least favourable skew measured.

Truth is put at 0.5, 0.9, 1.0, 1.1 and 1.5 times the limit (for an agreement share, the
same distances below 1: 1 − (1 − limit) × r). A false pass is "met" where the truth is on
the limit or worse; a false fail is "not met" where it is on the limit or better. Then the
mean and p99 KLD on their limits at 6, 12, 24 and 96 windows: how the false rates move
with the windows a cell scores (below 12 the rule holds the figures descriptive).
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from evidence.comparison.fidelity.criteria import fidelity_lines
from evidence.stats.fidelity import (
    P99_CONFIDENCE,
    FigureInterval,
    agreement_share,
    bootstrap_mean,
    clopper_pearson,
    lognormal_mean,
    sums_of,
    woodruff_quantile,
)
from faceoff.formats.bundle.fidelity_entries import (
    Bounds,
    FidelityEntry,
    FidelityFiguresEntry,
    Greedy,
)
from matrix.fidelity import FidelityCriterion

WINDOWS, POSITIONS = 24, 127  # the guide's 96-token windows are 95 positions; a night's more
SEED = 20261207  # every campaign's bootstrap seed, as a campaign's one seed serves its cells
RATIOS = (0.5, 0.9, 1.0, 1.1, 1.5)  # the truth, as a multiple of the limit's distance
GREEDY_PROMPTS = 40  # all identical gives a lower bound of 0.912: a 0.90 limit can be met
Gen = np.random.Generator


def kld_windows(rng: Gen, truth: float, windows: int, sigma: float = 0.5) -> list[np.ndarray]:
    level = np.exp(rng.normal(-sigma * sigma / 2, sigma, windows))  # lognormal, mean 1
    return [truth * w * rng.exponential(1.0, POSITIONS) for w in level]


def model_p99() -> float:
    """The 99th percentile of the KLD model at a mean of 1."""
    rng = np.random.default_rng(SEED)
    draws = np.exp(rng.normal(-0.125, 0.5, 4_000_000)) * rng.exponential(1.0, 4_000_000)
    return float(np.quantile(draws, 0.99))


P99 = model_p99()


def ln_ratio_windows(rng: Gen, truth: float, windows: int) -> list[np.ndarray]:
    """Per-position ln p(reference) − ln p(arm): a window level around ln of the true
    ratio (σ 0.02: some text suits the candidate less), each position's noise σ 0.3."""
    level = rng.normal(math.log(truth), 0.02, windows)
    return [w + rng.normal(0.0, 0.3, POSITIONS) for w in level]


def top1_windows(rng: Gen, truth: float, windows: int) -> list[np.ndarray]:
    concentration = 20.0
    shares = rng.beta(truth * concentration, (1 - truth) * concentration, windows)
    return [(rng.random(POSITIONS) < p).astype(np.float64) for p in shares]


NONE = FigureInterval(0.0, 0.0, 0.0)


def entry(
    windows: int,
    *,
    kld: FigureInterval = NONE,
    p99: FigureInterval = NONE,
    top1: FigureInterval = NONE,
    greedy: FigureInterval = NONE,
    ln_ppl: FigureInterval = NONE,
) -> FidelityEntry:
    """A candidate's fidelity entry with the figure judged (the rest not read)."""
    figures = FidelityFiguresEntry(
        positions=windows * POSITIONS, windows=windows, exact=False, kld_mean=bounds(kld),
        kld_median=kld.value, kld_p99=p99.value, kld_p99_interval=bounds(p99),
        kld_max=p99.value, top1_agreement=top1.value, top1_interval=bounds(top1),
        delta_p_mean=0.0, ppl_reference=1.0, ppl_arm=1.0, ln_ppl_ratio=bounds(ln_ppl),
        kld_quantiles=[kld.value] * 21,
    )  # fmt: skip
    said = Greedy(
        prompts=GREEDY_PROMPTS, tokens=32, median_tokens_to_divergence=32.0,
        identical_share=greedy.value, identical_interval=bounds(greedy),
    )  # fmt: skip
    return FidelityEntry(
        cell="corpus", arm="cand", reference="inc", k=20, figures=figures, floor=None,
        within_floor=None, greedy=said, blocked=None, sources=[],
    )  # fmt: skip


def bounds(interval: FigureInterval) -> Bounds:
    return Bounds(value=interval.value, low=interval.low, high=interval.high)


def ruled(criterion: FidelityCriterion, found: FidelityEntry) -> str:
    (line,) = fidelity_lines([criterion], [found], "cand")
    return line.status


def kld_campaign(rng: Gen, truth: float, limit: float, windows: int, sigma: float = 0.5) -> str:
    kld = lognormal_mean(sums_of(kld_windows(rng, truth, windows, sigma)), SEED)
    return ruled(FidelityCriterion(metric="kld_mean", limit=limit), entry(windows, kld=kld))


def p99_campaign(rng: Gen, truth: float, limit: float, windows: int) -> str:
    p99 = woodruff_quantile(kld_windows(rng, truth / P99, windows), 0.99, P99_CONFIDENCE)
    return ruled(FidelityCriterion(metric="kld_p99", limit=limit), entry(windows, p99=p99))


def ppl_campaign(rng: Gen, truth: float, limit: float, windows: int) -> str:
    ln = bootstrap_mean(sums_of(ln_ratio_windows(rng, truth, windows)), SEED)
    criterion = FidelityCriterion(metric="ppl_ratio", limit=limit)
    return ruled(criterion, entry(windows, ln_ppl=ln))


def top1_campaign(rng: Gen, truth: float, limit: float, windows: int) -> str:
    top1 = agreement_share(top1_windows(rng, truth, windows), SEED)
    criterion = FidelityCriterion(metric="top1_agreement", limit=limit)
    return ruled(criterion, entry(windows, top1=top1))


def greedy_campaign(rng: Gen, truth: float, limit: float, windows: int) -> str:
    greedy = clopper_pearson(int(rng.binomial(GREEDY_PROMPTS, truth)), GREEDY_PROMPTS)
    criterion = FidelityCriterion(metric="greedy_agreement", limit=limit)
    return ruled(criterion, entry(windows, greedy=greedy))


Campaign = Callable[[Gen, float, float, int], str]
ROWS: dict[str, tuple[float, Campaign, Callable[[float], float]]] = {
    "kld_mean ≤ 0.03": (0.03, kld_campaign, lambda r: 0.03 * r),
    "kld_mean ≤ 0.03, σ 1": (0.03, functools.partial(kld_campaign, sigma=1.0), lambda r: 0.03 * r),
    "kld_p99 ≤ 0.15": (0.15, p99_campaign, lambda r: 0.15 * r),
    "ppl_ratio ≤ 1.02": (1.02, ppl_campaign, lambda r: 1 + 0.02 * r),
    "top1_agreement ≥ 0.90": (0.90, top1_campaign, lambda r: 1 - 0.10 * r),
    "greedy_agreement ≥ 0.90": (0.90, greedy_campaign, lambda r: 1 - 0.10 * r),
}


def standings(
    row: str, ratio: float, campaigns: int, seed: int, windows: int = WINDOWS
) -> dict[str, float]:
    limit, campaign, truth_at = ROWS[row]
    rng = np.random.default_rng(seed)
    found = [campaign(rng, truth_at(ratio), limit, windows) for _ in range(campaigns)]
    return {s: found.count(s) / campaigns for s in ("met", "inconclusive", "not_met")}


def fidelity_rows(campaigns: int) -> None:
    """The table: per limit and truth, met / inconclusive / not met, the false ones marked."""
    print(f"\nfidelity limits, {WINDOWS} windows × {POSITIONS} positions, {campaigns} campaigns")
    print("(truth as a multiple of the limit's distance; false pass: met at ≥ 1.0; false fail:")
    print("not met at ≤ 1.0; goal ≤ 2.5 % each on the limit, where an interval decides)")
    print("| limit | truth | met | inconclusive | not met |\n|---|---|---|---|---|")
    for i, row in enumerate(ROWS):
        for j, ratio in enumerate(RATIOS):
            rates = standings(row, ratio, campaigns, 600 + 10 * i + j)
            truth = ROWS[row][2](ratio)
            print(f"| {row} | {ratio:.1f} ({truth:.3g}) | " + " | ".join(
                f"{rates[s]:.1%}" for s in ("met", "inconclusive", "not_met")) + " |")  # fmt: skip
    print("\non the limit, by windows scored (goal ≤ 2.5 % each; below 12, descriptive)")
    print("| limit | windows | met (false pass) | not met (false fail) |\n|---|---|---|---|")
    for row in ("kld_mean ≤ 0.03", "kld_mean ≤ 0.03, σ 1", "kld_p99 ≤ 0.15"):
        for windows in (6, 12, 24, 96):
            rates = standings(row, 1.0, campaigns, 700 + windows, windows)
            print(f"| {row} | {windows} | {rates['met']:.1%} | {rates['not_met']:.1%} |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=1000, help="campaigns per row")
    fidelity_rows(parser.parse_args(argv).campaigns)


if __name__ == "__main__":
    main()
