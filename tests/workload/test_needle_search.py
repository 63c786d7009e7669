"""The needle search against a real simulator lane configured to garble beyond a length."""

from __future__ import annotations

from pathlib import Path

from matrix.model import Cell
from simulator.launch import running
from workload.needle_search import Lane, needle_search, next_length

MISS_ABOVE = 1500  # prompt tokens; the simulator garbles the marker of longer prompts


def test_next_length_tries_both_ends_then_halves_to_one_step() -> None:
    assert next_length(None, None, 300, 4000, 100) == 300
    assert next_length(None, 300, 300, 4000, 100) is None  # the low end already misses
    assert next_length(300, None, 300, 4000, 100) == 4000
    assert next_length(4000, None, 300, 4000, 100) is None  # the high end recalls
    assert next_length(300, 4000, 300, 4000, 100) == 2150
    assert next_length(1450, 1540, 300, 4000, 100) is None  # within a step


async def test_the_search_finds_the_length_the_lane_fails_beyond(tmp_path: Path) -> None:
    cell = Cell.model_validate({
        "id": "needle-search", "kind": "needle", "input_tokens": 4000, "concurrency": 1,
        "requests": 1, "deadline_s": 60, "sampling": {"max_tokens": 64, "reasoning_effort": "low"},
    })  # fmt: skip
    args = ["--fault", f"needle_miss_above_tokens={MISS_ABOVE}"]
    with running("tiny", time_scale=10.0, args=args) as sim:
        lane = Lane(sim.url, "sim-tiny", seed=4, namespace="needle-search")
        found = await needle_search(cell, lane, tmp_path, low=300, budget=10, step=100)
    assert found.verified is not None and found.failed is not None, found.probes
    assert found.verified <= MISS_ABOVE < found.failed  # the fault's edge, between the bounds
    assert found.resolution is not None and found.resolution <= 100  # within one step
    assert len(found.probes) <= 10
    assert journals(tmp_path) == len(found.probes)  # each probe journaled in its folder


def journals(folder: Path) -> int:
    return len(list(folder.glob("probe-*/journal.jsonl")))
