"""The declared decision rule applied to comparison cells: bounds, standings, the worst cell
deciding, the outcome per candidate and what a cell that was not accepted means. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from evidence.comparison.cells import RATIO_METRICS, ratio_verdict
from evidence.comparison.energy import figure_ratios
from evidence.comparison.figures import CELL_FIGURE_LABELS, GOODPUT_FIELDS, GOODPUT_LABELS
from evidence.comparison.replicates import replicated_ratios
from evidence.comparison.ruling import Replicates, candidate_ruling, rule_ruling
from evidence.reviews.recording import rule_contradiction
from faceoff.formats.attempt.summary import CellEnergy, EnergyFigures, Goodput
from faceoff.formats.bundle.comparison import (
    FIGURE_LABELS,
    ArmCell,
    CellEntry,
    PairEntry,
    Ratio,
    ReplicatedRatio,
)
from faceoff.formats.bundle.reviews import Decision
from matrix.cell import Cell, Sampling
from matrix.rule import (
    CELL_FIGURE_METRICS,
    ENERGY_METRICS,
    GOODPUT_METRICS,
    INTERVAL_METRICS,
    Rule,
)
from matrix.slo import Slo
from workload.metrics import higher_is_better

INCUMBENT, CANDIDATE = "inc", "cand"


def arm(
    name: str,
    disposition: str = "accepted",
    goodput_rps: float | None = None,
    output_tps: float | None = None,
) -> ArmCell:
    good = None
    if goodput_rps is not None:
        good = Goodput(
            slo=Slo(ttft_ms=500), scored=10, good=10, attainment=1.0, within_slo=True,
            requests_per_s=goodput_rps, output_tps=goodput_rps * 100, window_s=10.0,
        )  # fmt: skip
    return ArmCell(
        arm=name, attempt=1, disposition=disposition, reason_code=None, reason=None, oom=None,
        planned=10, statuses={"ok": 10}, refusals=0, input_tokens=None, completion_tokens=None,
        metrics={}, aggregate_output_tps=output_tps, engine=None, memory=None, sources={},
        history=[], goodput=good,
    )  # fmt: skip


def ratio(metric: str, value: float, low: float, high: float, statistic: str = "p50") -> Ratio:
    return Ratio(
        metric=metric, candidate=CANDIDATE, statistic=statistic, ratio=value, low=low, high=high,
        confidence=0.95,
        resamples=2000, seed=1, n_incumbent=64, n_candidate=64, blocks_incumbent=16,
        blocks_candidate=16, higher_is_better=higher_is_better(metric),
        verdict=ratio_verdict(low, high, higher_is_better=higher_is_better(metric)),
    )  # fmt: skip


def cell(
    cell_id: str,
    *ratios: Ratio,
    kind: str = "natural",
    candidate: str = "accepted",
    goodput: tuple[float, float] | None = None,
    tail: list[Ratio] | None = None,
    output_tps: tuple[float, float] | None = None,
) -> CellEntry:
    inc_gp, cand_gp = goodput if goodput else (None, None)
    inc_tps, cand_tps = output_tps if output_tps else (None, None)
    comparable = candidate == "accepted"
    return CellEntry(
        id=cell_id, kind=kind, stratum=f"{kind}/512/c1", input_target=512, concurrency=1,
        requests=10, warmups=0, sampling=Sampling(),
        arms=[arm(INCUMBENT, goodput_rps=inc_gp, output_tps=inc_tps),
              arm(CANDIDATE, candidate, cand_gp, cand_tps)],
        pairs=[PairEntry(candidate=CANDIDATE, comparable=comparable,
                         reason=None if comparable else "arm_not_accepted", sentence="",
                         verdict="mixed" if comparable else "not compared")],
        ratios=list(ratios) if comparable else [], tail_ratios=tail or [],
    )  # fmt: skip


def rule(*criteria: dict[str, Any], **extra: Any) -> Rule:
    return Rule.model_validate({"criteria": list(criteria), **extra})


TTFT_NI = {"metric": "ttft_s", "non_inferiority": 0.05}  # times: ratio ≤ 1.05
DECODE_SUP = {"metric": "decode_tps", "superiority": 0.10}  # rates: ratio ≥ 1.10


def test_the_rule_judges_exactly_the_metrics_that_carry_ratio_intervals() -> None:
    assert set(INTERVAL_METRICS) == set(RATIO_METRICS)


def test_every_cell_figure_is_read_labelled_and_better_in_its_direction() -> None:
    assert set(GOODPUT_METRICS) == set(GOODPUT_FIELDS) == set(GOODPUT_LABELS)
    assert set(CELL_FIGURE_METRICS) == set(CELL_FIGURE_LABELS)
    assert set(ENERGY_METRICS) <= set(FIGURE_LABELS) == set(CELL_FIGURE_METRICS)
    lower = {m for m in CELL_FIGURE_METRICS if not higher_is_better(m)}
    assert lower == {"energy_per_token_j"}  # a cost: joules per token are better fewer


def test_a_time_margin_is_met_below_the_bound_not_met_above_it_inconclusive_across() -> None:
    def status(low: float, high: float) -> str:
        found = candidate_ruling(
            rule(TTFT_NI), [cell("a", ratio("ttft_s", low, low, high))], "cand"
        )
        return found.criteria[0].status

    assert status(0.90, 1.04) == "met"
    assert status(1.06, 1.20) == "not_met"
    assert status(1.00, 1.10) == "inconclusive"
    line = candidate_ruling(rule(TTFT_NI), [cell("a", ratio("ttft_s", 1, 0.9, 1.04))], "cand")
    assert line.criteria[0].bound == 1.05


def test_a_rate_target_must_be_cleared_by_the_whole_interval() -> None:
    def status(low: float, high: float) -> str:
        found = candidate_ruling(
            rule(DECODE_SUP), [cell("a", ratio("decode_tps", low, low, high))], "cand"
        )
        return found.criteria[0].status

    assert status(1.12, 1.30) == "met"
    assert status(0.90, 1.05) == "not_met"
    assert status(1.05, 1.15) == "inconclusive"


def test_the_outcome_is_promote_only_when_every_criterion_is_met() -> None:
    met = cell("a", ratio("ttft_s", 0.8, 0.7, 0.9), ratio("decode_tps", 1.5, 1.3, 1.7))
    found = candidate_ruling(rule(TTFT_NI, DECODE_SUP), [met], "cand")
    assert found.outcome == "promote"
    assert found.headline == "Declared rule: **promote** cand: of 2 criteria, 2 met."
    assert found.criteria[0].sentence == (
        "TTFT p50 no worse than 5% (candidate/incumbent ≤ 1.05): met — a 0.80× "
        "(95% interval 0.70–0.90), wholly ≤ 1.05."
    )


def test_one_criterion_not_met_outweighs_an_inconclusive_one() -> None:
    mixed = cell("a", ratio("ttft_s", 1.0, 0.95, 1.10), ratio("decode_tps", 0.9, 0.8, 0.95))
    found = candidate_ruling(rule(TTFT_NI, DECODE_SUP), [mixed], "cand")
    assert [c.status for c in found.criteria] == ["inconclusive", "not_met"]
    assert found.outcome == "do_not_promote"
    assert "straddles 1.05" in found.criteria[0].sentence


def test_an_inconclusive_criterion_leaves_no_decision() -> None:
    found = candidate_ruling(rule(TTFT_NI), [cell("a", ratio("ttft_s", 1.0, 0.95, 1.10))], "cand")
    assert found.outcome == "no_decision"


def test_the_worst_cell_decides_a_criterion() -> None:
    cells = [
        cell("clear", ratio("ttft_s", 0.5, 0.4, 0.6)),
        cell("close", ratio("ttft_s", 0.9, 0.8, 1.04)),
        cell("also-clear", ratio("ttft_s", 0.7, 0.6, 0.8)),
    ]
    line = candidate_ruling(rule(TTFT_NI), cells, "cand").criteria[0]
    assert (line.status, line.deciding_cell) == ("met", "close")
    cells.append(cell("straddling", ratio("ttft_s", 1.0, 0.9, 1.2)))
    line = candidate_ruling(rule(TTFT_NI), cells, "cand").criteria[0]
    assert (line.status, line.deciding_cell) == ("inconclusive", "straddling")
    assert [c.cell for c in line.cells] == ["clear", "close", "also-clear", "straddling"]


def test_a_failed_counted_cell_means_no_decision_by_default() -> None:
    cells = [cell("a", ratio("ttft_s", 0.5, 0.4, 0.6)), cell("b", candidate="failed")]
    found = candidate_ruling(rule(TTFT_NI), cells, "cand")
    assert (found.outcome, found.not_accepted) == ("no_decision", ["b/cand failed"])
    assert found.criteria[0].status == "met"  # still shown, over the comparable cells
    assert "not accepted (b/cand failed), and the rule says no_decision" in found.headline


def test_the_rule_may_refuse_promotion_or_ignore_cells_that_were_not_accepted() -> None:
    cells = [cell("a", ratio("ttft_s", 0.5, 0.4, 0.6)), cell("b", candidate="blocked")]
    refuse = candidate_ruling(rule(TTFT_NI, not_accepted="do_not_promote"), cells, "cand")
    assert refuse.outcome == "do_not_promote"
    ignore = candidate_ruling(rule(TTFT_NI, not_accepted="ignore"), cells, "cand")
    assert ignore.outcome == "promote" and ignore.criteria[0].deciding_cell == "a"


def test_a_cell_the_rule_does_not_count_neither_blocks_nor_decides() -> None:
    cells = [cell("a", ratio("ttft_s", 0.5, 0.4, 0.6)), cell("b", candidate="failed")]
    assert candidate_ruling(rule(TTFT_NI, cells=["a"]), cells, "cand").outcome == "promote"


def test_a_criterion_judges_only_its_kinds_and_cells() -> None:
    cells = [
        cell("nat", ratio("ttft_s", 0.5, 0.4, 0.6)),
        cell("hol", ratio("ttft_s", 2.0, 1.8, 2.2), kind="head_of_line"),
    ]
    natural = {**TTFT_NI, "kinds": ["natural"]}
    assert candidate_ruling(rule(natural), cells, "cand").outcome == "promote"
    assert candidate_ruling(rule(TTFT_NI), cells, "cand").outcome == "do_not_promote"
    only_hol = {**TTFT_NI, "cells": ["hol"]}
    line = candidate_ruling(rule(only_hol), cells, "cand").criteria[0]
    assert (line.status, line.deciding_cell) == ("not_met", "hol")
    assert ", in hol:" in line.sentence


def test_a_metric_without_a_ratio_leaves_no_decision() -> None:
    found = candidate_ruling(rule(DECODE_SUP), [cell("a", ratio("ttft_s", 1, 1, 1))], "cand")
    assert (found.outcome, found.criteria[0].status) == ("no_decision", "missing")
    assert "a has no ratio for it" in found.criteria[0].sentence
    nothing = candidate_ruling(rule({**DECODE_SUP, "kinds": ["needle"]}), [cell("a")], "cand")
    assert nothing.criteria[0].sentence.endswith("missing — no comparable cell to judge.")


def window(entry: CellEntry, metric: str, value: float, low: float, high: float) -> CellEntry:
    """The cell with a window figure's time-block interval for the candidate."""
    found = ratio(metric, value, low, high)
    return entry.model_copy(update={"window_ratios": [*entry.window_ratios, found]})


