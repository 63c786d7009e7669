"""The group-sequential design's numbers: spending boundaries against the published ones, its
error kept under repeated looks, a look's combination of passes, and tail floors."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from evidence.stats import power
from evidence.stats.sequential import PassEstimate, combine, look_at
from evidence.stats.spending import (
    GRID_STEP,
    advance,
    exits,
    obf_design,
    obf_spent,
    start_score,
)

# Lan–DeMets O'Brien–Fleming-type boundaries, two-sided 0.05, equal looks
# (Jennison & Turnbull 2000, Table 7.6; gsDesign's sfLDOF gives the same).
PUBLISHED = {
    2: (2.963, 1.969),
    4: (4.333, 2.963, 2.359, 2.014),
    5: (4.877, 3.357, 2.680, 2.290, 2.031),
}


@pytest.mark.parametrize("looks", sorted(PUBLISHED))
def test_boundaries_match_the_published_lan_demets_obrien_fleming_ones(looks: int) -> None:
    design = obf_design(looks, 0.95)
    assert design.boundaries == pytest.approx(PUBLISHED[looks], abs=0.01)
    assert design.spent[-1] == pytest.approx(0.025)


@pytest.mark.parametrize("looks", [1, 3, 4, 6])
def test_on_the_bound_each_side_is_crossed_at_most_at_its_declared_rate(looks: int) -> None:
    crossed = exits(obf_design(looks, 0.95), drift=0.0)
    assert crossed.upper_total == pytest.approx(0.025, abs=5e-4)
    assert crossed.lower_total == pytest.approx(0.025, abs=5e-4)


def test_spending_is_almost_nothing_early_and_the_last_look_is_near_the_fixed_one() -> None:
    design = obf_design(4, 0.95)
    assert obf_spent(0.025, 0.25) < 1e-4
    assert design.nominal_confidence(1) > 0.9999
    assert 0.95 < design.nominal_confidence(4) < 0.96
    fixed = statistics.NormalDist().inv_cdf(0.975) + statistics.NormalDist().inv_cdf(0.8)
    inflation = (power.sequential_drift(design) * 2 / fixed) ** 2  # max information / fixed
    # 1.02× for the spending, 1.08× more for the futility stop's power (test_futility)
    assert 1.05 < inflation < 1.15


def test_an_effect_far_from_the_bound_stops_early_and_one_on_it_runs_every_look() -> None:
    design = obf_design(4, 0.95)
    assert exits(design, drift=0.0).expected_looks() > 3.9
    assert exits(design, drift=3.0).expected_looks() < 2.2


def test_passes_that_agree_add_no_between_variance_and_ones_that_do_not_widen_the_look() -> None:
    agreeing = [PassEstimate(-0.10, 0.05, 20), PassEstimate(-0.11, 0.05, 20)]
    drifting = [PassEstimate(-0.30, 0.05, 20), PassEstimate(0.10, 0.05, 20)]
    _, se_agree, df_agree, tau_agree = combine(agreeing)
    _, se_drift, _, tau_drift = combine(drifting)
    assert tau_agree == 0.0 and se_agree == pytest.approx(0.05 / math.sqrt(2))
    assert df_agree == 40
    assert tau_drift > 0 and se_drift > 2 * se_agree


def test_a_look_judges_its_combined_interval_at_the_looks_nominal_level() -> None:
    design = obf_design(3, 0.95)
    passes = [PassEstimate(math.log(0.80), 0.03, 30)]
    first = look_at(passes, design, bound=1.05, higher_is_better=False)
    assert first.confidence == pytest.approx(design.nominal_confidence(1))
    assert first.status == "met" and first.high < 1.05
    level = look_at([PassEstimate(math.log(1.04), 0.03, 30)], design, 1.05, False)
    assert level.status == "inconclusive" and level.low < 1.05 < level.high


def test_looking_after_every_pass_keeps_the_error_on_the_bound_within_the_declared_rate() -> None:
    """Passes on the bound exactly, with estimated standard errors of 9 degrees of freedom:
    a criterion met (or not met) by any of four looks stays near the 2.5 % of each side."""
    rng = random.Random(20261204)
    design, runs, met, not_met = obf_design(4, 0.95), 4000, 0, 0
    for _ in range(runs):
        passes: list[PassEstimate] = []
        for _ in range(4):
            sd = math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(9)) / 9) * 0.05
            passes.append(PassEstimate(math.log(1.05) + rng.gauss(0, 0.05), sd, 9))
            status = look_at(passes, design, 1.05, higher_is_better=False).status
            if status != "inconclusive":
                met += status == "met"
                not_met += status == "not_met"
                break
    assert met / runs < 0.035 and not_met / runs < 0.035


def test_a_p99_needs_mlperfs_662_requests_at_99_percent_and_473_at_95() -> None:
    assert power.tail_floor(0.99, 0.99) == 662
    assert power.tail_floor(0.99, 0.95) == 473
    assert power.tail_floor(0.99, 0.99, exceedances=0) == 459  # the sample maximum alone


def test_the_requests_needed_are_the_fewest_whose_detectable_difference_reaches_the_bound() -> None:
    variance, distance = 0.05, math.log(1.05)
    needed = power.requests_needed(variance, distance, concurrency=2, confidence=0.95)
    assert power.detectable(variance, needed, 2, 0.95) <= distance
    assert power.detectable(variance, needed - 1, 2, 0.95) > distance
    design = obf_design(4, 0.95)
    per_pass = power.sequential_needed(variance, distance, design, concurrency=2)
    assert needed / 4 < per_pass < 1.2 * needed / 4  # the design's inflation, pass by pass


def test_a_looks_score_spans_only_what_its_boundaries_leave_running() -> None:
    # A design of many passes must plan in seconds: the grid may not keep the zeros of
    # the paths each look stopped, or every later convolution widens by a kernel.
    design = obf_design(20, 0.95)
    score = start_score()
    for look, bound in enumerate(design.boundaries, start=1):
        edge = bound * math.sqrt(look)
        score = advance(score, drift=0.0).between(-edge, edge)
        assert len(score.mass) <= 2 * edge / GRID_STEP + 1
        assert score.mass[0] > 0 and score.mass[-1] > 0
