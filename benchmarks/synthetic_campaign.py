"""A synthetic campaign folder of any size, written through faceoff's own writers.

    .venv/bin/python -m benchmarks.synthetic_campaign OUT_DIR --requests 100000 [--cells 42]

Writes ``OUT_DIR/<campaign>``: the frozen matrix and the protected-file snapshot,
each arm's lane run (``lane.json``), and per cell and arm an attempt folder with
the request plan (``build_plan`` on the incumbent, ``retokenize`` on the
candidate, against the simulator's tokenizer in process), a journal of scored
outcomes on closed-loop streams, engine samples (the simulator's own Prometheus
families, scraped by ``EngineSampler`` at the matrix's engine cadence), GPU and
host samples at the memory cadence, ``cell.json``, ``telemetry.json`` and the
guard's ``verdict.json``; then the restored incumbent's lane run and the sealed
``receipt.json``. ``write_bundle`` and ``faceoff audit`` run on it as on a real
campaign. Only the timings are invented (seeded; the candidate slightly faster),
and NVML is a stand-in device set: this host has no GPU.

The total of scored requests is spread over cells × arms; ``benchmarks.audit_scale``
measures the bundle writer and the audit on folders of 10 K to 1 M requests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from collectors.aliases import vllm_aliases
from collectors.cadence import journal_window
from collectors.engine import EngineSampler, Scrape
from collectors.gpu.nvml import EccCounts, MemoryInfo, Utilization, XidCount
from collectors.gpu.sampler import GpuSampler
from collectors.host import HostSampler, MemoryTarget
from collectors.sampler import Clocks, Sampler, Tick
from collectors.settings import CollectorSettings
from collectors.telemetry import summarize_folder
from evidence.folder.layout import CELLS_DIR, FROZEN_FILE, attempt_name
from faceoff.canonical import sha256_hex
from faceoff.files import JsonlAppender
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord, IdentityRef, LaneAtEnd
from faceoff.formats.attempt.collector_samples import EngineStatus
from faceoff.formats.attempt.journal import JOURNAL_NAME, RequestOutcome, Status, Usage
from faceoff.formats.attempt.request_plan import PLAN_NAME, PlannedRequest, RequestPlan
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE
from faceoff.formats.attempt.verdict import VERDICT_FILE
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.lane import LANE_FILE, LANES_DIR, LaneRecord
from faceoff.formats.protected import compare, snapshot
from faceoff.formats.receipt import RECEIPT_FILE, CandidateAbsence, Receipt, bound_files
from guards.judge import judge_cell
from lanes.lane_context import LanePurpose, next_run_dir
from lanes.restoration import snapshot_before
from matrix.arm import Arm
from matrix.cell import Cell
from matrix.model import Matrix
from simulator.metrics import Families
from simulator.profile import load_profile
from simulator.tokenizer import render_chat
from workload.plan import build_plan, retokenize
from workload.tokenizer import TokenCount, vector_sha256

EPOCH = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)  # the night the synthetic campaign ran
MONO_START_NS = 10**12
CAMPAIGN = "synthetic-nightly"
ARMS = (("incumbent-r11", "incumbent", "exl3-r11"), ("candidate-r2", "candidate", "nvfp4-r2"))
SPEEDUP = {"incumbent": 1.0, "candidate": 0.93}  # candidate timings relative to the incumbent


@dataclass(frozen=True)
class Shape:
    """How big: ``requests`` scored requests over ``cells`` cells on two arms."""

    requests: int = 10_000
    cells: int = 42
    concurrency: int = 32
    input_tokens: int = 256
    output_tokens: int = 48
    engine_period_s: float = 10.0
    memory_period_s: float = 20.0
    seed: int = 20261201

    @property
    def per_attempt(self) -> int:
        return max(self.concurrency, self.requests // (2 * self.cells))


class WordTokenizer:
    """A lane's ``/tokenize`` stand-in that counts the chat template's words as tokens:
    exact and deterministic like the simulator's, and cheap enough to plan a million
    requests (the simulator's own tokenizer costs a millisecond a prompt)."""

    def __init__(self, max_model_len: int) -> None:
        self.max_model_len = max_model_len

    async def tokenize(
        self, messages: Sequence[dict[str, str]], template_kwargs: dict[str, Any] | None
    ) -> TokenCount:
        words = render_chat(list(messages)).split()
        return TokenCount(len(words), sha256_hex(" ".join(words).encode()), self.max_model_len)


class SyntheticClock:
    """The campaign's own time: samplers read it, the generator moves it."""

    def __init__(self) -> None:
        self.now_ns = MONO_START_NS

    def wall(self) -> datetime:
        return EPOCH + timedelta(microseconds=(self.now_ns - MONO_START_NS) // 1000)

    @property
    def clocks(self) -> Clocks:
        return Clocks(mono_ns=lambda: self.now_ns, wall=self.wall)


class FamiliesSource:
    """The simulator's engine metrics families as a scrape source (no HTTP in between)."""

    def __init__(self, families: Families) -> None:
        self.families = families

    def open(self) -> None:
        return None

    def fetch(self) -> Scrape:
        return Scrape(EngineStatus.OK, 200, text=self.families.exposition().decode())

    def close(self) -> None:
        return None


class StandInGpu:
    """NVML's answers for one GPU: this host has none (the one stand-in of the generator)."""

    def __init__(self, index: int, clock: SyntheticClock) -> None:
        self.index, self.clock = index, clock

    def uuid(self) -> str:
        return f"GPU-synthetic-{self.index}"

    def name(self) -> str:
        return "Synthetic H200"

    def memory(self) -> MemoryInfo:
        total = 141 * 2**30
        used = total - 4 * 2**30 - (self.clock.now_ns // 10**9) % 2**20
        return MemoryInfo(used, total - used, total)

    def utilization(self) -> Utilization:
        return Utilization(80 + (self.clock.now_ns // 10**9) % 15, 40)

    def power_w(self) -> float:
        return 420.0

    def temperature_c(self) -> int:
        return 61

    def processes(self) -> list[tuple[int, int | None]]:
        return [(os.getpid(), 120 * 2**30)]

    def energy_mj(self) -> int:
        return self.clock.now_ns * 420 // 10**6  # 420 W since the clock began

    def clock_event_reasons(self) -> int:
        return 0

    def sm_clock_mhz(self) -> int:
        return 1980

    def max_sm_clock_mhz(self) -> int:
        return 1980

    def ecc_errors(self) -> EccCounts:
        return EccCounts(0, 0)

    def xid_errors(self) -> XidCount:
        return XidCount(0, None)


class StandInNvml:
    simulated = False

    def __init__(self, clock: SyntheticClock) -> None:
        self.clock = clock

    def init(self) -> None:
        return None

    def device(self, index: int) -> StandInGpu:
        return StandInGpu(index, self.clock)

    def shutdown(self) -> None:
        return None


def synthetic_matrix(shape: Shape, protected: Path) -> Matrix:
    sampling = {"max_tokens": shape.output_tokens}
    cells = [
        {
            "id": f"natural-{shape.input_tokens}-c{shape.concurrency}-{n:03d}",
            "kind": "natural",
            "input_tokens": shape.input_tokens,
            "concurrency": shape.concurrency,
            "requests": shape.per_attempt,
            "sampling": sampling,
        }
        for n in range(shape.cells)
    ]
    arms = [
        {
            "name": name,
            "role": role,
            "lane": "simulator",
            "port": 18000 + number,
            "served_model": "glm-5.3-flash",
            "gpu_ids": [2 * number, 2 * number + 1],
            "simulator": {"profile": profile},
        }
        for number, (name, role, profile) in enumerate(ARMS)
    ]
    return Matrix.model_validate(
        {
            "campaign": {"name": CAMPAIGN, "seed": shape.seed},
            "arms": arms,
            "cells": cells,
            "thresholds": {
                "engine_period_s": shape.engine_period_s,
                "memory_period_s": shape.memory_period_s,
                "max_stalled_requests": 1.0,
                "max_client_cpu_wait": 1.0,
            },
            "protected_files": [str(protected)],
        }
    )


def generate(out: Path, shape: Shape) -> Path:
    """Write the campaign folder under ``out``; returns it."""
    protected = Path(out) / "routes.yaml"
    protected.parent.mkdir(parents=True, exist_ok=True)
    protected.write_text("routes:\n  - llm.primary\n", encoding="utf-8")
    frozen = freeze(synthetic_matrix(shape, protected))
    folder = Path(out) / CAMPAIGN
    frozen.write(folder / FROZEN_FILE)
    snapshot_before(frozen, folder, EPOCH)
    clock = SyntheticClock()
    tokenizer = WordTokenizer(max_model_len=327_680)
    rng = random.Random(shape.seed)
    # One loop for every plan: asyncio.run, on Python 3.11, formats the repr of its
    # finished task when it restores SIGINT, and that repr holds the whole plan (seconds
    # for a plan of 10K requests).
    loop = asyncio.new_event_loop()
    try:
        for arm in frozen.matrix.arm_order():
            run = _lane_run(frozen, folder, arm, LanePurpose.CAMPAIGN, clock)
            for cell in frozen.matrix.cells_for(arm):
                attempt = folder / CELLS_DIR / cell.id / arm.name / attempt_name(1)
                plan = loop.run_until_complete(_plan(frozen, folder, cell, arm, tokenizer))
                _attempt(frozen, attempt, arm=arm, lane_run=run, plan=plan, clock=clock, rng=rng)
    finally:
        loop.close()
    _receipt(frozen, folder, clock)
    return folder


async def _plan(
    frozen: FrozenMatrix, folder: Path, cell: Cell, arm: Arm, tokenizer: WordTokenizer
) -> RequestPlan:
    incumbent = frozen.matrix.incumbent.name
    if arm.name != incumbent:  # the incumbent's texts, read back from its attempt as the
        # flow does (holding every cell's plan until the candidate's turn would not scale)
        reference = RequestPlan.read(folder / CELLS_DIR / cell.id / incumbent / attempt_name(1)
                                     / PLAN_NAME)  # fmt: skip
        return await retokenize(reference, tokenizer, model=arm.served_model)
    campaign = frozen.matrix.campaign
    return await build_plan(
        cell,
        seed=campaign.seed,
        namespace=campaign.namespace,
        model=arm.served_model,
        tokenizer=tokenizer,
    )


def _lane_run(
    frozen: FrozenMatrix, folder: Path, arm: Arm, purpose: LanePurpose, clock: SyntheticClock
) -> str:
    run_dir = next_run_dir(folder, arm.name, purpose)
    LaneRecord(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        arm=arm.name,
        role=arm.role.value,
        purpose=purpose.value,
        run=run_dir.name,
        lane_kind=arm.lane,
        state="running" if purpose is LanePurpose.RESTORE else "removed",
        pid=40_000 + len(purpose.value) + (clock.now_ns // 10**9) % 1000,
        command=[sys.executable, "-m", "simulator", "--port", str(arm.port)],
        base_url=f"http://127.0.0.1:{arm.port}",
        gpu_ids=list(arm.gpu_ids),
        engine_args=[],
        added_args=[],
        env={},
        mounts=[],
        created_at=clock.wall(),
    ).write(run_dir / LANE_FILE)
    return f"{LANES_DIR}/{arm.name}/{run_dir.name}"


def _attempt(
    frozen: FrozenMatrix,
    attempt: Path,
    *,
    arm: Arm,
    lane_run: str,
    plan: RequestPlan,
    clock: SyntheticClock,
    rng: random.Random,
) -> None:
    attempt.mkdir(parents=True)
    plan.write(attempt / PLAN_NAME)
    settings = CollectorSettings.from_thresholds(frozen.matrix.thresholds)
    started = clock.wall()
    start_ns = clock.now_ns + settings.engine_period_ns  # the baseline scrape comes first
    outcomes = _outcomes(plan, arm, start_ns, SPEEDUP[arm.role.value], rng)
    with JsonlAppender(attempt / JOURNAL_NAME, durable=False) as journal:
        for outcome in sorted(outcomes, key=lambda o: o.end_ns):
            journal.append(outcome)
    window = journal_window(outcomes)
    assert window is not None
    _samples(attempt, arm, outcomes=outcomes, window=window, settings=settings, clock=clock)
    summarize_folder(attempt, window, settings, vllm_aliases()).write(attempt / TELEMETRY_FILE)
    CellRecord(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        cell_id=plan.cell.id,
        arm=arm.name,
        attempt=1,
        lane_run=lane_run,
        lane_ready=True,
        lane_ready_reason=None,
        identity=IdentityRef(path=f"{lane_run}/identity.json", sha256=None, ok=True, reason=None),
        telemetry_error=None,
        window=window,
        started_at=started,
        ended_at=clock.wall(),
        deadline_s=plan.cell.deadline_s,
        deadline_hit=False,
        client_exit_code=0,
        lane_end=LaneAtEnd(running=True, exit_code=None, oom_killed=None),
        collector_settings=settings,
    ).write(attempt / CELL_FILE)
    judge_cell(attempt, frozen).write(attempt / VERDICT_FILE)


def _outcomes(
    plan: RequestPlan, arm: Arm, start_ns: int, speed: float, rng: random.Random
) -> list[RequestOutcome]:
    """Closed-loop streams: each sends its next request when the previous one ended."""
    stream_at: dict[int, int] = {}
    found = []
    plan_sha256 = plan.sha256()
    for request in sorted(plan.requests, key=lambda r: (r.stream, r.order)):
        due = stream_at.get(request.stream, start_ns + request.start_offset_ms * 10**6)
        outcome = _outcome(plan, plan_sha256, request, arm=arm, due_ns=due, speed=speed, rng=rng)
        stream_at[request.stream] = outcome.end_ns
        found.append(outcome)
    return found


def _outcome(
    plan: RequestPlan,
    plan_sha256: str,
    request: PlannedRequest,
    *,
    arm: Arm,
    due_ns: int,
    speed: float,
    rng: random.Random,
) -> RequestOutcome:
    send = due_ns + rng.randint(50_000, 400_000)
    ttft_us = int(speed * rng.lognormvariate(12.2, 0.25))  # ~200 ms
    itl_us = speed * rng.lognormvariate(9.9, 0.15)  # ~20 ms
    tokens = request.max_tokens
    offsets = [ttft_us + round(k * itl_us) for k in range(tokens)]
    last = send + offsets[-1] * 1000
    words = tokens * 3 // 4
    text = " ".join(["word"] * words)
    return RequestOutcome(
        cell_id=plan.cell.id,
        arm=arm.name,
        attempt=1,
        plan_sha256=plan_sha256,
        client_run="synthetic",
        phase=request.phase,
        index=request.index,
        stream=request.stream,
        role=request.role,
        status=Status.OK,
        response_id=f"chatcmpl-{request.canary}",
        finish_reason="length",
        http_status=200,
        error=None,
        canary=request.canary,
        prompt_sha256=request.prompt_sha256,
        wire_sha256=request.wire_sha256,
        target_input_tokens=request.target_input_tokens,
        input_tokens=request.input_tokens,
        max_tokens=request.max_tokens,
        usage=Usage(prompt_tokens=request.input_tokens, completion_tokens=tokens),
        wall_anchor_utc=EPOCH,
        mono_anchor_ns=MONO_START_NS,
        due_ns=due_ns,
        queued_ns=due_ns + 20_000,
        send_ns=send,
        schedule_delay_ns=send - due_ns,
        headers_ns=send + ttft_us * 600,
        first_event_ns=send + ttft_us * 700,
        first_output_ns=send + ttft_us * 1000,
        first_content_ns=send + ttft_us * 1000,
        last_token_ns=last,
        usage_ns=last + 200_000,
        done_ns=last + 300_000,
        end_ns=last + 500_000,
        events=tokens + 3,
        chunk_offsets_us=offsets,
        chunk_kinds="c" * tokens,
        output_chars=len(text),
        output_words=words,
        output_sha256=vector_sha256([len(text)]),
        output_excerpt=text[:1024],
        reasoning_chars=0,
        contract_words=None,
        marker_expected=None,
        marker_found=None,
        refusal=False,
    )


def _samples(
    attempt: Path,
    arm: Arm,
    *,
    outcomes: Sequence[RequestOutcome],
    window: CellWindow,
    settings: CollectorSettings,
    clock: SyntheticClock,
) -> None:
    """Engine, GPU and host samples at their cadences, the engine's counters following the
    requests: a request's tokens are counted when it ends, as vLLM counts them."""
    families = Families(load_profile("tiny"), "glm-5.3-flash")
    engine = EngineSampler(FamiliesSource(families), attempt, vllm_aliases(), clocks=clock.clocks)
    gpu = GpuSampler(StandInNvml(clock), arm.gpu_ids, attempt, clocks=clock.clocks)
    host = HostSampler(MemoryTarget(pid=os.getpid()), attempt, clocks=clock.clocks)
    by_end = sorted(outcomes, key=lambda o: o.end_ns)
    start = window.start_ns - settings.engine_period_ns
    ended, every = 0, settings.memory_period_ns // settings.engine_period_ns or 1
    samplers: list[Sampler] = [engine, gpu, host]
    for sampler in samplers:
        sampler.open()
    seq = 0
    while True:
        due = start + seq * settings.engine_period_ns
        final = due > window.end_ns
        clock.now_ns = due
        while ended < len(by_end) and by_end[ended].end_ns <= due:
            _count(families, by_end[ended])
            ended += 1
        running = sum(1 for o in by_end[ended:] if (o.send_ns or 0) <= due)
        families.running.set(running)
        families.kv_usage.set(min(1.0, running / 64))
        tick = Tick(seq, due, due + 150_000, settings.engine_period_ns, final=final)
        engine.take(tick)
        if seq % every == 0 or final:
            memory_tick = Tick(seq // every, due, due + 150_000, settings.memory_period_ns, final)
            gpu.take(memory_tick)
            host.take(memory_tick)
        if final:
            break
        seq += 1
    for sampler in samplers:
        sampler.close()
    clock.now_ns += settings.engine_period_ns


def _count(families: Families, outcome: RequestOutcome) -> None:
    assert outcome.usage is not None and outcome.send_ns is not None
    families.prompt_tokens.inc(outcome.usage.prompt_tokens)
    families.generation_tokens.inc(outcome.usage.completion_tokens)
    families.success["length"].inc()
    families.prefix_queries.inc(outcome.usage.prompt_tokens)
    first = outcome.first_output_ns or outcome.end_ns
    ttft, e2e = (first - outcome.send_ns) / 1e9, (outcome.end_ns - outcome.send_ns) / 1e9
    queue = min(0.01, ttft / 4)
    families.h_e2e.observe(e2e)
    families.h_ttft.observe(ttft)
    families.h_queue.observe(queue)
    families.h_prefill.observe(ttft - queue)
    families.h_decode.observe(e2e - ttft)
    families.h_inference.observe(e2e - queue)
    # one observation of the mean gap per request (vLLM observes every gap): the
    # histogram family is present, and generating a million requests stays quick
    families.h_itl.observe((e2e - ttft) / max(1, outcome.usage.completion_tokens - 1))
    families.h_prompt.observe(outcome.usage.prompt_tokens)
    families.h_generation.observe(outcome.usage.completion_tokens)


def _receipt(frozen: FrozenMatrix, folder: Path, clock: SyntheticClock) -> None:
    """The incumbent restored in its own lane run, every native file bound."""
    started = clock.wall()
    incumbent = frozen.matrix.incumbent
    run = _lane_run(frozen, folder, incumbent, LanePurpose.RESTORE, clock)
    record = LaneRecord.read(folder / run / LANE_FILE)
    protected = frozen.matrix.protected_files
    receipt = Receipt(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        attempt=1,
        incumbent_arm=incumbent.name,
        lane_kind=incumbent.lane,
        lane_run=run,
        image=incumbent.image,
        running_image=None,
        container_id=None,
        pid=record.pid,
        identity_ok=True,
        identity_reason=None,
        identity_ready_at=clock.wall(),
        candidates=[
            CandidateAbsence(arm=arm.name, absent=True, detail="no process of it remains")
            for arm in frozen.matrix.candidates
        ],
        smoke=None,
        json_smoke=None,
        router=None,
        protected_files=compare(snapshot(protected, EPOCH), snapshot(protected, clock.wall())),
        started_at=started,
        completed_at=clock.wall(),
        bound_files=bound_files(folder),
    )
    receipt.judged().sealed().write(folder / RECEIPT_FILE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--requests", type=int, default=Shape.requests)
    parser.add_argument("--cells", type=int, default=Shape.cells)
    args = parser.parse_args()
    folder = generate(args.out, Shape(requests=args.requests, cells=args.cells))
    print(folder)


if __name__ == "__main__":
    main()