def test_goodput_is_judged_on_its_window_interval_never_its_point_ratio() -> None:
    margin = {"metric": "goodput_rps", "non_inferiority": 0.05}
    point = candidate_ruling(rule(margin), [cell("a", goodput=(2.0, 1.96))], "cand")
    assert point.outcome == "no_decision" and point.criteria[0].cells[0].ratio == 0.98
    assert "descriptive only: a point ratio of one window" in point.criteria[0].sentence
    kept = window(cell("a", goodput=(2.0, 1.96)), "goodput_rps", 0.98, 0.96, 1.0)
    ruled = candidate_ruling(rule(margin), [kept], "cand")
    assert ruled.outcome == "promote"
    assert (
        "goodput (req/s) no worse than 5% (candidate/incumbent ≥ 0.95): met — a 0.98× (95% "
        "time-block interval 0.96–1.00)" in ruled.criteria[0].sentence
    )
    lost = window(cell("a"), "goodput_rps", 0.9, 0.85, 0.94)
    assert candidate_ruling(rule(margin), [lost], "cand").outcome == "do_not_promote"
    none = candidate_ruling(rule(margin), [cell("a", goodput=(0.0, 1.0))], "cand")
    assert none.outcome == "no_decision"  # a ratio to no goodput says nothing


def test_a_ratio_of_p99s_is_shown_and_decides_nothing() -> None:
    tail = ratio("ttft_s", 0.8, 0.7, 0.9, "p99")
    found = candidate_ruling(
        rule({**TTFT_NI, "statistic": "p99"}), [cell("a", tail=[tail])], "cand"
    )
    assert found.outcome == "no_decision" and found.criteria[0].cells[0].ratio == 0.8
    assert "descriptive only: a ratio of p99s" in found.criteria[0].sentence


