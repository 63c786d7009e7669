"""Flow-step fixtures: a real simulator on loopback and a request plan built on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from flows.campaign.planning import PlanTarget, plan_cell
from matrix.arm import Arm
from matrix.cell import Cell
from simulator.launch import SimServer, running


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimServer]:
    with running("tiny", time_scale=10.0, log_path=tmp_path / "sim.log") as server:
        yield server


def sim_arm(server: SimServer, **fields: Any) -> Arm:
    base: dict[str, Any] = {
        "name": "inc",
        "role": "incumbent",
        "lane": "simulator",
        "port": server.port,
        "served_model": "sim-tiny",
        "simulator": {"profile": "tiny"},
    }
    return Arm.model_validate(base | fields)


def cell(**fields: Any) -> Cell:
    base: dict[str, Any] = {"id": "natural-400-c1", "kind": "natural", "input_tokens": 400}
    base |= {"concurrency": 1, "requests": 4, "sampling": {"max_tokens": 96}}
    return Cell.model_validate(base | fields)


def write_plan(server: SimServer, folder: Path, the_cell: Cell) -> RequestPlan:
    target = PlanTarget(sim_arm(server), server.url, 3, "flows-tests")
    plan = plan_cell(the_cell, target, reference=None)
    folder.mkdir(parents=True, exist_ok=True)
    plan.write(folder / PLAN_NAME)
    return plan
