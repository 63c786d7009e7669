"""Open-loop cells on a real simulator lane: sends on the seeded schedule, whatever completes."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import aiohttp

from evidence.attempt.summary import summarize_journal
from faceoff.formats.attempt.journal import Phase, RequestOutcome, Status
from faceoff.formats.attempt.request_plan import RequestPlan
from flows.campaign.planning import PlanTarget, plan_warmups
from matrix.arm import Arm
from matrix.cell import Cell
from matrix.slo import Slo
from simulator.capacity import saturated_rate
from simulator.profile import load_profile
from tests.workload.conftest import MODEL, StartSim, cell, http_plan
from tests.workload.test_cell_client import client
from workload.journal import read_journal
from workload.plan import build_plan, retokenize
from workload.tokenizer import LaneTokenizer

RATE = 20.0


def open_cell(**fields: object) -> Cell:
    sampling = {"max_tokens": 48, "ignore_eos": True}
    base = {"arrival": "poisson", "rate": RATE, "requests": 16, "concurrency": 16}
    return cell(**(base | {"sampling": sampling} | fields))  # type: ignore[arg-type]


def plan_on(url: str, **fields: object) -> RequestPlan:
    return asyncio.run(http_plan(url, open_cell(**fields)))


async def retokenized(plan: RequestPlan, url: str) -> RequestPlan:
    async with aiohttp.ClientSession() as session:
        return await retokenize(plan, LaneTokenizer(session, url, MODEL))


def run(plan: RequestPlan, url: str, folder: Path, arm: str) -> list[RequestOutcome]:
    folder.mkdir()
    plan.write(folder / "requests.json")
    proc = client(folder / "requests.json", url, folder / "journal.jsonl", "--arm", arm)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return list(read_journal(folder / "journal.jsonl").outcomes)


def test_both_arms_send_on_the_same_seeded_schedule_regardless_of_completions(
    start_sim: StartSim, tmp_path: Path
) -> None:
    incumbent, candidate = start_sim(time_scale=1.0), start_sim(time_scale=1.0)
    plan = plan_on(incumbent.url)
    other = asyncio.run(retokenized(plan, candidate.url))
    offsets = [r.arrival_s for r in plan.phase(Phase.SCORED)]
    assert offsets == [r.arrival_s for r in other.phase(Phase.SCORED)]
    assert offsets[0] == 0 and sorted(offsets) == offsets and len(set(offsets)) == len(offsets)
    # the seed and the cell fix the schedule: a plan built again has it too
    assert [r.arrival_s for r in plan_on(incumbent.url).phase(Phase.SCORED)] == offsets

    for arm, lane, arm_plan in (("inc", incumbent, plan), ("cand", candidate, other)):
        lines = sorted(run(arm_plan, lane.url, tmp_path / arm, arm), key=lambda o: o.index)
        assert [o.status for o in lines] == [Status.OK] * 16
        assert {(o.step, o.rate_rps) for o in lines} == {(0, RATE)}
        start = lines[0].due_ns
        for o, offset in zip(lines, offsets, strict=True):
            assert o.due_ns - start == round(offset / RATE * 1e9)  # the seeded schedule
            assert o.send_ns >= o.due_ns  # never early
        # open loop: some request went out while an earlier one was still streaming
        assert any(b.send_ns < a.end_ns for a, b in itertools.pairwise(lines))
        summary = summarize_journal(
            read_journal(tmp_path / arm / "journal.jsonl"), arm_plan, arm=arm, attempt=2, slo=None
        )
        assert summary.open_loop is not None
        lag = summary.open_loop.schedule_lag
        assert lag.n == 16 and lag.p99_ms is not None and lag.p50_ms is not None
        assert 0 <= lag.p50_ms <= lag.p99_ms <= lag.max_ms  # type: ignore[operator]


def test_a_closed_loop_plan_is_unchanged_by_the_open_loop_fields(start_sim: StartSim) -> None:
    sim = start_sim()
    plan = asyncio.run(http_plan(sim.url, cell()))
    dumped = plan.model_dump(mode="json")
    assert "load" not in dumped
    assert all("step" not in r and "arrival_s" not in r for r in dumped["requests"])


def test_the_bound_on_requests_in_flight_holds_and_its_wait_is_lag(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(time_scale=1.0)
    # 8 requests due within 8 ms, each streaming ~48 tokens (a quarter second): one at a time
    plan = plan_on(sim.url, arrival="constant", rate=1000.0, requests=8, concurrency=1)
    lines = sorted(run(plan, sim.url, tmp_path / "one", "inc"), key=lambda o: o.send_ns)
    assert all(b.send_ns >= a.end_ns for a, b in itertools.pairwise(lines))
    assert lines[-1].send_ns - lines[-1].due_ns > 7 * (lines[0].end_ns - lines[0].send_ns) // 2


TINY = ("--set", "engine.max_num_seqs=8", "--set", "engine.kv_cache_tokens=32768")


async def sweep_plan(url: str, c: Cell, slo: Slo) -> RequestPlan:
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, url, MODEL)
        return await build_plan(
            c, seed=7, namespace="workload-tests", model=MODEL, tokenizer=tokenizer, slo=slo
        )


def test_a_bisection_sweep_finds_the_simulator_capacity_within_one_step(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(time_scale=1.0, args=TINY)  # the bundled tiny profile's engine
    capacity = saturated_rate(load_profile("tiny"), 256, 64)  # ~18.8 req/s
    sweep = cell(
        input_tokens=256,
        requests=48,
        concurrency=48,
        arrival="constant",
        sweep={"low": 8.0, "high": 40.0, "steps": 4},
        sampling={"max_tokens": 64, "ignore_eos": True},
    )
    slo = Slo(ttft_ms=400, attainment=0.9)
    plan = asyncio.run(sweep_plan(sim.url, sweep, slo))
    assert plan.load is not None and plan.load.steps == 4
    assert len(plan.phase(Phase.SCORED)) == 4 * 48
    lines = run(plan, sim.url, tmp_path / "sweep", "inc")
    steps = {o.step: o.rate_rps for o in lines}
    assert steps == {0: 8.0, 1: 40.0, 2: 24.0, 3: 16.0}  # low, high, then the midpoints
    found = summarize_journal(
        read_journal(tmp_path / "sweep" / "journal.jsonl"), plan, arm="inc", attempt=2, slo=None
    ).open_loop
    assert found is not None and found.sweep is not None and found.sweep.ladder_followed
    assert (found.sweep.max_rate_within_slo, found.sweep.breaks_at_rate) == (16.0, 24.0)
    assert 16.0 < capacity < 24.0


def test_arm_warmups_shaped_like_a_sweep_cell_stay_closed_loop(start_sim: StartSim) -> None:
    sim = start_sim()
    arm = Arm.model_validate(
        {"name": "inc", "role": "incumbent", "lane": "simulator", "port": sim.port,
         "served_model": MODEL, "warmups": 3, "simulator": {"profile": "tiny"}}
    )  # fmt: skip
    sweep = open_cell(rate=None, arrival="constant", sweep={"rates": [1.0, 2.0]})
    plan = plan_warmups(sweep, PlanTarget(arm, sim.url, 7, "warmups"))
    assert plan.load is None and len(plan.requests) == 3
    assert {(r.phase, r.step, r.arrival_s) for r in plan.requests} == {(Phase.WARMUP, None, None)}