def test_a_zero_width_or_uncalibrated_interval_is_descriptive() -> None:
    flat = candidate_ruling(rule(TTFT_NI), [cell("a", ratio("ttft_s", 0.9, 0.9, 0.9))], "cand")
    assert flat.outcome == "no_decision"
    assert "descriptive only: a zero-width interval" in flat.criteria[0].sentence
    few = ratio("ttft_s", 0.5, 0.3, 0.7).model_copy(update={"n_incumbent": 4, "n_candidate": 4})
    tiny = candidate_ruling(rule(TTFT_NI), [cell("a", few)], "cand")
    assert tiny.outcome == "no_decision"
    assert "4 requests per arm, fewer than the 29" in tiny.criteria[0].sentence


def test_a_review_contradicts_the_rule_only_against_its_outcome() -> None:
    met = [cell("a", ratio("ttft_s", 0.5, 0.4, 0.6))]
    promoting = rule_ruling(rule(TTFT_NI), met, ["cand"])
    assert rule_contradiction(Decision.NO_PROMOTION, promoting) == (
        "the declared rule's outcome is promote for cand"
    )
    assert rule_contradiction(Decision.PROMOTE, promoting) is None
    failing = rule_ruling(rule(TTFT_NI), [cell("a", ratio("ttft_s", 2, 1.8, 2.2))], ["cand"])
    assert rule_contradiction(Decision.PROMOTE, failing) == (
        "the declared rule promotes no candidate (Declared rule: do not promote cand: "
        "of 1 criterion, 1 not met.)"
    )
    assert rule_contradiction(Decision.NO_PROMOTION, failing) is None
    for ruling in (promoting, failing, None):
        assert rule_contradiction(Decision.RERUN_CELLS, ruling) is None
    assert rule_contradiction(Decision.PROMOTE, None) is None  # no rule declared


