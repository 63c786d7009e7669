"""A real campaign folder from real parts, for the evidence tests (the flow does it in production).

Simulator lanes started as host processes by ``lanes`` (readiness, identity,
boot log), request plans built against the lane's own ``/tokenize``, the cell
client as a separate ``python -m workload.cell_client`` process, the collectors'
samplers around it, ``cell.json`` and the guard's verdict, and restoration of
the incumbent with its receipt. Nothing here writes a measurement by hand.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from collectors.cadence import journal_window
from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from collectors.settings import CollectorSettings
from evidence.folder.layout import CELLS_DIR, FROZEN_FILE, attempt_name
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord, IdentityRef, LaneAtEnd
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.verdict import VERDICT_FILE, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze, read_frozen
from faceoff.formats.lane import IDENTITY_FILE, LANES_DIR
from faceoff.formats.receipt import RECEIPT_FILE
from guards.dispositions import Ran, stop_policy_block
from guards.judge import judge_cell, not_run
from lanes.bringup import BringUp, bring_up, read_baseline
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LaneContext, LanePurpose, next_run_dir
from lanes.readiness import Waiting
from lanes.restoration import RestoreTools, bring_back, snapshot_before
from matrix.arm import Arm
from matrix.campaign_plan import CellRunKey
from matrix.cell import Cell
from matrix.model import Matrix
from tests.lanes.helpers import kill_recorded_processes
from workload.journal import read_journal
from workload.plan import build_plan, retokenize
from workload.tokenizer import LaneTokenizer

REPO = Path(__file__).resolve().parents[2]


def now() -> datetime:
    return datetime.now(UTC)


def sim_arm(name: str, role: str, profile: str, port: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "role": role,
        "lane": "simulator",
        "port": port,
        "served_model": "glm-5.3-flash",
        "startup_deadline_s": 60,
        "simulator": {"profile": profile, "time_scale": 10.0, "faults": {"contract_overrun": True}},
        "probes": {"smoke_max_tokens": 400},
        **extra,
    }


def run_campaign(
    workdir: Path, matrix: Matrix, environ: Mapping[str, str], *, leave_incumbent: bool = False
) -> Path:
    """Run every cell of every arm, then restore the incumbent; returns the campaign folder.

    The restored incumbent is stopped at the end unless ``leave_incumbent`` (it
    serves on, as in production; the caller stops it).
    """
    frozen = freeze(matrix)
    folder = Path(workdir) / matrix.campaign.name
    frozen.write(folder / FROZEN_FILE)
    snapshot_before(frozen, folder, now())
    plans: dict[str, RequestPlan] = {}
    ran: list[Ran] = []
    try:
        for arm in matrix.arm_order():
            run_arm(frozen, folder, arm, Progress(plans, ran), environ)
        restore(frozen, folder, environ)
    except BaseException:
        kill_recorded_processes(folder)
        raise
    if not leave_incumbent:
        kill_recorded_processes(folder)
    return folder


@dataclass
class Progress:
    plans: dict[str, RequestPlan]  # cell id -> the incumbent's plan
    ran: list[Ran]  # decided cell runs, in campaign order


@contextmanager
def lane_up(
    frozen: FrozenMatrix, folder: Path, arm: Arm, environ: Mapping[str, str]
) -> Iterator[BringUp]:
    """A new campaign lane run of the arm, brought up (readiness, identity), then stopped."""
    ctx = LaneContext(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        purpose=LanePurpose.CAMPAIGN,
        run_dir=next_run_dir(folder, arm.name, LanePurpose.CAMPAIGN),
        environ=environ,
        now=now,
    )
    lane = open_lane(arm, ctx, python=sys.executable)
    up = bring_up(lane, UrllibHttp(), Waiting(now=now), baseline=read_baseline(folder, arm.name))
    try:
        yield up
    finally:
        lane.stop(grace_s=5)
        lane.remove()


def run_arm(
    frozen: FrozenMatrix, folder: Path, arm: Arm, progress: Progress, environ: Mapping[str, str]
) -> None:
    with lane_up(frozen, folder, arm, environ) as up:
        for cell in frozen.matrix.cells_for(arm):
            key = CellRunKey(cell.id, arm.name)
            attempt = folder / CELLS_DIR / cell.id / arm.name / attempt_name(1)
            attempt.mkdir(parents=True)
            policy = frozen.matrix.campaign.stop_policy
            blocked = stop_policy_block(policy, progress.ran, key, cell.kind)
            if blocked is None:
                verdict = run_cell(frozen, attempt, up, cell, progress.plans)
            else:
                verdict = not_run(frozen, cell.id, arm.name, 1, blocked)
            verdict.write(attempt / VERDICT_FILE)
            progress.ran.append(Ran(key, cell.kind, verdict.disposition))


def rerun_cell(folder: Path, cell_id: str, arm_name: str, environ: Mapping[str, str]) -> Path:
    """The next attempt of one cell run on a new lane run of its arm, as a reviewer's rerun
    makes it: the plan is retokenized from the incumbent's first attempt. Returns its folder."""
    frozen = read_frozen(folder / FROZEN_FILE)
    arm = next(a for a in frozen.matrix.arm_order() if a.name == arm_name)
    cell = next(c for c in frozen.matrix.cells if c.id == cell_id)
    runs = folder / CELLS_DIR / cell_id
    number = 1 + sum(1 for _ in (runs / arm_name).glob("attempt-*"))
    incumbent = frozen.matrix.arm_order()[0].name
    plans = {cell_id: RequestPlan.read(runs / incumbent / attempt_name(1) / PLAN_NAME)}
    attempt = runs / arm_name / attempt_name(number)
    attempt.mkdir()
    with lane_up(frozen, folder, arm, environ) as up:
        run_cell(frozen, attempt, up, cell, plans).write(attempt / VERDICT_FILE)
    return attempt


