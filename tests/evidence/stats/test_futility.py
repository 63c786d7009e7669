"""The non-binding futility stop: its beta spending, its wedge against the efficacy
boundaries, the power it keeps, and a look judged futile. Pure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evidence.stats.futility import futility_design, hsd_spent
from evidence.stats.sequential import PassEstimate, futile, look_at
from evidence.stats.spending import Design, exits, obf_design


def test_hwang_shih_decani_spends_nothing_at_the_start_and_beta_at_the_end() -> None:
    assert hsd_spent(0.2, 0.0) == 0.0 and hsd_spent(0.2, 1.0) == pytest.approx(0.2)
    assert hsd_spent(0.2, 0.5, gamma=0.0) == pytest.approx(0.1)  # γ = 0: linear
    # γ = −2 spends less than linearly early: (1 − e^0.5)/(1 − e^2) of β by t = 1/4
    assert hsd_spent(0.2, 0.25) == pytest.approx(0.2 * (1 - math.exp(0.5)) / (1 - math.exp(2)))
    spent = [hsd_spent(0.2, k / 10) for k in range(11)]
    assert spent == sorted(spent)


def test_one_look_is_the_fixed_design() -> None:
    stop = futility_design(obf_design(1, 0.95))
    assert stop.drift == pytest.approx(1.95996 + 0.84162, abs=2e-3)  # z_.975 + z_.8
    assert stop.level(1) is None  # the only look is the last: nothing stops early


@pytest.mark.parametrize("looks", [2, 3, 4, 6])
def test_the_wedge_widens_look_by_look_and_meets_the_efficacy_boundary_at_the_last(
    looks: int,
) -> None:
    design = obf_design(looks, 0.95)
    stop = futility_design(design)
    assert list(stop.boundaries) == sorted(stop.boundaries)
    assert stop.boundaries[-1] == pytest.approx(design.boundaries[-1], abs=1e-3)
    assert all(f < c for f, c in zip(stop.boundaries[:-1], design.boundaries, strict=False))
    # planned at a few per cent more information than the efficacy-only design
    assert 1.0 < (stop.drift / _efficacy_drift(design)) ** 2 < 1.15


def test_four_looks_keep_power_at_the_drift_they_plan_and_stop_early_on_the_bound() -> None:
    design = obf_design(4, 0.95)
    stop = futility_design(design)
    met, _, looks = _simulate(design, stop.boundaries, stop.drift)
    assert met == pytest.approx(0.80, abs=0.01)  # 40,000 paths: ±0.4 % standard error
    met, not_met, looks = _simulate(design, stop.boundaries, 0.0)
    assert met <= 0.025 + 0.003 and not_met <= 0.025 + 0.003  # non-binding: never more
    assert looks < 3.0  # without the stop every path on the bound runs all four


def test_a_look_near_its_bound_before_the_last_is_futile_and_others_are_not() -> None:
    design = obf_design(4, 0.95)
    stop = futility_design(design)
    near = [PassEstimate(math.log(1.05) + 0.005, 0.05, 30)] * 3  # 0.17 se from the bound
    far = [PassEstimate(math.log(1.05) + 0.10, 0.05, 30)] * 3  # 3.5 se: heading to not met
    assert futile(look_at(near, design, 1.05, False), stop, 1.05)
    assert not futile(look_at(far, design, 1.05, False), stop, 1.05)
    assert not futile(look_at(near[:1], design, 1.05, False), stop, 1.05)  # look 1: ±0.07
    last = look_at([*near, near[0]], design, 1.05, False)  # the last look decides or not
    assert last.status == "inconclusive" and not futile(last, stop, 1.05)


def _simulate(
    design: Design, wedge: tuple[float, ...], drift: float, paths: int = 40_000
) -> tuple[float, float, float]:
    """(met, not met, mean looks) of paths of the score with the futility stop obeyed."""
    rng = np.random.default_rng(11)
    steps = rng.normal(drift, 1.0, size=(paths, design.looks)).cumsum(axis=1)
    running = np.ones(paths, dtype=bool)
    met = not_met = looks = 0.0
    for k in range(1, design.looks + 1):
        z = steps[:, k - 1] / math.sqrt(k)
        looks += running.sum()
        up, down = (
            running & (z >= design.boundaries[k - 1]),
            running & (z <= -design.boundaries[k - 1]),
        )
        met, not_met = met + up.sum(), not_met + down.sum()
        running &= ~up & ~down & (np.abs(z) >= wedge[k - 1])
    return met / paths, not_met / paths, looks / paths


def _efficacy_drift(design: Design) -> float:
    low, high = 0.0, 20.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if exits(design, middle).upper_total < 0.8 else (low, middle)
    return high