def between(low: float | None, high: float | None) -> ReplicatedRatio:
    return ReplicatedRatio(
        cell="nat", candidate=CANDIDATE, metric="ttft_s", replicates=2,
        compared=["nat-r1", "nat-r2"], ratios=[0.8, 1.0], ratio=0.9, low=low, high=high,
        confidence=0.95, reason=None if low else "1 of 2 replicate pairs compared",
    )  # fmt: skip


REPLICAS = [
    cell("nat-r1", ratio("ttft_s", 0.8, 0.7, 0.9)),
    cell("nat-r2", ratio("ttft_s", 1.0, 0.9, 1.04)),
]
WRITTEN = {"nat-r1": "nat", "nat-r2": "nat"}


def test_a_replicated_cell_is_judged_once_by_its_between_replicate_interval() -> None:
    """Each window's own interval clears the margin, but the windows disagree: the
    between-replicate interval, which sees that, straddles it."""
    groups = Replicates([between(0.5, 1.6)], WRITTEN)
    line = candidate_ruling(rule(TTFT_NI), REPLICAS, "cand", groups).criteria[0]
    assert (line.status, line.deciding_cell, [c.cell for c in line.cells]) == (
        "inconclusive", "nat", ["nat"],
    )  # fmt: skip
    assert "0.90× (95% between-replicate interval 0.50–1.60), straddles 1.05" in line.sentence
    named = rule({**TTFT_NI, "cells": ["nat"]})  # by the id the cell was written under
    assert candidate_ruling(named, REPLICAS, "cand", groups).criteria[0].deciding_cell == "nat"


