"""Run one cell for real: simulator lane, request plan, client process, collectors.

What the campaign flow will do for a cell, reduced to the parts the guards read:
``requests.json`` (planned on the lane's own /tokenize), ``journal.jsonl`` from
``python -m workload.cell_client`` in its own process, ``engine.jsonl`` /
``host.jsonl`` / ``telemetry.json`` (and ``gpu.jsonl`` from the simulator's virtual GPUs
when the run names GPU ids) from ``collectors.cell_samplers.CellCollectors``, and
``cell.json`` (``faceoff.formats.attempt.cell_record.CellRecord``). Used by the capture script of
``tests/data/guards`` and by the guards' end-to-end test.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from collectors.cadence import journal_window
from collectors.cell_samplers import CellCollectors
from collectors.gpu.virtual import nvml_for_arm
from collectors.host import MemoryTarget
from collectors.settings import CollectorSettings
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord, IdentityRef, LaneAtEnd
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.frozen_matrix import FrozenMatrix
from matrix.cell import Cell
from simulator.launch import SimServer
from workload.cell_client import client_command
from workload.journal import read_journal
from workload.plan import build_plan, retokenize
from workload.records import EXIT_DEADLINE
from workload.tokenizer import LaneTokenizer

REPO = Path(__file__).resolve().parents[2]


def utc_now() -> datetime:
    return datetime.now(UTC)


async def _plan(cell: Cell, frozen: FrozenMatrix, server: SimServer, model: str) -> RequestPlan:
    spec = frozen.matrix.campaign
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, server.url, model)
        return await build_plan(
            cell, seed=spec.seed, namespace=spec.namespace, model=model, tokenizer=tokenizer
        )


async def _retokenized(plan: RequestPlan, server: SimServer, model: str) -> RequestPlan:
    async with aiohttp.ClientSession() as session:
        return await retokenize(plan, LaneTokenizer(session, server.url, model), model=model)


def plan_on(cell: Cell, frozen: FrozenMatrix, server: SimServer, model: str) -> RequestPlan:
    """The cell's request plan, counted by the lane's own tokenizer."""
    return asyncio.run(_plan(cell, frozen, server, model))


def retokenize_on(plan: RequestPlan, server: SimServer, model: str) -> RequestPlan:
    """The same texts, hashed by another lane's tokenizer (the candidate of a pair)."""
    return asyncio.run(_retokenized(plan, server, model))


@dataclass
class CellRun:
    """What to run: the frozen matrix, the cell, the arm, and where its lane listens."""

    frozen: FrozenMatrix
    cell_id: str
    arm: str
    server: SimServer
    folder: Path
    settings: CollectorSettings
    attempt: int = 1
    during: Callable[[CellRun], None] | None = None  # runs while the client process runs
    gpu_ids: list[int] = field(default_factory=list)  # the simulator's virtual GPUs

    @property
    def cell(self) -> Cell:
        return next(c for c in self.frozen.matrix.cells if c.id == self.cell_id)

    @property
    def model(self) -> str:
        return self.frozen.matrix.arm(self.arm).served_model


def run_cell(run: CellRun, plan: RequestPlan | None = None) -> CellRecord:
    """Plan (unless given), collect, run the client process, drain, summarize, record."""
    folder = run.folder
    folder.mkdir(parents=True, exist_ok=True)
    plan = plan or plan_on(run.cell, run.frozen, run.server, run.model)
    plan.write(folder / PLAN_NAME)
    started = utc_now()
    pid = run.server.process.pid
    collectors = CellCollectors(
        metrics_url=run.server.url + "/metrics",
        target=MemoryTarget(pid=pid),
        gpu_ids=run.gpu_ids,
        folder=folder,
        settings=run.settings,
        nvml=nvml_for_arm(
            simulator=True, base_url=run.server.url, gpu_ids=run.gpu_ids, lane_pid=pid
        ),
    )
    collectors.start()
    try:
        exit_code = _client(run)
    finally:
        collectors.stop()
    window = journal_window(read_journal(folder / JOURNAL_NAME).outcomes)
    if window is not None:
        collectors.summarize(window)
    record = _record(run, started, exit_code, window)
    record.write(folder / CELL_FILE)
    return record


def _client(run: CellRun) -> int:
    folder = run.folder
    command = client_command(
        folder / PLAN_NAME, run.server.url, folder / JOURNAL_NAME, arm=run.arm, attempt=run.attempt
    )
    client = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if run.during is not None:
        run.during(run)
    _, stderr = client.communicate(timeout=run.cell.deadline_s + 60)
    if client.returncode not in (0, EXIT_DEADLINE):
        raise RuntimeError(f"client exited {client.returncode}: {stderr.decode()[-2000:]}")
    return client.returncode


def _record(
    run: CellRun, started: datetime, exit_code: int, window: CellWindow | None
) -> CellRecord:
    code = run.server.returncode()
    return CellRecord(
        campaign=run.frozen.matrix.campaign.name,
        matrix_id=run.frozen.matrix_id,
        cell_id=run.cell_id,
        arm=run.arm,
        attempt=run.attempt,
        lane_run=f"lanes/{run.arm}/campaign-001",
        lane_ready=True,
        lane_ready_reason=None,
        identity=IdentityRef(
            path=f"lanes/{run.arm}/campaign-001/identity.json", sha256=None, ok=True, reason=None
        ),
        telemetry_error=None,
        window=window,
        started_at=started,
        ended_at=utc_now(),
        deadline_s=run.cell.deadline_s,
        deadline_hit=exit_code == EXIT_DEADLINE,
        client_exit_code=exit_code,
        lane_end=LaneAtEnd(
            running=code is None,
            exit_code=None if code is None else _exit_status(code),
            oom_killed=None,
        ),
        collector_settings=run.settings,
    )


def _exit_status(returncode: int) -> int:
    """Popen's -N for a signal death, as a shell writes it (128 + N)."""
    return 128 - returncode if returncode < 0 else returncode
