"""The needle search: its pure bisection, and the client process running a needle_search
plan against a real simulator lane configured to garble the marker beyond a length."""

from __future__ import annotations

import asyncio
from pathlib import Path

from faceoff.formats.attempt.journal import Phase, Status
from matrix.cell import Cell
from matrix.search import NeedleSearch
from tests.workload.conftest import StartSim, http_plan
from tests.workload.test_cell_client import client
from workload.journal import read_journal
from workload.needle_bounds import Probe, bounds, next_length, next_target

MISS_ABOVE = 1500  # prompt tokens; the simulator garbles the marker of longer prompts
SEARCH = NeedleSearch(low=300, high=4000, step=100, budget=10)


def probe(index: int, tokens: int, recalled: bool | None) -> Probe:
    return Probe(index, tokens, tokens, recalled)


def test_next_length_tries_both_ends_then_halves_to_one_step() -> None:
    assert next_length(None, None, 300, 4000, 100) == 300
    assert next_length(None, 300, 300, 4000, 100) is None  # the low end already misses
    assert next_length(300, None, 300, 4000, 100) == 4000
    assert next_length(4000, None, 300, 4000, 100) is None  # the high end recalls
    assert next_length(300, 4000, 300, 4000, 100) == 2150
    assert next_length(1450, 1540, 300, 4000, 100) is None  # within a step


def test_a_probe_without_an_answer_bounds_nothing_and_the_budget_ends_the_search() -> None:
    probes = [probe(0, 300, True), probe(1, 4000, False), probe(2, 2150, None)]
    assert bounds(probes) == (300, 4000)  # the timed-out probe says nothing
    assert next_target(probes, SEARCH) == 2150  # so its length is asked again
    spent = NeedleSearch(low=300, high=4000, step=100, budget=3)
    assert next_target(probes, spent) is None


def test_the_client_searches_to_the_length_the_lane_fails_beyond(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(args=["--fault", f"needle_miss_above_tokens={MISS_ABOVE}"])
    cell = Cell.model_validate({
        "id": "needle-search", "kind": "needle_search", "input_tokens": 4000, "concurrency": 1,
        "requests": 10, "deadline_s": 120, "search": SEARCH.model_dump(),
        "sampling": {"max_tokens": 64, "reasoning_effort": "low"},
    })  # fmt: skip
    plan = asyncio.run(http_plan(sim.url, cell))
    assert plan.requests == []  # the client plans each probe from the answer before it
    # what any two probes share on the lane, as a needle cell's prompts do: the cold-cache
    # rule allows its whole blocks as hits
    needle = {"id": "needle", "kind": "needle", "input_tokens": 600, "concurrency": 1}
    needles = asyncio.run(http_plan(sim.url, Cell.model_validate(needle | {"requests": 2})))
    assert plan.shared_prefix_tokens == needles.shared_prefix_tokens > 0
    plan.write(tmp_path / "requests.json")
    proc = client(tmp_path / "requests.json", sim.url, tmp_path / "journal.jsonl")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    lines = read_journal(tmp_path / "journal.jsonl").outcomes
    assert {o.phase for o in lines} == {Phase.PROBE}
    assert [o.index for o in lines] == list(range(len(lines)))
    assert all(o.plan_sha256 == plan.sha256() and o.arm == "inc" for o in lines)
    assert all(o.status is Status.OK and o.marker_expected for o in lines)
    assert len({o.canary for o in lines}) == len(lines)  # each probe its own cold prompt
    verified, failed = bounds([Probe.of(o) for o in lines])
    assert verified is not None and failed is not None, lines
    assert verified <= MISS_ABOVE < failed  # the fault's edge, between the bounds
    assert failed - verified <= SEARCH.step  # within one bisection step
    assert len(lines) <= SEARCH.budget
    assert [o.target_input_tokens for o in lines[:2]] == [SEARCH.low, SEARCH.high]


def test_a_search_stopped_by_its_deadline_journals_the_probe_in_flight(
    start_sim: StartSim, tmp_path: Path
) -> None:
    # the first probe takes about 28 s here against a 5 s deadline, and its plan about 40 ms:
    # the deadline lands inside it however slow the host, with no race against its answer
    sim = start_sim(time_scale=0.005)
    cell = Cell.model_validate({
        "id": "needle-search", "kind": "needle_search", "input_tokens": 4000, "concurrency": 1,
        "requests": 10, "deadline_s": 5, "search": SEARCH.model_dump(),
        "sampling": {"max_tokens": 64},
    })  # fmt: skip
    asyncio.run(http_plan(sim.url, cell)).write(tmp_path / "requests.json")
    proc = client(tmp_path / "requests.json", sim.url, tmp_path / "journal.jsonl")
    proc.communicate(timeout=120)
    assert proc.returncode == 3  # the cell deadline
    lines = read_journal(tmp_path / "journal.jsonl").outcomes
    assert [(o.status, o.target_input_tokens) for o in lines] == [(Status.CANCELLED, SEARCH.low)]