def test_replicates_without_a_between_replicate_interval_are_judged_one_by_one() -> None:
    groups = Replicates([between(None, None)], WRITTEN)
    line = candidate_ruling(rule(TTFT_NI), REPLICAS, "cand", groups).criteria[0]
    assert (line.status, line.deciding_cell) == ("met", "nat-r2")
    assert [c.cell for c in line.cells] == ["nat-r1", "nat-r2"]


def test_a_p95_criterion_judges_the_tail_ratio_not_the_median() -> None:
    tail_ni = {**TTFT_NI, "statistic": "p95"}
    slow_tail = cell(
        "a", ratio("ttft_s", 0.9, 0.8, 0.95), tail=[ratio("ttft_s", 1.6, 1.3, 1.9, "p95")]
    )
    line = candidate_ruling(rule(tail_ni), [slow_tail], "cand").criteria[0]
    assert line.status == "not_met"
    assert line.sentence.startswith("TTFT p95 no worse than 5% (candidate/incumbent ≤ 1.05)")
    assert candidate_ruling(rule(TTFT_NI), [slow_tail], "cand").outcome == "promote"
    missing = candidate_ruling(rule(tail_ni), [cell("a", ratio("ttft_s", 0.9, 0.8, 0.95))], "cand")
    assert missing.criteria[0].status == "missing"


def test_the_cells_a_rule_counts_default_to_those_its_criteria_judge() -> None:
    """A needle a model cannot pass fails its cell; a rule about natural cells is not held
    up by it, unless it names the cell among those it counts."""
    cells = [
        cell("nat", ratio("ttft_s", 0.5, 0.4, 0.6)),
        cell("ndl", kind="needle", candidate="failed"),
    ]
    natural = {**TTFT_NI, "kinds": ["natural"]}
    found = candidate_ruling(rule(natural), cells, "cand")
    assert (found.outcome, found.not_accepted) == ("promote", [])
    counted = candidate_ruling(rule(natural, cells=["nat", "ndl"]), cells, "cand")
    assert (counted.outcome, counted.not_accepted) == ("no_decision", ["ndl/cand failed"])
    every = candidate_ruling(rule(TTFT_NI), cells, "cand")  # judges every kind: counts both
    assert every.not_accepted == ["ndl/cand failed"]


CONTROL = "ctrl"


def three_arm_cell(cell_id: str, cand: Ratio, ctrl: Ratio) -> CellEntry:
    """A cell run on the incumbent, the candidate and a control arm (an effort A/B's third)."""
    two = cell(cell_id, cand)
    ctrl_ratio = ctrl.model_copy(update={"candidate": CONTROL})
    pair = two.pairs[0].model_copy(update={"candidate": CONTROL})
    return two.model_copy(
        update={"arms": [*two.arms, arm(CONTROL)], "pairs": [*two.pairs, pair],
                "ratios": [*two.ratios, ctrl_ratio]}
    )  # fmt: skip


