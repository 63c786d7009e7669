"""Structured against prose decode, arm by arm: the n-th decode_structured cell of an input
and load beside the n-th decode_prose cell of the same, both accepted. Pure."""

from __future__ import annotations

from evidence.attempt.summary import stats_of
from evidence.comparison.speculation import spec_pairs
from evidence.views.card.speculation import words
from faceoff.formats.bundle.comparison import CellEntry
from faceoff.formats.bundle.lane_facts import SpecAcceptance
from tests.evidence.comparison.test_ruling import cell


def accepted(rate: float) -> SpecAcceptance:
    return SpecAcceptance(
        drafts=100, draft_tokens=300, accepted_tokens=300 * rate, acceptance_rate=rate,
        mean_acceptance_length=1 + 3 * rate, per_position=[rate], exact=True, why_inexact=None,
    )  # fmt: skip


def probe(cell_id: str, kind: str, rate: float, *, candidate: str = "accepted") -> CellEntry:
    entry = cell(cell_id, kind=kind, candidate=candidate)
    inc, cand = entry.arms
    decode = {"decode_tps": stats_of([100.0 + 100 * rate])}
    cand = cand.model_copy(update={"speculation": accepted(rate), "metrics": decode})
    return entry.model_copy(update={"arms": [inc, cand]})


def test_structured_cells_pair_with_prose_cells_of_the_same_input_and_load() -> None:
    cells = [
        probe("s-r1", "decode_structured", 0.7), probe("s-r2", "decode_structured", 0.72),
        probe("natural", "natural", 0.5),
        probe("p-r1", "decode_prose", 0.45), probe("p-r2", "decode_prose", 0.44),
    ]  # fmt: skip
    pairs = spec_pairs(cells)
    assert [(p.arm, p.structured_cell, p.prose_cell) for p in pairs] == [
        ("inc", "s-r1", "p-r1"), ("cand", "s-r1", "p-r1"),
        ("inc", "s-r2", "p-r2"), ("cand", "s-r2", "p-r2"),
    ]  # fmt: skip
    cand = pairs[1]
    assert cand.structured is not None and cand.prose is not None
    assert (cand.structured.acceptance_rate, cand.prose.acceptance_rate) == (0.7, 0.45)
    assert (cand.structured_decode_tps, cand.prose_decode_tps) == (170.0, 145.0)
    assert (pairs[0].structured, pairs[0].prose) == (None, None)  # the incumbent does not draft
    assert words(cand.structured) == "70.00% accepted, 3.10 tokens/step"
    assert words(None) == "no speculation"


def test_a_pair_needs_both_cells_accepted_and_a_twin_of_the_same_load() -> None:
    blocked = [
        probe("s", "decode_structured", 0.7),
        probe("p", "decode_prose", 0.4, candidate="blocked"),
    ]
    assert [p.arm for p in spec_pairs(blocked)] == ["inc"]
    other = probe("p", "decode_prose", 0.4).model_copy(update={"stratum": "decode_prose/512/c2"})
    assert spec_pairs([probe("s", "decode_structured", 0.7), other]) == []
