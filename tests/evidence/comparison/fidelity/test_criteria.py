"""The rule's fidelity criteria: limits on a candidate's figures against the reference."""

from __future__ import annotations

import math

import pytest

from evidence.comparison.fidelity.criteria import fidelity_lines
from evidence.comparison.ruling import candidate_ruling
from faceoff.formats.bundle.fidelity_entries import (
    Bounds,
    FidelityEntry,
    FidelityFiguresEntry,
    Greedy,
)
from matrix.fidelity import CALIBRATED_WINDOWS, FidelityCriterion
from matrix.rule import Criterion, Rule


def entry(
    kld: tuple[float, float, float], *, arm: str = "cand", intervals: bool = True, windows: int = 24
) -> FidelityEntry:
    def around(value: float, low: float, high: float) -> Bounds | None:
        return Bounds(value=value, low=low, high=high) if intervals else None

    figures = FidelityFiguresEntry(
        positions=100 * windows, windows=windows, exact=False,
        kld_mean=Bounds(value=kld[0], low=kld[1], high=kld[2]),
        kld_median=kld[0], kld_p99=4 * kld[0], kld_max=8 * kld[0],
        kld_p99_interval=around(4 * kld[0], 3 * kld[0], 5 * kld[0]),
        top1_agreement=0.9, top1_interval=around(0.9, 0.87, 0.93), delta_p_mean=-0.01,
        ppl_reference=10.0, ppl_arm=10.5,
        ln_ppl_ratio=Bounds(value=math.log(1.05), low=math.log(1.01), high=math.log(1.09)),
        kld_quantiles=[kld[0]] * 21,
    )  # fmt: skip
    greedy = Greedy(
        prompts=40, tokens=32, median_tokens_to_divergence=32, identical_share=1.0,
        identical_interval=around(1.0, 0.9119, 1.0),
    )  # fmt: skip
    return FidelityEntry(
        cell="fid", arm=arm, reference="inc", k=20, figures=figures, floor=None,
        within_floor=None, greedy=greedy, blocked=None, sources=[],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "limit", "status"),
    [
        ("kld_mean", 0.03, "met"),  # [0.018, 0.024] wholly below
        ("kld_mean", 0.02, "inconclusive"),  # straddles
        ("kld_mean", 0.01, "not_met"),
        ("kld_p99", 0.11, "met"),  # [0.063, 0.105]
        ("kld_p99", 0.09, "inconclusive"),
        ("ppl_ratio", 1.10, "met"),
        ("ppl_ratio", 1.05, "inconclusive"),
        ("top1_agreement", 0.85, "met"),  # [0.87, 0.93]
        ("top1_agreement", 0.9, "inconclusive"),
        ("top1_agreement", 0.95, "not_met"),
        ("greedy_agreement", 0.9, "met"),  # 40 of 40 identical: [0.912, 1]
        ("greedy_agreement", 1.0, "inconclusive"),  # no count of prompts shows all agree
    ],
)
def test_a_limit_is_met_when_the_whole_interval_is_on_its_good_side(
    metric: str, limit: float, status: str
) -> None:
    criterion = FidelityCriterion.model_validate({"metric": metric, "limit": limit})
    (line,) = fidelity_lines([criterion], [entry((0.021, 0.018, 0.024))], "cand")
    assert (line.status, line.test, line.deciding_cell) == (status, "limit", "fid")


@pytest.mark.parametrize("metric", ["kld_p99", "top1_agreement", "greedy_agreement"])
def test_a_figure_without_its_interval_is_never_met_nor_failed_on_its_point(metric: str) -> None:
    """A comparison written before these figures had intervals: far inside or far beyond
    the limit, the point alone decides nothing."""
    for limit in (0.01, 0.5, 0.99):
        criterion = FidelityCriterion.model_validate({"metric": metric, "limit": limit})
        (line,) = fidelity_lines(
            [criterion], [entry((0.021, 0.018, 0.024), intervals=False)], "cand"
        )
        assert line.status == "inconclusive" and "no calibrated interval" in line.sentence


@pytest.mark.parametrize("metric", ["kld_mean", "kld_p99", "ppl_ratio", "top1_agreement"])
def test_below_the_calibrated_windows_a_window_figure_is_descriptive(metric: str) -> None:
    criterion = FidelityCriterion.model_validate({"metric": metric, "limit": 0.5})
    few = entry((0.021, 0.018, 0.024), windows=CALIBRATED_WINDOWS - 1)
    (line,) = fidelity_lines([criterion], [few], "cand")
    assert line.status == "inconclusive" and "descriptive" in line.sentence
    (line,) = fidelity_lines([criterion], [entry((0.021, 0.018, 0.024))], "cand")
    assert line.status != "inconclusive"


def test_an_unscored_candidate_is_missing_and_the_rule_cannot_promote_it() -> None:
    criterion = FidelityCriterion(metric="kld_mean", limit=0.03)
    (line,) = fidelity_lines([criterion], [entry((0.02, 0.01, 0.03), arm="other")], "cand")
    assert line.status == "missing" and "no fidelity cell scored" in line.sentence
    speed = Criterion(metric="ttft_s", non_inferiority=0.05, cells=["none"])
    rule = Rule(criteria=[speed], fidelity=[criterion])
    unfaithful = candidate_ruling(rule, [], "cand", fidelity=[entry((0.05, 0.04, 0.06))])
    assert unfaithful.outcome == "do_not_promote"
    assert (
        "mean KLD ≤ 0.03 against the reference: not met in fid" in unfaithful.criteria[1].sentence
    )
