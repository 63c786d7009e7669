"""The rule's fidelity criteria: limits on a candidate's figures against the reference."""

from __future__ import annotations

import math

import pytest

from evidence.comparison.fidelity.criteria import fidelity_lines
from evidence.comparison.fidelity.entries import Bounds, FidelityEntry, FidelityFiguresEntry, Greedy
from evidence.comparison.ruling import candidate_ruling
from matrix.fidelity import FidelityCriterion
from matrix.rule import Criterion, Rule


def entry(
    kld: tuple[float, float, float], *, arm: str = "cand", identical: float = 1.0
) -> FidelityEntry:
    figures = FidelityFiguresEntry(
        positions=100, windows=10, exact=False,
        kld_mean=Bounds(value=kld[0], low=kld[1], high=kld[2]),
        kld_median=kld[0], kld_p99=4 * kld[0], kld_max=8 * kld[0],
        top1_agreement=0.9, delta_p_mean=-0.01, ppl_reference=10.0, ppl_arm=10.5,
        ln_ppl_ratio=Bounds(value=math.log(1.05), low=math.log(1.01), high=math.log(1.09)),
        kld_quantiles=[kld[0]] * 21,
    )  # fmt: skip
    return FidelityEntry(
        cell="fid", arm=arm, reference="inc", k=20, figures=figures, floor=None,
        within_floor=None, greedy=Greedy(prompts=4, tokens=32, median_tokens_to_divergence=32,
        identical_share=identical), blocked=None, sources=[],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "limit", "status"),
    [
        ("kld_mean", 0.03, "met"),  # [0.018, 0.024] wholly below
        ("kld_mean", 0.02, "inconclusive"),  # straddles
        ("kld_mean", 0.01, "not_met"),
        ("kld_p99", 0.1, "met"),
        ("ppl_ratio", 1.10, "met"),
        ("ppl_ratio", 1.05, "inconclusive"),
        ("top1_agreement", 0.95, "not_met"),
        ("greedy_agreement", 1.0, "met"),
    ],
)
def test_a_limit_is_met_when_the_whole_interval_is_on_its_good_side(
    metric: str, limit: float, status: str
) -> None:
    criterion = FidelityCriterion.model_validate({"metric": metric, "limit": limit})
    (line,) = fidelity_lines([criterion], [entry((0.021, 0.018, 0.024))], "cand")
    assert (line.status, line.test, line.deciding_cell) == (status, "limit", "fid")


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
