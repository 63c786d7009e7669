"""The variance a cell's ratio is planned with, and where it came from. Pure.

Planning a cell (``power``) needs the variance of its log ratio before it is measured. It
is kept *per request*: s² = n·Var(log ratio) for n requests per arm, so it carries over
to any planned n (Var = s²/n). It is measured from block-bootstrap intervals, which
already count requests measured close together as less than independent, so s² is the
block-level variance, spread per request. Each arm's own statistic is taken to carry half
of it (``arm``), as the history does (``evidence.history.night_read``: both arms ran the
same plan on one host).

Where it comes from, in the order a planner prefers them:

- ``aa``: earlier A/A nights of the same cell content and incumbent recipe (``faceoff run
  --aa``): both arms run the incumbent, so their intervals are the instrument's own;
- ``history``: earlier nights of the same cell content and incumbent recipe;
- ``default``: a conservative value, s = ``DEFAULT_SD`` on the log scale for a median,
  above the noisiest cell of the demo matrix on the simulator (natural-31600-c2 decode,
  s ≈ 0.87 from 4 requests per arm; its C1 cells give 0.01–0.27), so that a plan made
  without history warns rather than promises.

A tail percentile's variance, where no night measured it, is the median's scaled by the
ratio of the two quantiles' asymptotic variances for a log-normal metric,
q(1 − q)/φ(z_q)² against π/2: ×2.85 for a p95 and ×8.87 for a p99 (the detail says so).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from evidence.stats import student_t
from evidence.stats.sequential import PassEstimate
from faceoff.artifact import Spec

VarianceSource = Literal["aa", "history", "default"]
DEFAULT_SD = 1.0
NORMAL = statistics.NormalDist()
ARM_SHARE = 0.5  # each arm's part of the log ratio's variance


class KnownVariance(Spec):
    metric: str = Field(description="Request metric (workload.metrics).")
    statistic: str = Field(description="p50, p95 or p99.")
    log_ratio: float = Field(
        description="s²: n × the variance of the log candidate/incumbent ratio, for n "
        "requests per arm (block-level, spread per request)."
    )
    arm: float = Field(description="The same for one arm's own statistic (half of s²).")
    source: VarianceSource = Field(description="aa, history or default.")
    nights: int = Field(description="Earlier nights it rests on (0 for the default).")
    df: int | None = Field(
        default=None,
        description="Degrees of freedom of the estimate: each night's blocks less one, "
        "summed; None for the default (no estimate).",
    )
    detail: str = Field(description="Where it came from, in words.")
    requests: int | None = Field(
        default=None, description="Requests per arm the nights rest on, summed; None: unknown."
    )
    between: float | None = Field(
        default=None,
        description="τ²: the variance of the log ratio between the nights' windows beyond "
        "their own intervals (DerSimonian–Laird), where Cochran's Q showed one "
        "(evidence.stats.heterogeneity.detected); 0 where the nights agreed; None: not "
        "tested. A plan averages it out over passes, never over requests.",
    )


def quantile_factor(statistic: str) -> float:
    """Var(log q-quantile) / Var(log median) for a log-normal metric."""
    q = _fraction(statistic)
    return q * (1 - q) / NORMAL.pdf(NORMAL.inv_cdf(q)) ** 2 / (math.pi / 2)


def per_request(ratio: float, low: float, high: float, n: int, blocks: int) -> float:
    """s² from one 95 % block-bootstrap ratio interval of ``n`` requests per arm."""
    se = PassEstimate.of_interval(ratio, low, high, 0.95, blocks).se
    return n * se**2


def per_request_of_arm(low: float, high: float, n: int, blocks: int) -> float:
    """s² from one arm's 95 % percentile interval as the history derives it: the ratio's
    interval shared between the two arms, each holding 1/√2 of its log half-width
    (``evidence.history.night_read``)."""
    half = (math.log(high) - math.log(low)) / 2 * math.sqrt(2)
    se = half / student_t.quantile(0.95, max(1, blocks - 1))
    return n * se**2


def default_variance(metric: str, statistic: str) -> KnownVariance:
    factor = quantile_factor(statistic)
    scaled = f", ×{factor:.2f} for a {statistic}" if statistic != "p50" else ""
    return KnownVariance(
        metric=metric,
        statistic=statistic,
        log_ratio=DEFAULT_SD**2 * factor,
        arm=ARM_SHARE * DEFAULT_SD**2 * factor,
        source="default",
        nights=0,
        detail=f"conservative default: s = {DEFAULT_SD} on the log scale per request{scaled}",
    )


def learned(
    metric: str,
    statistic: str,
    *,
    observed: Sequence[float],
    source: VarianceSource,
    campaigns: Sequence[str],
    scaled_from: str | None = None,
    df: int | None = None,
    requests: int | None = None,
    between: float | None = None,
) -> KnownVariance:
    """The mean of nights' per-request variances (each already for ``statistic``, or for
    ``scaled_from``'s and scaled here); ``requests``: per arm, over all the nights;
    ``between``: their windows' τ² (``KnownVariance.between``)."""
    factor = quantile_factor(statistic) / quantile_factor(scaled_from) if scaled_from else 1.0
    value = statistics.fmean(observed) * factor
    words = "A/A nights" if source == "aa" else "earlier nights"
    scaled = f"; scaled from their {scaled_from} by ×{factor:.2f}" if scaled_from else ""
    named = ", ".join(campaigns[:3]) + (
        f" and {len(campaigns) - 3} more" if len(campaigns) > 3 else ""
    )
    return KnownVariance(
        metric=metric,
        statistic=statistic,
        log_ratio=value,
        arm=ARM_SHARE * value,
        source=source,
        nights=len(observed),
        df=df,
        detail=f"{len(observed)} {words} of the same cell and incumbent ({named}){scaled}"
        + (f", {requests:,} requests per arm" if requests else "")
        + _between_words(between),
        requests=requests,
        between=between,
    )


def _between_words(between: float | None) -> str:
    if between is None:
        return ""
    if between == 0:
        return "; no variance between the nights' windows beyond their intervals"
    return f"; variance between the nights' windows included, τ = {math.sqrt(between):.3f}"


def _fraction(statistic: str) -> float:
    if not (statistic.startswith("p") and statistic[1:].isdigit()):
        raise ValueError(f"statistic {statistic!r} is not a percentile such as p50")
    return int(statistic[1:]) / 100
