"""A rerun of an accepted run the declared rule judges is refused: it would give the rule
another look at the same cell. Failed or blocked runs, and runs no rule judges, rerun."""

from __future__ import annotations

import pytest

from evidence.reviews.recording import ReviewRequest, check_request, judged_accepted
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import (
    ArmCell,
    CandidateRuling,
    CellEntry,
    Comparison,
    Coverage,
    CriterionCell,
    CriterionLine,
    ReplicatedRatio,
    Ruling,
)
from faceoff.formats.bundle.reviews import Decision


def cell(cell_id: str, candidate: str = "accepted") -> CellEntry:
    arms = [
        ArmCell.model_construct(arm="inc", disposition="accepted"),
        ArmCell.model_construct(arm="cand", disposition=candidate),
    ]
    return CellEntry.model_construct(id=cell_id, arms=arms)


def comparison(judged: list[str], *, ruled: bool = True) -> Comparison:
    line = CriterionLine.model_construct(
        cells=[CriterionCell.model_construct(cell=c) for c in judged]
    )
    ruled_cand = CandidateRuling.model_construct(criteria=[line], outcome="no_decision")
    ruling = Ruling.model_construct(candidates=[ruled_cand])
    replicated = [ReplicatedRatio.model_construct(cell="rep", compared=["rep-r1", "rep-r2"])]
    cells = [cell("a"), cell("b"), cell("c", "failed"), cell("rep-r1"), cell("rep-r2")]
    return Comparison.model_construct(
        campaign="night",
        cells=cells,
        ruling=ruling if ruled else None,
        replicated=replicated,
        coverage=Coverage.model_construct(status="complete"),
    )


def rerun(*runs: str) -> ReviewRequest:
    return ReviewRequest("qa", Decision.RERUN_CELLS, "again", runs)


def test_an_accepted_run_the_rule_judges_is_refused_with_why_and_what_to_do() -> None:
    with pytest.raises(FaceoffError, match=r"refusing to rerun a/cand: accepted run\(s\)") as err:
        check_request(rerun("a/cand", "b/cand"), comparison(["a", "c"]), "complete")
    assert "another look" in str(err.value) and "run a new campaign" in str(err.value.fix)


def test_failed_runs_unjudged_cells_and_campaigns_without_a_rule_rerun_as_before() -> None:
    check_request(rerun("c/cand", "b/cand"), comparison(["a", "c"]), "closed_partial")
    check_request(rerun("a/cand"), comparison(["a"], ruled=False), "complete")


def test_a_replicated_cells_windows_count_as_judged() -> None:
    found = judged_accepted(comparison(["rep"]))
    assert found == {"rep-r1/inc", "rep-r1/cand", "rep-r2/inc", "rep-r2/cand"}
