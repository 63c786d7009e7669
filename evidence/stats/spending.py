"""Group-sequential boundaries by alpha spending (Lan & DeMets 1983). Pure: stdlib and numpy.

A sequential campaign looks at its evidence after each pass of both arms. Looking K
times at a 95 % interval would find a difference that is not there far more often than
5 % of the time, so each look k judges at a stricter *nominal* level, spent from the
declared error rate by a spending function of the information fraction t_k (the share of
the planned passes run). The O'Brien–Fleming-type function of Lan and DeMets,

    α(t) = 2 − 2·Φ(z_{1−α/2} / √t),

spends almost nothing early (a first look of four needs z ≈ 4.3, a 99.998 % interval) and
leaves the last look close to the fixed design's (z ≈ 2.0 against 1.96), so a campaign
that runs every pass loses almost no power, and one that stops early stops only on
evidence that is overwhelming at its look. Because the spending is a function of the
information fraction, not of a fixed schedule, a campaign may stop at any look (every
criterion decided, or the night's window spent) and still keep its error rate: the looks
it never takes spend nothing.

Each side of a criterion's bound (met, not met) is a one-sided test at level a =
(1 − confidence)/2, the same a two-sided interval gives each side; its boundary c_k is
found so that P(cross first at look k | on the bound) = α(t_k) − α(t_{k−1}), by the
recursive numerical integration of Armitage, McPherson and Rowe (1969) on a grid of the
score statistic (Jennison & Turnbull 2000, ch. 19). The other side's stopping is ignored
when the boundary is found, which makes each side's error at most a.

``exits`` gives the probability of stopping at each look on either side for a given drift
(the true distance from the bound, in standard errors of one pass): power and expected
passes of a design (``evidence.stats.power.sequential_drift``).
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

NORMAL = statistics.NormalDist()
GRID_STEP = 0.02  # standard errors of one pass between grid points of the score
GRID_REACH = 9.0  # the grid spans the drift's mean ± this many standard deviations
SPENDING = "Lan–DeMets O'Brien–Fleming-type"
MAX_Z = 8.0  # a boundary beyond this spends less than 1e-15: as good as none
MAX_LEVEL = 1 - 1e-9


def obf_spent(alpha: float, fraction: float) -> float:
    """Error spent by information fraction ``fraction`` in (0, 1]: 2 − 2Φ(z_{1−α/2}/√t)."""
    if fraction <= 0:
        return 0.0
    z = NORMAL.inv_cdf(1 - alpha / 2)
    return 2 - 2 * NORMAL.cdf(z / math.sqrt(min(fraction, 1.0)))


@dataclass(frozen=True)
class Design:
    """A group-sequential design: its looks and each look's boundary on the z scale."""

    looks: int  # the planned maximum (max_passes)
    alpha: float  # one side's error rate, (1 − confidence)/2
    boundaries: tuple[float, ...]  # c_k: a side is crossed when its z statistic reaches c_k
    spent: tuple[float, ...]  # error spent by each look, cumulative

    def nominal_confidence(self, look: int) -> float:
        """The two-sided confidence of the interval look ``look`` (1-based) judges with; an
        early look of many, within float rounding of 1, is held at ``MAX_LEVEL`` (an interval
        that wide holds no bound either)."""
        return min(2 * NORMAL.cdf(self.boundaries[look - 1]) - 1, MAX_LEVEL)


@functools.lru_cache(maxsize=64)
def obf_design(looks: int, confidence: float) -> Design:
    """Boundaries for ``looks`` equally spaced looks, each side at (1 − confidence)/2."""
    if looks < 1:
        raise ValueError(f"a sequential design needs at least one look, not {looks}")
    alpha = (1 - confidence) / 2
    spent = tuple(obf_spent(alpha, k / looks) for k in range(1, looks + 1))
    boundaries: list[float] = []
    score = start_score()
    for k in range(1, looks + 1):
        target = spent[k - 1] - (spent[k - 2] if k > 1 else 0.0)
        score = advance(score, drift=0.0)
        bound = _boundary(score, k, target)
        boundaries.append(bound)
        score = score.below(bound * math.sqrt(k))
    return Design(looks, alpha, tuple(boundaries), spent)


