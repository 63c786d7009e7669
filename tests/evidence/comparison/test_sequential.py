"""Whether a sequential cell needs another pass when the rule also bounds fidelity: the
fidelity limits count in the candidate's outcome from the first look. Pure."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evidence.comparison.model import CellEntry
from evidence.comparison.sequential import needing_pass
from matrix.fidelity import FidelityCriterion
from matrix.model import Matrix
from matrix.toml.reader import load_matrix
from tests.evidence.comparison.fidelity.test_criteria import entry as fidelity_entry
from tests.evidence.comparison.test_ruling import cell, ratio, rule
from tests.foundation.test_matrix import MINIMAL

WRITTEN = "natural-1024-c1"
AUTO = (
    MINIMAL.replace("requests = 2\n", 'requests = 2\nreplicates = "auto"\nmax_passes = 3\n')
    .replace('name = "old"', 'name = "inc"')
    .replace('name = "new"', 'name = "cand"')
)
TTFT = {"metric": "ttft_s", "non_inferiority": 0.05}
KLD_LIMIT = FidelityCriterion(metric="kld_mean", limit=0.03)
FAITHFUL = fidelity_entry((0.02, 0.018, 0.022))
UNFAITHFUL = fidelity_entry((0.05, 0.045, 0.055))
STRADDLING = fidelity_entry((0.03, 0.025, 0.035))


@pytest.fixture
def matrix(tmp_path: Path) -> Matrix:
    path = tmp_path / "m.toml"
    path.write_text(
        AUTO + '\n[rule]\n[[rule.criteria]]\nmetric = "ttft_s"\nnon_inferiority = 0.05\n'
    )
    # the rule's fidelity limit, without the corpus a [[fidelity]] cell would pin
    return load_matrix(path).model_copy(update={"rule": rule(TTFT, fidelity=[KLD_LIMIT])})


def first_pass(value: float, half: float) -> list[CellEntry]:
    """Pass 1 of the cell: a TTFT ratio with its interval half-width (in logs)."""
    found = ratio("ttft_s", value, value * math.exp(-half), value * math.exp(half))
    return [cell(f"{WRITTEN}-r1", found)]


def test_a_fidelity_limit_not_met_settles_the_candidate_at_the_first_look(
    matrix: Matrix,
) -> None:
    undecided = first_pass(1.0, 0.2)  # straddles 1.05: the speed criterion wants more passes
    assert needing_pass(matrix, undecided)[WRITTEN].more
    need = needing_pass(matrix, undecided, [UNFAITHFUL])[WRITTEN]
    assert not need.more and not need.futile
    assert "cand's outcome is settled: do not promote" in need.why
    assert "mean KLD ≤ 0.03 against the reference: not met in fid" in need.why


def test_the_speed_criteria_decided_never_settle_a_promotion_before_fidelity_is_judged(
    matrix: Matrix,
) -> None:
    clear = first_pass(0.5, 0.01)  # met at look 1, O'Brien-Fleming's strict boundary and all
    unjudged = needing_pass(matrix, clear)[WRITTEN]
    assert not unjudged.more  # nothing a further pass could decide
    assert "settled: promote" not in unjudged.why
    assert "missing, no fidelity cell scored this candidate" in unjudged.why
    judged = needing_pass(matrix, clear, [FAITHFUL])[WRITTEN]
    assert "cand's outcome is settled: promote" in judged.why
    assert "mean KLD ≤ 0.03 against the reference: met in fid" in judged.why


def test_an_inconclusive_fidelity_limit_leaves_the_speed_criterion_its_passes(
    matrix: Matrix,
) -> None:
    need = needing_pass(matrix, first_pass(1.0, 0.2), [STRADDLING])[WRITTEN]
    assert need.more and need.why.startswith("undecided: TTFT p50 for cand")
