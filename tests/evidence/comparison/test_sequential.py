"""The sequential design of a rule: the order of its criteria never changes a ruling (each
criterion has its own figures and looks, even where two judge the same metric and statistic),
and the fidelity limits count in the candidate's outcome from the first look."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.comparison.ruling import Replicates, candidate_ruling
from evidence.comparison.sequential import SequentialGroup, deciding_figures, judged, needing_pass
from faceoff.formats.bundle.comparison import CellEntry
from matrix.fidelity import FidelityCriterion
from matrix.model import Matrix
from matrix.toml.reader import load_matrix
from tests.evidence.comparison.fidelity.test_criteria import entry as fidelity_entry
from tests.evidence.comparison.test_ruling import CANDIDATE, cell, ratio, rule
from tests.foundation.test_matrix import MINIMAL

AUTO = MINIMAL.replace("requests = 2\n", 'requests = 2\nreplicates = "auto"\nmax_passes = 3\n')
RULE = '\n[rule]\n[[rule.criteria]]\nmetric = "ttft_s"\nnon_inferiority = 0.05\n'
WRITTEN = "natural-1024-c1"
POOL: list[dict[str, Any]] = [  # two or three criteria on one metric, as the guide invites
    {"metric": "ttft_s", "non_inferiority": 0.05},
    {"metric": "ttft_s", "superiority": 0.05},
    {"metric": "ttft_s", "non_inferiority": 0.10},
    {"metric": "ttft_s", "non_inferiority": 0.10, "statistic": "p95"},
    {"metric": "decode_tps", "superiority": 0.10},
    {"metric": "decode_tps", "non_inferiority": 0.05},
]
PASS = st.tuples(st.floats(0.8, 1.25), st.floats(0.005, 0.3))  # ratio, half-width in logs


def _group(tmp_path: Path) -> SequentialGroup:
    path = tmp_path / "m.toml"
    path.write_text(AUTO + RULE)
    cells = load_matrix(path).cells
    return SequentialGroup(WRITTEN, "natural", tuple(cells))


def _entries(
    group: SequentialGroup, ttft: list[tuple[float, float]], decode: list[tuple[float, float]]
) -> dict[str, CellEntry]:
    def at(metric: str, found: tuple[float, float], statistic: str = "p50") -> Any:
        value, half = found
        return ratio(metric, value, value * math.exp(-half), value * math.exp(half), statistic)

    return {
        c.id: cell(c.id, at("ttft_s", t), at("decode_tps", d), tail=[at("ttft_s", t, "p95")])
        for c, t, d in zip(group.cells, ttft, decode, strict=False)
    }


def _ruled(
    criteria: list[dict[str, Any]], group: SequentialGroup, entries: dict[str, CellEntry]
) -> tuple[str, dict[str, tuple[object, ...]]]:
    declared = rule(*criteria)
    lines = judged(declared, [group], [CANDIDATE], entries)
    figures = deciding_figures(lines, {WRITTEN: len(group.cells)})
    written = {c.id: WRITTEN for c in group.cells}
    ruling = candidate_ruling(
        declared, list(entries.values()), CANDIDATE, Replicates((), written, figures)
    )
    by_criterion = {
        c.model_dump_json(): (line.status, line.deciding_cell, line.sentence)
        for c, line in zip(declared.criteria, ruling.criteria, strict=True)
    }
    return ruling.outcome, by_criterion


@settings(max_examples=60, deadline=None)
@given(
    chosen=st.lists(st.integers(0, len(POOL) - 1), min_size=2, max_size=5, unique=True),
    ttft=st.lists(PASS, min_size=1, max_size=3),
    decode=st.lists(PASS, min_size=1, max_size=3),
    shuffle=st.randoms(use_true_random=False),
)
def test_permuting_the_criteria_never_changes_an_outcome_or_a_criterion(
    tmp_path_factory: Any,
    chosen: list[int],
    ttft: list[tuple[float, float]],
    decode: list[tuple[float, float]],
    shuffle: random.Random,
) -> None:
    group = _group(tmp_path_factory.mktemp("order"))
    passes = min(len(ttft), len(decode))
    entries = _entries(group, ttft[:passes], decode[:passes])
    criteria = [POOL[i] for i in chosen]
    permuted = shuffle.sample(criteria, len(criteria))
    assert _ruled(criteria, group, entries) == _ruled(permuted, group, entries)


def test_two_criteria_on_one_metric_each_keep_their_own_deciding_look(tmp_path: Path) -> None:
    group = _group(tmp_path)
    # TTFT 0.95× (0.92–0.98) each pass: within a 5 % margin, straddling a 5 % target
    entries = _entries(group, [(0.95, 0.03)] * 3, [(1.0, 0.01)] * 3)
    margin, target = POOL[0], POOL[1]
    for order in ([margin, target], [target, margin]):
        outcome, lines = _ruled(order, group, entries)
        statuses = {key: line[0] for key, line in lines.items()}
        assert outcome == "no_decision"
        assert sorted(statuses.values()) == ["inconclusive", "met"]


def test_passes_below_the_calibrated_requests_never_decide_a_sequential_cell(
    tmp_path: Path,
) -> None:
    group = _group(tmp_path)
    clear = _entries(group, [(0.8, 0.02)] * 3, [(1.0, 0.01)] * 3)

    def fewer(entry: CellEntry) -> CellEntry:
        four = {"n_incumbent": 4, "n_candidate": 4}
        return entry.model_copy(
            update={"ratios": [r.model_copy(update=four) for r in entry.ratios]}
        )

    few = {cell_id: fewer(entry) for cell_id, entry in clear.items()}
    (line,) = judged(rule(POOL[0]), [group], [CANDIDATE], few)[WRITTEN]
    assert line.decided_at is None and line.status == "inconclusive"
    assert all(look.descriptive and "fewer than the 29" in look.descriptive for look in line.looks)
    assert _ruled([POOL[0]], group, few)[0] == "no_decision"
    assert _ruled([POOL[0]], group, clear)[0] == "promote"


RENAMED = AUTO.replace('name = "old"', 'name = "inc"').replace('name = "new"', 'name = "cand"')
TTFT = {"metric": "ttft_s", "non_inferiority": 0.05}
KLD_LIMIT = FidelityCriterion(metric="kld_mean", limit=0.03)
FAITHFUL = fidelity_entry((0.02, 0.018, 0.022))
UNFAITHFUL = fidelity_entry((0.05, 0.045, 0.055))
STRADDLING = fidelity_entry((0.03, 0.025, 0.035))


@pytest.fixture
def matrix(tmp_path: Path) -> Matrix:
    path = tmp_path / "m.toml"
    path.write_text(
        RENAMED + '\n[rule]\n[[rule.criteria]]\nmetric = "ttft_s"\nnon_inferiority = 0.05\n'
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