def test_a_rule_scoped_to_candidates_rules_on_them_alone() -> None:
    cells = [three_arm_cell("a", ratio("ttft_s", 0.5, 0.4, 0.6), ratio("ttft_s", 2, 1.8, 2.2))]
    everyone = rule_ruling(rule(TTFT_NI), cells, ["cand", CONTROL])
    assert [(c.candidate, c.outcome) for c in everyone.candidates] == [
        ("cand", "promote"), (CONTROL, "do_not_promote"),
    ]  # fmt: skip
    scoped = rule_ruling(rule(TTFT_NI, candidates=["cand"]), cells, ["cand", CONTROL])
    assert [(c.candidate, c.outcome) for c in scoped.candidates] == [("cand", "promote")]
    assert rule_contradiction(Decision.PROMOTE, scoped) is None  # the control does not count


def test_a_criterion_scoped_to_candidates_judges_only_them() -> None:
    cells = [
        three_arm_cell(
            "a", ratio("decode_tps", 1.5, 1.3, 1.7), ratio("decode_tps", 1.0, 0.97, 1.04)
        )
    ]
    ruled = rule_ruling(
        rule(
            {**DECODE_SUP, "candidates": ["cand"]},
            {**DECODE_SUP, "non_inferiority": 0.05, "superiority": None},
        ),
        cells,
        ["cand", CONTROL],
    )
    by = {c.candidate: c for c in ruled.candidates}
    assert [line.test for line in by["cand"].criteria] == ["superiority", "non_inferiority"]
    assert [line.test for line in by[CONTROL].criteria] == ["non_inferiority"]
    assert (by["cand"].outcome, by[CONTROL].outcome) == ("promote", "promote")


def test_with_two_candidates_each_is_promoted_at_half_the_error() -> None:
    """A margin met by a 95 % interval just clear of it is met for a lone candidate; with two
    candidates each is held to 1.25 % a side, and the same interval no longer clears it."""
    cells = [
        three_arm_cell(
            "a", ratio("decode_tps", 1.0, 0.951, 1.05), ratio("decode_tps", 1.3, 1.2, 1.4)
        )
    ]
    margin = {**DECODE_SUP, "non_inferiority": 0.05, "superiority": None}
    alone = rule_ruling(rule(margin), cells, ["cand"])
    assert alone.candidates[0].outcome == "promote"
    pair = rule_ruling(rule(margin), cells, ["cand", CONTROL])
    by = {c.candidate: c for c in pair.candidates}
    assert (by["cand"].outcome, by[CONTROL].outcome) == ("no_decision", "promote")
    assert "not at the one-sided 1.25% each candidate is held to" in by["cand"].criteria[0].sentence
    assert "split across the 2 candidates (1.25% each)" in pair.error_control


def test_do_not_promote_is_holm_adjusted_across_cells_and_criteria() -> None:
    """Each of three cells alone is 'not met' (p ≈ 1.1 %), but three such tests together are
    what chance gives too often: Holm keeps none, and the rule makes no claim."""
    worse = ratio("ttft_s", 1.09, 1.055, 1.125)
    one = candidate_ruling(rule(TTFT_NI), [cell("a", worse)], "cand")
    assert one.outcome == "do_not_promote"
    three = candidate_ruling(rule(TTFT_NI), [cell(c, worse) for c in "abc"], "cand")
    assert three.outcome == "no_decision"
    assert "not after Holm's adjustment over 3 tests" in three.criteria[0].sentence
    clear = ratio("ttft_s", 1.5, 1.4, 1.6)  # far beyond: survives any adjustment
    mixed = candidate_ruling(rule(TTFT_NI), [cell("a", clear), cell("b", worse)], "cand")
    assert mixed.outcome == "do_not_promote"


