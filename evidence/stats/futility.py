"""A non-binding futility stop for the group-sequential design: beta spending. Pure.

The design of ``spending`` stops a criterion when its interval clears the bound, met or not
met. On the bound itself neither ever comes, and every pass runs. The futility stop ends
those runs: at look k a criterion whose combined z statistic lies within ±f_k of the bound
(its interval at the two-sided level 2Φ(f_k) − 1 still holds the bound) has too little
distance from it for a decision to be plausible in the passes left, and stops undecided.
The region is the inner wedge of Pampallona & Tsiatis (J. Statist. Plann. Inference 42,
1994) for a test that may decide either side: a criterion heading clearly toward either
side runs on.

Its boundaries are found by beta spending (Jennison & Turnbull 2000, §7.3): under the
design's alternative, a true distance of ``drift`` standard errors of one pass on the better
side, the chance of stopping in the wedge by look k is β(t_k), with the Hwang–Shih–DeCani
function β(t) = β·(1 − e^(−γt))/(1 − e^(−γ)), γ = −2 (Hwang, Shih & DeCani, Statistics in
Medicine 9, 1990; gsDesign's default lower bound), β = 1 − power. The drift is the one at
which the last look's wedge meets the efficacy boundary, f_K = c_K, so that every path
ends either met or in the wedge and the design's power there is exactly 1 − β: the
maximum information grows a few per cent over the efficacy-only design's (1.08× for four
looks), and ``evidence.stats.power`` plans with this drift.

The stop is non-binding: the efficacy boundaries are the ones ``spending`` found ignoring
it, so the error of deciding a side wrongly stays within its rate whether or not a
futility stop is taken (stopping only takes looks away); it can end passes, never decide.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from evidence.stats.spending import Design, Score, advance, start_score

GAMMA = -2.0  # the Hwang–Shih–DeCani parameter of the beta spending
SPENDING = f"Hwang–Shih–DeCani (γ = {GAMMA:g}) beta spending"
POWER = 0.80


def hsd_spent(beta: float, fraction: float, gamma: float = GAMMA) -> float:
    """Type II error spent by information fraction ``fraction``: β(1 − e^(−γt))/(1 − e^(−γ))."""
    t = min(max(fraction, 0.0), 1.0)
    if gamma == 0:
        return beta * t
    return beta * (1 - math.exp(-gamma * t)) / (1 - math.exp(-gamma))


@dataclass(frozen=True)
class Futility:
    """The wedge of each look (z scale; 0 = no futility stop there) and the drift it is
    sized at (one pass's standard errors from the bound)."""

    boundaries: tuple[float, ...]
    drift: float

    def level(self, look: int) -> float | None:
        """The two-sided confidence of the interval that must hold the bound for ``look``
        (1-based) to stop; None where it cannot: no wedge, or the last look, where an
        undecided criterion is simply undecided."""
        if look >= len(self.boundaries) or self.boundaries[look - 1] <= 0:
            return None
        return 2 * _phi(self.boundaries[look - 1]) - 1


@functools.lru_cache(maxsize=64)
def futility_design(design: Design, power: float = POWER) -> Futility:
    """The wedge of ``design`` whose last look meets its efficacy boundary at ``power``."""
    low, high = 0.0, 20.0
    for _ in range(40):
        middle = (low + high) / 2
        last = wedge(design, middle, 1 - power)[-1]
        low, high = (middle, high) if last < design.boundaries[-1] else (low, middle)
    return Futility(wedge(design, high, 1 - power), high)


def wedge(design: Design, drift: float, beta: float) -> tuple[float, ...]:
    """Each look's f_k spending β(t_k) − β(t_{k−1}) under ``drift``, the paths that crossed
    an efficacy boundary or an earlier wedge taken out (at most c_k: beyond it the look
    has stopped every path)."""
    score, spent, found = start_score(), 0.0, []
    for k in range(1, design.looks + 1):
        edge = design.boundaries[k - 1] * math.sqrt(k)
        score = advance(score, drift=drift).between(-edge, edge)
        target = hsd_spent(beta, k / design.looks) - spent
        bound = _inner(score, k, target, design.boundaries[k - 1])
        spent += score.within(bound * math.sqrt(k))
        found.append(bound)
        score = score.outside(bound * math.sqrt(k))
    return tuple(found)


def _inner(score: Score, look: int, target: float, efficacy: float) -> float:
    """The z half-width of the wedge at ``look`` holding ``target`` of ``score``."""
    scale = math.sqrt(look)
    if target <= 0:
        return 0.0
    if score.within(efficacy * scale) <= target:
        return efficacy
    low, high = 0.0, efficacy
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (low, middle) if score.within(middle * scale) > target else (middle, high)
    return high


def _phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))
