"""Plans built over running lanes' /tokenize, as the flow builds and retokenizes them."""

from __future__ import annotations

import aiohttp

from matrix.cell import WorkloadKind
from tests.workload.conftest import StartSim, cell, http_plan
from workload.plan import retokenize
from workload.tokenizer import LaneTokenizer


async def test_incumbent_plan_and_candidate_twin_share_text_and_vectors(
    start_sim: StartSim,
) -> None:
    incumbent, candidate = start_sim(), start_sim(args=["--served-model-name", "cand"])
    spec = cell(WorkloadKind.NEEDLE, input_tokens=1500, sampling={"reasoning_effort": "low"})
    plan = await http_plan(incumbent.url, spec)
    async with aiohttp.ClientSession() as session:
        twin = await retokenize(plan, LaneTokenizer(session, candidate.url, "cand"), model="cand")
    assert [r.messages for r in twin.requests] == [r.messages for r in plan.requests]
    # same tokenizer and template: the pair guard will find identical vectors
    assert [r.prompt_sha256 for r in twin.requests] == [r.prompt_sha256 for r in plan.requests]
    assert twin.tokenizer_fingerprint == plan.tokenizer_fingerprint
    # the model name differs, so the bodies (and their hashes) do
    assert twin.model == "cand" and twin.requests[0].wire_sha256 != plan.requests[0].wire_sha256


async def test_a_plan_rebuilt_on_the_same_lane_is_identical(start_sim: StartSim) -> None:
    sim = start_sim()
    first = await http_plan(sim.url, cell())
    second = await http_plan(sim.url, cell())
    assert first.sha256() == second.sha256()