def test_a_worse_claim_carries_the_spread_between_the_criterions_other_cells() -> None:
    """A window's interval cannot see its own shift (a drift falling on the arms in turn);
    the spread of the criterion's other cells can. A cell far worse than cells that agree
    is not met; the same cell among cells that scatter far beyond their intervals is not,
    and its own ratio never widens its own test."""
    worse = ratio("ttft_s", 1.12, 1.085, 1.155)
    alike = [cell(c, ratio("ttft_s", 1.0, 0.97, 1.03)) for c in "bcd"]
    assert candidate_ruling(rule(TTFT_NI), [cell("a", worse), *alike], "cand").outcome == (
        "do_not_promote"
    )
    scattered = [
        cell(c, ratio("ttft_s", r, r * 0.97, r * 1.03))
        for c, r in zip("bcd", (0.9, 1.12, 0.9), strict=True)
    ]
    found = candidate_ruling(rule(TTFT_NI), [cell("a", worse), *scattered], "cand")
    assert found.outcome == "no_decision"
    assert "with the spread between the criterion's other cells" in found.criteria[0].sentence


def test_output_throughput_is_judged_on_its_time_block_interval() -> None:
    """ "Candidate superior by 10 % on output throughput": Σ completion tokens over the cell
    window, one value per arm; its time-block interval decides, never the point ratio."""
    target = {"metric": "output_tps", "superiority": 0.10}
    faster = window(cell("a", output_tps=(100.0, 115.0)), "output_tps", 1.15, 1.11, 1.19)
    ruled = candidate_ruling(rule(target), [faster], "cand")
    assert ruled.outcome == "promote" and ruled.criteria[0].cells[0].ratio == 1.15
    assert ruled.criteria[0].sentence.startswith(
        "output throughput (tok/s) at least 10% better (candidate/incumbent ≥ 1.10): met — a 1.15×"
    )
    short = window(cell("a"), "output_tps", 1.05, 1.02, 1.08)
    assert candidate_ruling(rule(target), [short], "cand").outcome == "do_not_promote"
    point = candidate_ruling(rule(target), [cell("a", output_tps=(100.0, 115.0))], "cand")
    assert point.outcome == "no_decision"
    unknown = candidate_ruling(rule(target), [cell("a", output_tps=(0.0, 105.0))], "cand")
    assert unknown.criteria[0].status == "missing"


def test_replicated_output_throughput_is_judged_by_its_between_replicate_interval() -> None:
    target = {"metric": "output_tps", "superiority": 0.10}
    steady = [window(cell(f"nat-r{i}"), "output_tps", 1.2, 1.1, 1.3) for i in (1, 2)]
    spread = between(1.12, 1.3).model_copy(update={"metric": "output_tps", "ratio": 1.2})
    line = candidate_ruling(rule(target), steady, "cand", Replicates([spread], WRITTEN))
    (found,) = line.criteria
    assert (found.status, found.deciding_cell, [c.cell for c in found.cells]) == (
        "met", "nat", ["nat"],
    )  # fmt: skip
    assert "95% between-replicate interval" in found.sentence
    noisy = between(0.9, 1.5).model_copy(update={"metric": "output_tps", "ratio": 1.2})
    line = candidate_ruling(rule(target), steady, "cand", Replicates([noisy], WRITTEN))
    assert line.criteria[0].status == "inconclusive"  # each window alone would say met


def energy(per_token: float, per_joule: float | None = None) -> EnergyFigures:
    """An arm's energy figures: ``per_token`` J per output token over 1,000 tokens."""
    joules = per_token * 1_000
    gpu = CellEnergy(window_s=10.0, simulated=True, devices=[], joules=joules, exact=True)
    return EnergyFigures(
        gpu=gpu, method="counter", output_tokens=1_000, energy_per_token_j=per_token,
        output_tokens_per_j=1 / per_token, goodput_per_joule=per_joule,
        goodput_tokens_per_j=None if per_joule is None else per_joule * 100,
    )  # fmt: skip


