"""Arm warmups shaped like a probe cell: planned on a real lane, whatever the cell's pattern."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.planning import plan_warmups
from simulator.launch import SimServer
from tests.flows.conftest import cell, sim_arm
from workload.outcome import Phase, RequestRole


@pytest.mark.parametrize(
    ("kind", "shape", "warmups"),
    [
        ("head_of_line", {"concurrency": 3, "requests": 5}, 2),
        ("session_reuse", {"concurrency": 2, "requests": 4}, 3),  # odd: no whole session
        ("needle", {"concurrency": 1, "requests": 2}, 1),
    ],
)
def test_warmups_of_a_probe_cell_plan_as_independent_requests_on_one_stream(
    sim: SimServer, tmp_path: Path, kind: str, shape: dict[str, int], warmups: int
) -> None:
    probe = cell(id=f"{kind}-400", kind=kind, **shape)
    plan = plan_warmups(
        probe,
        sim_arm(sim, warmups=warmups),
        base_url=sim.url,
        seed=3,
        namespace="flows-tests:arm-warmup",
    )
    assert [(r.phase, r.stream, r.role) for r in plan.requests] == [
        (Phase.WARMUP, 0, RequestRole.SINGLE)
    ] * warmups
    assert {r.target_input_tokens for r in plan.requests} == {probe.input_tokens}
    # The needle keeps its kind: its warmups carry a marker like its scored requests.
    assert all((r.marker is not None) == (kind == "needle") for r in plan.requests)
