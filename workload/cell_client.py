"""The client process of one cell run.

    python -m workload.cell_client --plan requests.json --base-url http://127.0.0.1:PORT \\
        --journal journal.jsonl [--cell-deadline-s S] [--arm NAME] [--attempt N] [--progress]
        [--receive sleep|spin]

It runs in its own process so that sampling and orchestration cannot delay its
event loop. Request bodies come from the plan file, never from argv. SIGTERM (or
SIGINT) cancels the requests in flight and journals them as cancelled before the
process exits. On stdout: one JSON line per journaled request with ``--progress``
(written after its group's fsync), then a JSON summary (counts by status, what stopped
the run, the process's CPU seconds, in all and while it ran the cell, and the seconds it
waited for a CPU, so a starved client shows). ``--receive spin`` has the event loop poll
its sockets instead of sleeping while requests are in flight (``workload.rx_stamps``):
each chunk is read as it lands, at the cost of the core the client runs on.

Exit status: 0 every request ran to a terminal status; 2 bad input; 3 stopped by
the cell deadline; 128 + N stopped by signal N. In every case but 2, each planned
request has exactly one journal line. A needle_search plan has no planned request:
the client runs the search (``workload.needle_search``) and journals each probe.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import secrets
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.request_plan import RequestPlan
from matrix.model import ClientReceive
from workload.client import RunContext
from workload.journal import JournalWriter
from workload.needle_search import SearchRunner
from workload.records import EXIT_BAD_INPUT, EXIT_DEADLINE
from workload.runner import CellRunner, RunReport
from workload.rx_stamps import RECEIVE_MODES

# The journal writer thread holds the GIL while it serialises a line; a short switch
# interval bounds how long a chunk read can wait for it (the default is 5 ms).
GIL_SWITCH_INTERVAL_S = 0.0005
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def client_command(
    plan: Path,
    base_url: str,
    journal: Path,
    *,
    arm: str,
    attempt: int,
    cell_deadline_s: float | None = None,
    python: str = sys.executable,
    receive: ClientReceive = "sleep",
) -> list[str]:
    """The argv that starts the client process of one cell run (for the flow)."""
    command = [python, "-m", "workload.cell_client", "--plan", str(plan), "--base-url", base_url]
    command += ["--journal", str(journal), "--arm", arm, "--attempt", str(attempt)]
    if cell_deadline_s is not None:
        command += ["--cell-deadline-s", str(cell_deadline_s)]
    if receive != "sleep":
        command += ["--receive", receive]
    return command


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m workload.cell_client", description=__doc__)
    parser.add_argument("--plan", type=Path, required=True, help="requests.json of the cell")
    parser.add_argument("--base-url", required=True, help="lane API, e.g. http://127.0.0.1:8000")
    parser.add_argument("--journal", type=Path, required=True, help="journal.jsonl to append to")
    parser.add_argument("--cell-deadline-s", type=float, help="default: the cell's deadline_s")
    parser.add_argument("--arm", default="unnamed", help="arm name written on every line")
    parser.add_argument("--attempt", type=int, default=1, help="attempt number of the cell run")
    parser.add_argument("--progress", action="store_true", help="a stdout line per outcome")
    parser.add_argument(
        "--receive",
        choices=RECEIVE_MODES,
        default="sleep",
        help="while requests are in flight, sleep until bytes come (default) or spin: poll "
        "without sleeping, each chunk read as it lands, at the cost of a whole core",
    )
    return parser.parse_args(argv)


def anchor() -> tuple[datetime, int]:
    """A UTC wall-clock reading and the perf_counter_ns read around it (midpoint)."""
    before = time.perf_counter_ns()
    wall = datetime.now(UTC)
    return wall, (before + time.perf_counter_ns()) // 2


def context_for(plan: RequestPlan, args: argparse.Namespace) -> RunContext:
    wall, mono = anchor()
    return RunContext(
        cell_id=plan.cell.id,
        arm=args.arm,
        attempt=args.attempt,
        plan_sha256=plan.sha256(),
        client_run=secrets.token_hex(6),
        wall_anchor_utc=wall,
        mono_anchor_ns=mono,
        receive=args.receive,
    )


def print_progress(outcome: RequestOutcome) -> None:
    line = {"phase": outcome.phase.value, "index": outcome.index, "status": outcome.status.value}
    print(json.dumps({"journaled": line}), flush=True)


def signal_reason(signum: int) -> str:
    """What stopped the run when signal ``signum`` did (the summary's ``stopped_by``)."""
    return f"{signal.Signals(signum).name} received"


def runner_for(plan: RequestPlan, args: argparse.Namespace) -> CellRunner | SearchRunner:
    """The plan's requests, or for a needle search the probes its answers lead to."""
    context = context_for(plan, args)
    if plan.cell.search is not None:
        return SearchRunner(plan, args.base_url, context, time.perf_counter_ns)
    return CellRunner(plan, args.base_url, context, time.perf_counter_ns)


async def run(
    runner: CellRunner | SearchRunner, journal: JournalWriter, deadline_s: float
) -> RunReport:
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, runner.stop.stop, signal_reason(signum))
    # Held until now (by main, and by a launcher before it) so that a stop sent while this
    # process was starting is handled here: every planned request journaled as cancelled.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        return await runner.run(journal, deadline_s)
    finally:
        # Held again to the end: closing the loop gives them back their default action,
        # and a dying parent sends one per thread of it that exits (PR_SET_PDEATHSIG), so
        # a late one would kill this process before the journal writer is done.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def runqueue_wait_s() -> float | None:
    """Seconds this process's main thread has waited for a CPU so far (Linux schedstat)."""
    try:
        return int(Path("/proc/self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def process_times(
    waited_before_run: float | None, cpu_before_run: float
) -> dict[str, float | None]:
    """CPU seconds of this process, in all and while it ran the cell (every thread: the
    requests' own cost, without start-up and imports), and seconds it waited for a CPU while
    it ran the cell: start-up is left out, since the guard compares the wait to the window."""
    waited, cpu = runqueue_wait_s(), time.process_time()
    during = None if waited is None or waited_before_run is None else waited - waited_before_run
    return {"cpu_s": round(cpu, 3), "run_cpu_s": round(cpu - cpu_before_run, 3)} | {
        "runqueue_wait_s": during
    }


def read_summary(log_path: Path) -> dict[str, Any] | None:
    """The client's last ``{"summary": …}`` line in its log, if it printed one."""
    lines: Sequence[str] = []
    if log_path.exists():
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    for line in reversed(lines):
        if line.startswith('{"summary"'):
            try:
                return dict(json.loads(line)["summary"])
            except (ValueError, KeyError, TypeError):
                return None
    return None


def exit_status(report: RunReport) -> int:
    for signum in STOP_SIGNALS:
        if report.stopped_by == signal_reason(signum):
            return 128 + signum
    return EXIT_DEADLINE if report.stopped_by else 0


def main(argv: Sequence[str] | None = None) -> int:
    # Before any thread starts: the journal writer inherits the mask, so a stop signal
    # only ever reaches the main thread, and only while the run's handlers are in place.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    args = parse_args(argv)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    try:
        plan = RequestPlan.read(args.plan)
        runner = runner_for(plan, args)
    except FaceoffError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    journal = JournalWriter(args.journal, on_written=print_progress if args.progress else None)
    # Everything loaded so far lives until exit; freezing it spares the run the full
    # collections that otherwise stall the event loop for tens of ms (measured).
    gc.collect()
    gc.freeze()
    waited_before_run, cpu_before_run = runqueue_wait_s(), time.process_time()
    try:
        report = asyncio.run(run(runner, journal, args.cell_deadline_s or plan.cell.deadline_s))
    finally:
        journal.close()
    if journal.callback_error is not None:
        print(f"warning: progress lines stopped: {journal.callback_error}", file=sys.stderr)
    summary = {"journaled": report.journaled, "statuses": dict(report.statuses)}
    summary |= {"stopped_by": report.stopped_by, "prewarm_error": report.prewarm_error}
    summary |= process_times(waited_before_run, cpu_before_run)
    print(json.dumps({"summary": summary}), flush=True)
    return exit_status(report)


if __name__ == "__main__":
    sys.exit(main())