def run_cell(
    frozen: FrozenMatrix, attempt: Path, up: BringUp, cell: Cell, plans: dict[str, RequestPlan]
) -> Verdict:
    arm, record = up.lane.arm, up.lane.record
    number = int(attempt.name.removeprefix("attempt-"))
    plan = asyncio.run(_plan(frozen, cell, record.base_url, arm.served_model, plans))
    plan.write(attempt / PLAN_NAME)
    settings = CollectorSettings.from_thresholds(frozen.matrix.thresholds)
    started = now()
    collectors = CellCollectors(
        metrics_url=record.base_url + "/metrics",
        target=MemoryTarget(pid=record.pid),
        gpu_ids=arm.gpu_ids,
        folder=attempt,
        settings=settings,
    )
    collectors.start()
    client = _client(attempt, record.base_url, arm.name, cell, number)
    collectors.stop()
    window = journal_window(read_journal(attempt / JOURNAL_NAME).outcomes)
    if window is not None:
        collectors.summarize(window)
    CellRecord(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        cell_id=cell.id,
        arm=arm.name,
        attempt=number,
        lane_run=f"{LANES_DIR}/{arm.name}/{record.run}",
        lane_ready=up.identity.readiness.ready,
        lane_ready_reason=up.identity.readiness.reason,
        identity=IdentityRef(
            path=f"{LANES_DIR}/{arm.name}/{record.run}/{IDENTITY_FILE}",
            sha256=None,
            ok=up.identity.verdict.ok,
            reason=up.identity.verdict.reason,
        ),
        telemetry_error=None,
        window=window,
        started_at=started,
        ended_at=now(),
        deadline_s=cell.deadline_s,
        deadline_hit=client.returncode == 3,
        client_exit_code=client.returncode,
        lane_end=LaneAtEnd(running=up.lane.exit_status() is None, exit_code=None, oom_killed=None),
        collector_settings=settings,
    ).write(attempt / CELL_FILE)
    return judge_cell(attempt, frozen)


async def _plan(
    frozen: FrozenMatrix, cell: Cell, base_url: str, model: str, plans: dict[str, RequestPlan]
) -> RequestPlan:
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, base_url, model)
        if cell.id in plans:
            return await retokenize(plans[cell.id], tokenizer, model=model)
        campaign = frozen.matrix.campaign
        plans[cell.id] = await build_plan(
            cell,
            seed=campaign.seed,
            namespace=campaign.namespace,
            model=model,
            tokenizer=tokenizer,
            slo=frozen.matrix.slo_of(cell),
        )
        return plans[cell.id]


def _client(
    attempt: Path, base_url: str, arm: str, cell: Cell, number: int
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "workload.cell_client", "--plan", str(attempt / PLAN_NAME)),
            *("--base-url", base_url, "--journal", str(attempt / JOURNAL_NAME)),
            *("--arm", arm, "--attempt", str(number), "--cell-deadline-s", str(cell.deadline_s)),
        ],
        capture_output=True,
        text=True,
        timeout=cell.deadline_s + 30,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )


def restore(frozen: FrozenMatrix, folder: Path, environ: Mapping[str, str]) -> None:
    tools = RestoreTools(
        environ=dict(environ), now=now, http=UrllibHttp(), docker=_no_docker, grace_s=5
    )
    attempt = bring_back(frozen, folder, attempt=1, tools=tools)
    attempt.receipt.write(folder / RECEIPT_FILE)


def _no_docker() -> Any:
    raise AssertionError("simulator campaigns never touch Docker")
