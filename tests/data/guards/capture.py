"""Capture the guards' test artifacts from real runs against the simulator.

    .venv/bin/python -m tests.data.guards.capture [--out tests/data/guards]

Every folder under ``cells/`` is one cell attempt run for real by
``tests.guards.cellrun.run_cell``: the simulator (tiny profile, 4× slower than
real time so a cell spans a dozen engine samples), the request plan from the
lane's /tokenize, ``python -m workload.cell_client`` in its own process, and
``collectors.cell_samplers.CellCollectors`` (engine every 0.25 s, host every 0.5 s).
Faults come from the simulator itself (``--fault``, ``--set``, ``/_sim/faults``,
a kill and restart). Only the native files the guard reads are kept; the raw
first/last scrapes and telemetry.json are recomputable or not read.

Three variants are derived from ``cells/natural`` by the tests, with the minimal
journal edits below (each function says exactly what it changes), because no
simulator fault produces them: a torn last journal line (a kill mid-write), a
usage off by one token, and a refusal flag. They are not stored twice.

The matrix is ``matrix.toml``; its frozen form is written as
``matrix.frozen.json``. Re-capturing changes timings and hashes, not which rule
each folder exercises; the tests assert on rules and reasons, not on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from collectors.settings import CollectorSettings
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from guards.artifacts import NATIVE_FILES
from matrix.toml.reader import load_matrix
from simulator.launch import SimServer, running, start, stop, wait_ready
from tests.guards.cellrun import CellRun, plan_on, retokenize_on, run_cell

HERE = Path(__file__).resolve().parent
SETTINGS = CollectorSettings(engine_period_s=0.25, memory_period_s=0.5, drain_timeout_s=3.0)
TIME_SCALE = 0.25
NATURAL = "natural-512-c2"


def keep_native(folder: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in NATIVE_FILES:
        if (folder / name).exists():
            shutil.copyfile(folder / name, out / name)


class Capture:
    def __init__(self, frozen: FrozenMatrix, out: Path, work: Path) -> None:
        self.frozen, self.out, self.work = frozen, out, work

    def cell(
        self,
        name: str,
        server: SimServer,
        cell_id: str,
        *,
        arm: str = "incumbent",
        attempt: int = 1,
        plan: RequestPlan | None = None,
        during: Callable[[CellRun], None] | None = None,
    ) -> Path:
        run = CellRun(
            self.frozen, cell_id, arm, server, self.work / name, SETTINGS, attempt, during
        )
        run_cell(run, plan)
        keep_native(run.folder, self.out / "cells" / name)
        return self.out / "cells" / name


@contextmanager
def lane(*args: str) -> Iterator[SimServer]:
    with running("tiny", time_scale=TIME_SCALE, args=args) as server:
        yield server


def post_faults(server: SimServer, **faults: object) -> None:
    request = urllib.request.Request(
        server.url + "/_sim/faults",
        data=json.dumps(faults).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5):
        pass


def metrics_gap(run: CellRun) -> None:
    """/metrics answers 500 for 1.2 s in the middle of the cell."""
    time.sleep(0.6)
    post_faults(run.server, metrics_status=500)
    time.sleep(1.2)
    post_faults(run.server, metrics_status=200)


def journaled(path: Path, lines: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= lines:
            return
        time.sleep(0.01)
    raise TimeoutError(f"{path} never reached {lines} lines")


def restart_after(
    lines: int, args: Sequence[str], restarted: list[SimServer]
) -> Callable[[CellRun], None]:
    """SIGKILL the lane once ``lines`` requests are journaled, restart it on the same port."""

    def hook(run: CellRun) -> None:
        journaled(run.folder / JOURNAL_NAME, lines)
        os.killpg(run.server.process.pid, signal.SIGKILL)
        run.server.process.wait()
        port = str(run.server.port)
        restarted.append(start("tiny", time_scale=TIME_SCALE, args=[*args, "--port", port]))
        run.server = wait_ready(restarted[-1])

    return hook


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- derived variants: minimal, documented edits of cells/natural (applied by the tests) ---


def _lines(folder: Path) -> list[str]:
    return (folder / JOURNAL_NAME).read_text().splitlines(keepends=True)


def derive(source: Path, target: Path, edit: Callable[[list[str]], str]) -> None:
    shutil.copytree(source, target, dirs_exist_ok=True)
    (target / JOURNAL_NAME).write_text(edit(_lines(source)))


def torn_last_line(lines: list[str]) -> str:
    """The last journal line cut in half, without its newline: a kill mid-write."""
    last = lines[-1]
    return "".join(lines[:-1]) + last[: len(last) // 2]


def _edit_first_scored(lines: list[str], change: Callable[[dict[str, object]], None]) -> str:
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["phase"] == "scored":
            change(record)
            lines[i] = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
            return "".join(lines)
    raise ValueError("no scored line")


def one_token_more(lines: list[str]) -> str:
    """usage.completion_tokens + 1 on the first scored line: reconciliation off by one."""

    def change(record: dict[str, object]) -> None:
        usage = record["usage"]
        assert isinstance(usage, dict)
        usage["completion_tokens"] += 1

    return _edit_first_scored(lines, change)


def refused(lines: list[str]) -> str:
    """refusal = true on the first scored line (the simulator never refuses by content)."""
    return _edit_first_scored(lines, lambda record: record.update(refusal=True))


# --- the captures ----------------------------------------------------------------------


def capture_incumbent(cap: Capture) -> RequestPlan:
    with lane() as server:
        natural = cap.cell("natural", server, NATURAL)
        plan = RequestPlan.read(natural / PLAN_NAME)
        cap.cell("warm-cache", server, NATURAL, attempt=2, plan=plan)  # same prompts again
        cap.cell("controlled", server, "controlled-512-c1")
        cap.cell("prefill-probe", server, "prefill-1024-c1")
        cap.cell("deadline", server, "natural-short-deadline")
    return plan


def capture_candidate(cap: Capture, incumbent_plan: RequestPlan) -> None:
    model = cap.frozen.matrix.arm("candidate").served_model
    with lane() as server:
        same = retokenize_on(incumbent_plan, server, model)
        cap.cell("candidate-natural", server, NATURAL, arm="candidate", plan=same)
        spec = cap.frozen.matrix.campaign
        other = cap.frozen.model_copy(
            update={
                "matrix": cap.frozen.matrix.model_copy(
                    update={"campaign": spec.model_copy(update={"seed": spec.seed + 1})}
                )
            }
        )
        wrong = plan_on(same.cell, other, server, model)
        cap.cell("candidate-other-seed", server, NATURAL, arm="candidate", plan=wrong)
    with lane("--fault", 'missing_families=["request_prefill_time_seconds"]') as server:
        cap.cell("family-missing", server, NATURAL, arm="candidate")


def capture_faults(cap: Capture) -> None:
    with lane("--legacy-names") as server:
        cap.cell("legacy-names", server, NATURAL)
    with lane("--fault", "contract_overrun=true") as server:
        cap.cell("contract-overrun", server, "controlled-512-c1")
    with lane("--fault", "error_rate=0.5", "--fault", "seed=3") as server:
        cap.cell("errors", server, NATURAL)
    with lane("--fault", "oom_after_requests=3") as server:
        cap.cell("oom", server, NATURAL)
    small_kv = ("--set", "model.max_model_len=1024", "--set", "engine.kv_cache_tokens=1024")
    with lane(*small_kv) as server:
        cap.cell("preemptions", server, NATURAL)
    with lane() as server:
        cap.cell("metrics-gap", server, NATURAL, during=metrics_gap)
    fast_start = ("--set", "timing.startup_s=0")
    restarted: list[SimServer] = []
    try:
        with lane(*fast_start, "--port", str(free_port())) as server:
            hook = restart_after(3, fast_start, restarted)
            cap.cell("counter-reset", server, NATURAL, during=hook)
    finally:
        for server in restarted:
            stop(server)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    frozen = freeze(load_matrix(HERE / "matrix.toml"))
    frozen.write(args.out / "matrix.frozen.json", replace=True)
    shutil.rmtree(args.out / "cells", ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="guards-capture-") as work:
        cap = Capture(frozen, args.out, Path(work))
        plan = capture_incumbent(cap)
        capture_candidate(cap, plan)
        capture_faults(cap)
    print(f"captured {len(list((args.out / 'cells').iterdir()))} cells into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
