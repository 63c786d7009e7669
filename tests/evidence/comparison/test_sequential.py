"""The order of a rule's criteria never changes a ruling: each criterion has its own figures
and looks, even where two criteria judge the same metric and statistic."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.comparison.model import CellEntry
from evidence.comparison.ruling import Replicates, candidate_ruling
from evidence.comparison.sequential import SequentialGroup, deciding_figures, judged
from matrix.toml.reader import load_matrix
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
