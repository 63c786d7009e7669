"""One paired diagnostic on one arm's lane: the request, the scrapes around it, the record.

The lane is up (``flows.prefect.flow.ready_arm``: readiness, identity, the arm's warmups, as
for a cell). Into ``diagnostics/<cell>/<arm>/run-<n>/`` go the plan of one request of the
cell's prompts in the diagnostic phase (the incumbent's text retokenized on a
candidate), a ``/metrics`` scrape, the request through the load client process (its
journal line keeps every chunk's arrival), a settled scrape, the tail of the lane's log
and ``diagnostic.json``. A lane that cannot serve, or a request that cannot be planned,
still gets its ``diagnostic.json`` saying why. Plain functions: the flow
(``flows/prefect/diagnose.py``) wraps them in tasks; the command line checks the cell first.
"""

from __future__ import annotations

import time
from pathlib import Path

from collectors.aliases import vllm_aliases
from collectors.engine import EngineSampler, HttpMetricsSource
from collectors.sampler import Clocks, Tick
from evidence.attempt.diagnostics import LOG_TAIL_LINES, next_run_dir, summarize
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.diagnostic import DIAGNOSTIC_FILE, LOG_TAIL_FILE, Diagnostic, Seen
from faceoff.formats.frozen_matrix import FrozenMatrix
from flows.campaign.arm import ArmRun
from flows.campaign.client import run_client
from flows.campaign.context import CampaignContext
from flows.campaign.planning import plan_diagnostic
from lanes.bootlog import tail
from matrix.cell import Cell

SCRAPE_TIMEOUT_S = 30.0  # a loaded host answers /metrics slowly; one scrape each side
SCRAPE_PERIOD_NS = 1_000_000_000  # nominal: the two scrapes keep no schedule


def diagnosed_cell(frozen: FrozenMatrix, cell_id: str) -> Cell:
    """The matrix's cell of that id, or an error naming it and the valid ids."""
    cells = frozen.matrix.cells
    found = next((c for c in cells if c.id == cell_id), None)
    if found is None:
        raise FaceoffError(
            f"no cell {cell_id!r} in the matrix of campaign {frozen.matrix.campaign.name}; its "
            f"cells: {', '.join(c.id for c in cells)}",
            where="--diagnose",
            fix="pass one of those ids",
        )
    return found


def diagnose_run(
    context: CampaignContext, run: ArmRun, cell: Cell, reference: RequestPlan | None
) -> tuple[Diagnostic, Path]:
    """The arm's diagnostic run of ``cell`` on its lane run; its record and its folder."""
    folder = next_run_dir(context.campaign_dir, cell.id, run.arm.name)
    folder.mkdir(parents=True)
    setup_error = None
    if run.usable:
        try:
            _request(context, run, cell, folder, reference)
        except FaceoffError as exc:
            setup_error = exc.message
    seen = Seen(
        lane_run=context.relative(run.run_dir),
        lane_usable=run.usable,
        lane_reason=run.reason,
        warmups_failed=run.warmups_failed.sentence if run.warmups_failed else None,
        setup_error=setup_error,
    )
    diagnostic = summarize(folder, cell.id, run.arm.name, seen)
    diagnostic.write(folder / DIAGNOSTIC_FILE)
    return diagnostic, folder


def reference_of(folder: Path) -> RequestPlan | None:
    """The plan a later arm retokenizes, when this run got as far as planning."""
    path = folder / PLAN_NAME
    return RequestPlan.read(path) if path.is_file() else None


def _request(
    context: CampaignContext, run: ArmRun, cell: Cell, folder: Path, reference: RequestPlan | None
) -> None:
    target = run.plan_target(context.frozen.matrix.campaign)
    plan = plan_diagnostic(cell, target, reference=reference)
    plan.write(folder / PLAN_NAME)
    clocks = Clocks(mono_ns=time.perf_counter_ns, wall=context.tools.now)
    source = HttpMetricsSource(f"{run.base_url}/metrics", SCRAPE_TIMEOUT_S)
    scrapes = EngineSampler(source, folder, vllm_aliases(), clocks=clocks)
    scrapes.open()
    try:
        scrapes.take(_tick(clocks, 0, final=False))
        run_client(
            folder,
            base_url=run.base_url,
            deadline_s=cell.deadline_s,
            arm=run.arm.name,
            attempt=1,
            python=context.tools.python,
            receive=context.frozen.matrix.campaign.client_receive,
        )
        scrapes.take(_tick(clocks, 1, final=True))  # retried until the engine has drained
    finally:
        scrapes.close()
    _keep_log_tail(run, folder)


def _tick(clocks: Clocks, seq: int, *, final: bool) -> Tick:
    now = clocks.mono_ns()
    return Tick(seq, now, now, SCRAPE_PERIOD_NS, final=final)


def _keep_log_tail(run: ArmRun, folder: Path) -> None:
    if run.lane is not None:
        text = tail(run.lane.boot_log(), LOG_TAIL_LINES) + "\n"
        write_text_atomic(folder / LOG_TAIL_FILE, text)
