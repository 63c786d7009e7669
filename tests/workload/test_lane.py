"""Plans built against a running lane from synchronous code (as the flow calls them)."""

from __future__ import annotations

from matrix.model import WorkloadKind
from tests.workload.conftest import MODEL, StartSim, cell
from workload.lane import plan_on_lane, retokenize_on_lane


def test_incumbent_plan_and_candidate_twin_share_text_and_vectors(start_sim: StartSim) -> None:
    incumbent, candidate = start_sim(), start_sim(args=["--served-model-name", "cand"])
    spec = cell(WorkloadKind.NEEDLE, input_tokens=1500, sampling={"reasoning_effort": "low"})
    plan = plan_on_lane(spec, seed=5, namespace="ns", model=MODEL, base_url=incumbent.url)
    twin = retokenize_on_lane(plan, base_url=candidate.url, model="cand")
    assert [r.messages for r in twin.requests] == [r.messages for r in plan.requests]
    # same tokenizer and template: the pair guard will find identical vectors
    assert [r.prompt_sha256 for r in twin.requests] == [r.prompt_sha256 for r in plan.requests]
    assert twin.tokenizer_fingerprint == plan.tokenizer_fingerprint
    # the model name differs, so the bodies (and their hashes) do
    assert twin.model == "cand" and twin.requests[0].wire_sha256 != plan.requests[0].wire_sha256


def test_a_plan_rebuilt_on_the_same_lane_is_identical(start_sim: StartSim) -> None:
    sim = start_sim()
    first = plan_on_lane(cell(), seed=1, namespace="ns", model=MODEL, base_url=sim.url)
    second = plan_on_lane(cell(), seed=1, namespace="ns", model=MODEL, base_url=sim.url)
    assert first.sha256() == second.sha256()
