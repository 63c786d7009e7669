"""Plans on a real lane: arm warmups shaped like any probe cell; the prompts' shared prefix."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from faceoff.formats.attempt.journal import Phase, RequestRole
from flows.campaign.planning import PlanTarget, plan_cell, plan_warmups
from simulator.launch import SimServer
from tests.flows.conftest import cell, sim_arm, write_plan
from workload.tokenizer import shared_prefix


@pytest.mark.parametrize(
    ("kind", "shape", "warmups"),
    [
        ("head_of_line", {"concurrency": 3, "requests": 5}, 2),
        ("session_reuse", {"concurrency": 2, "requests": 4}, 3),  # odd: no whole session
        ("needle", {"concurrency": 1, "requests": 2}, 1),
        ("agentic", {"requests": 4, "agentic": {"turns": 2, "tool_result_tokens": 64}}, 2),
        ("needle_search", {"search": {"low": 200, "high": 400, "step": 50, "budget": 4}}, 1),
    ],
)
def test_warmups_of_a_probe_cell_plan_as_independent_requests_on_one_stream(
    sim: SimServer, tmp_path: Path, kind: str, shape: dict[str, Any], warmups: int
) -> None:
    probe = cell(id=f"{kind}-400", kind=kind, **shape)
    target = PlanTarget(sim_arm(sim, warmups=warmups), sim.url, 3, "flows-tests:arm-warmup")
    plan = plan_warmups(probe, target)
    assert [(r.phase, r.stream, r.role) for r in plan.requests] == [
        (Phase.WARMUP, 0, RequestRole.SINGLE)
    ] * warmups
    # A needle search warms up at its low end, the length it expects to recall.
    target = probe.search.low if probe.search else probe.input_tokens
    assert {r.target_input_tokens for r in plan.requests} == {target}
    # A needle keeps its kind: its warmups carry a marker like its scored requests (probes).
    needles = ("needle", "needle_search")
    assert all((r.marker is not None) == (kind in needles) for r in plan.requests)


def test_a_plan_records_the_prefix_every_prompt_shares_on_the_lane(
    sim: SimServer, tmp_path: Path
) -> None:
    plan = write_plan(sim, tmp_path, cell(requests=3))
    vectors = [tokenize(sim, [m.model_dump() for m in r.messages]) for r in plan.requests]
    # the template's preamble and the '[' that opens every nonce: the same on each prompt
    assert plan.shared_prefix_tokens == shared_prefix(vectors) > 0
    assert len({v[plan.shared_prefix_tokens] for v in vectors}) > 1  # then they part
    target = PlanTarget(sim_arm(sim), sim.url, 3, "flows-tests")
    again = plan_cell(cell(requests=3), target, reference=plan)
    assert again.shared_prefix_tokens == plan.shared_prefix_tokens


def tokenize(sim: SimServer, messages: list[dict[str, str]]) -> list[int]:
    body = {"model": "sim-tiny", "messages": messages, "add_generation_prompt": True}
    request = urllib.request.Request(
        sim.url + "/tokenize", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as answer:
        return list(json.loads(answer.read())["tokens"])