def with_energy(entry: CellEntry, incumbent: EnergyFigures, candidate: EnergyFigures) -> CellEntry:
    inc, cand = entry.arms
    arms = [inc.model_copy(update={"energy": incumbent}),
            cand.model_copy(update={"energy": candidate})]  # fmt: skip
    return entry.model_copy(update={"arms": arms})


def test_energy_per_token_is_a_cost_bounded_lower_and_one_window_only_describes_it() -> None:
    """ "Candidate at least 10 % better on energy per output token": fewer joules per token,
    so the bound is 0.90; one window's point ratio is shown, and decides nothing."""
    target = {"metric": "energy_per_token_j", "superiority": 0.10}
    thrifty = with_energy(cell("a"), energy(0.5), energy(0.4))
    ruled = candidate_ruling(rule(target), [thrifty], "cand")
    (line,) = ruled.criteria
    assert (ruled.outcome, line.bound, line.cells[0].ratio) == (
        "no_decision", 0.9, pytest.approx(0.8),
    )  # fmt: skip
    assert line.sentence.startswith(
        "energy per output token (J) at least 10% better (candidate/incumbent ≤ 0.90): "
        "inconclusive — a 0.80×, descriptive only"
    )
    spread = between(0.75, 0.85).model_copy(update={"metric": "energy_per_token_j"})
    replicated = [with_energy(cell(f"nat-r{i}"), energy(0.5), energy(0.4)) for i in (1, 2)]
    found = candidate_ruling(rule(target), replicated, "cand", Replicates([spread], WRITTEN))
    assert found.outcome == "promote"
    unmeasured = cell("a")  # no GPU ids: no energy figure
    assert candidate_ruling(rule(target), [unmeasured], "cand").criteria[0].status == "missing"


def test_goodput_per_joule_is_judged_higher_and_its_ratios_are_point_ratios() -> None:
    target = {"metric": "goodput_per_joule", "superiority": 0.10}
    entry = with_energy(cell("a"), energy(0.5, per_joule=0.002), energy(0.4, per_joule=0.003))
    ruled = candidate_ruling(rule(target), [entry], "cand")
    assert ruled.criteria[0].cells[0].ratio == pytest.approx(1.5)
    assert ruled.criteria[0].status == "inconclusive"  # one window: a point ratio
    ratios = figure_ratios(entry.arms, ["cand"])
    assert [(r.metric, r.higher_is_better, r.simulated) for r in ratios] == [
        ("energy_per_token_j", False, True),
        ("goodput_per_joule", True, True),
    ]
    assert [r.ratio for r in ratios] == [pytest.approx(0.8), pytest.approx(1.5)]
    assert figure_ratios(cell("a").arms, ["cand"]) == []  # neither arm measured


def test_replicated_energy_ratios_get_a_between_replicate_interval() -> None:
    plans = [
        Cell.model_validate({"id": f"nat-r{i}", "kind": "natural", "input_tokens": 512,
                             "concurrency": 1, "requests": 10,
                             "replicate": {"of": "nat", "index": i, "count": 2}})
        for i in (1, 2)
    ]  # fmt: skip
    entries = []
    for plan, per_token in zip(plans, (0.40, 0.42), strict=True):
        entry = with_energy(cell(plan.id), energy(0.5), energy(per_token))
        ratios = figure_ratios(entry.arms, ["cand"])
        entries.append(entry.model_copy(update={"figure_ratios": ratios}))
    (found,) = [r for r in replicated_ratios(plans, entries) if r.metric == "energy_per_token_j"]
    assert found.compared == ["nat-r1", "nat-r2"] and found.reason is None
    assert found.low is not None and found.high is not None and found.low < 0.82 < found.high