@dataclass(frozen=True)
class Exits:
    """Per look, the probability of stopping there on the upper and lower side."""

    upper: tuple[float, ...]
    lower: tuple[float, ...]

    @property
    def upper_total(self) -> float:
        return sum(self.upper)

    @property
    def lower_total(self) -> float:
        return sum(self.lower)

    def expected_looks(self) -> float:
        """Looks taken on average (a campaign that never stops takes all of them)."""
        stopped = [u + lo for u, lo in zip(self.upper, self.lower, strict=True)]
        running = 1.0 - sum(stopped)
        looks = len(stopped)
        return sum((k + 1) * p for k, p in enumerate(stopped)) + looks * running


def exits(design: Design, drift: float, looks: int | None = None) -> Exits:
    """Stopping probabilities when each pass adds ``drift`` to the score (the true distance
    from the bound in one pass's standard errors, positive toward the upper side), over the
    first ``looks`` looks (default all)."""
    upper: list[float] = []
    lower: list[float] = []
    score = start_score()
    for k in range(1, (looks or design.looks) + 1):
        score = advance(score, drift=drift)
        edge = design.boundaries[k - 1] * math.sqrt(k)
        upper.append(score.tail(edge))
        lower.append(score.total() - score.tail(-edge))
        score = score.between(-edge, edge)
    return Exits(tuple(upper), tuple(lower))


@dataclass(frozen=True)
class Score:
    """The score's sub-distribution on a grid: mass at (offset + i)·GRID_STEP."""

    offset: int
    mass: Floats

    @property
    def points(self) -> Floats:
        points: Floats = (self.offset + np.arange(len(self.mass), dtype=np.float64)) * GRID_STEP
        return points

    def tail(self, edge: float) -> float:
        """Mass at or above ``edge``, each point's mass spread evenly over its cell."""
        return float(np.clip((self.points + GRID_STEP / 2 - edge) / GRID_STEP, 0, 1) @ self.mass)

    def total(self) -> float:
        return float(self.mass.sum())

    def below(self, edge: float) -> Score:
        return _trimmed(self.offset, np.where(self.points < edge, self.mass, 0.0))

    def between(self, low: float, high: float) -> Score:
        points = self.points
        return _trimmed(self.offset, np.where((points > low) & (points < high), self.mass, 0.0))

    def within(self, edge: float) -> float:
        """Mass strictly inside (−edge, edge), spread as ``tail`` spreads it."""
        return self.tail(-edge) - self.tail(edge)

    def outside(self, edge: float) -> Score:
        """The mass at or beyond ±edge: what a look whose inner region stops leaves running."""
        return _trimmed(self.offset, np.where(np.abs(self.points) >= edge, self.mass, 0.0))


def _trimmed(offset: int, mass: Floats) -> Score:
    """The score without the zero mass at its ends: a look stops the paths beyond its
    boundaries, and carrying their zeros would widen every later convolution by a kernel."""
    held = np.flatnonzero(mass)
    if held.size == 0:
        return Score(offset, mass[:1] * 0.0)
    return Score(offset + int(held[0]), mass[held[0] : held[-1] + 1])


def start_score() -> Score:
    """The score before any look: all its mass at 0."""
    return Score(0, np.ones(1))


@functools.lru_cache(maxsize=256)
def _kernel(drift: float) -> tuple[int, Floats]:
    """One pass's step, N(drift, 1), as masses on the grid: (first offset, masses)."""
    first = math.floor((drift - GRID_REACH) / GRID_STEP)
    last = math.ceil((drift + GRID_REACH) / GRID_STEP)
    offsets = np.arange(first, last + 1) * GRID_STEP
    cdf = np.array(
        [NORMAL.cdf(x - drift) for x in (*(offsets - GRID_STEP / 2), offsets[-1] + GRID_STEP / 2)]
    )
    return first, np.diff(cdf)


def advance(score: Score, *, drift: float) -> Score:
    """The score one pass later."""
    first, kernel = _kernel(round(drift, 12))
    return Score(score.offset + first, np.convolve(score.mass, kernel))


def _boundary(score: Score, look: int, target: float) -> float:
    """The z boundary at ``look`` whose upper tail of ``score`` holds ``target``."""
    if target <= 0:  # nothing to spend at this look (it underflowed): no crossing
        return MAX_Z
    low, high = 0.0, float(score.points[-1]) + GRID_STEP
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if score.tail(middle) > target else (low, middle)
    return min(high / math.sqrt(look), MAX_Z)
