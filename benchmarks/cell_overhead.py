"""Per-cell orchestration overhead: a cell run's wall time minus the client's own span.

    make bench NAME=cell_overhead [ARGS="--cells 12 --keep DIR"]

A campaign of many tiny cells (natural, C1, two requests of 128 input and 8 output
tokens) on two host-process simulator lanes (``tiny`` profile, time scale 20, as
``tests/e2e/matrices.py`` builds them) runs as an operator runs it: ``faceoff run`` in
its own process with its own ephemeral Prefect server, and ``FACEOFF_SPANS`` set, so
the flow writes the spans of each cell run (``flows.campaign.spans``). Per cell run, the
overhead is the flow's stop-policy read, lane check and Prefect task call for the
cell, minus the client's own span (``cell.json``'s window: first request sent to
last request ended, as the client journaled them). Printed: the median overhead
and its breakdown (planning and ``/tokenize``, collectors' start and drain, the
client process's start and exit around its requests, the guard, the ledger writes,
Prefect's task bookkeeping: the task call minus the task's own function), each as
the median over the cell runs, beside the median client span (the peer: the work
being orchestrated), and the client process's own CPU seconds per cell run and per
request (its closing summary in ``client.log``). Target: ≤ 1 s per cell run. Then the
same as one JSON line.
Lane start and stop, warmups, restoration and the bundle are per campaign, not per
cell, and are not counted. The cells are too short for the guard to accept most of
them (a window shorter than one engine tick, a reply in one chunk: ``family_missing``);
the guard runs in full all the same, and the run exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from flows.campaign import spans
from tests.e2e.matrices import arm, campaign, write_matrix
from workload.cell_client import read_summary
from workload.records import CLIENT_LOG

REPO = Path(__file__).resolve().parents[1]
NAME = "cell-overhead"
RUN_TIMEOUT_S = 1800.0
TARGET_S = 1.0
# The parts of a cell run that are not its requests, as ``flows.campaign.spans`` names them;
# the client's start and exit are its process span minus its requests' window.
CLIENT_START_EXIT = "client start and exit"
OTHER = "between spans"
PARTS = (
    spans.POLICY,
    spans.LANE_CHECK,
    "prefect task bookkeeping",
    spans.BEGIN,
    spans.PLAN,
    spans.COLLECTORS_START,
    CLIENT_START_EXIT,
    spans.COLLECTORS_STOP,
    spans.TELEMETRY,
    spans.RECORD,
    spans.GUARD,
    spans.FILE,
    OTHER,
)


def matrix(folder: Path, cells: int) -> Path:
    """Two simulator arms and ``cells`` tiny cells, each run once per arm."""
    data = campaign(NAME, [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["cells"] = [
        {
            "id": f"tiny-{n:03d}",
            "kind": "natural",
            "input_tokens": 128,
            "concurrency": 1,
            "requests": 2,
            "deadline_s": 60.0,
            "sampling": {"max_tokens": 8, "ignore_eos": True},
        }
        for n in range(cells)
    ]
    return write_matrix(folder, data)


def run(matrix_path: Path, workdir: Path, spans_path: Path) -> int:
    """``faceoff run`` as an operator starts it (no Prefect settings: its own server)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"PYTHONPATH": str(REPO), spans.SPANS_ENV: str(spans_path), "COLUMNS": "160"}
    command = [sys.executable, "-m", "flows", "run", str(matrix_path), "--workdir", str(workdir)]
    with (workdir.parent / "run.log").open("ab") as log:
        done = subprocess.run(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT_S, check=False,
        )  # fmt: skip
    return done.returncode


def teardown(workdir: Path) -> None:
    command = [sys.executable, "-m", "flows", "teardown", NAME, "--workdir", str(workdir)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(command, cwd=REPO, env=env, capture_output=True, timeout=300, check=False)


def read_spans(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(cell, arm) -> span name -> seconds (summed, should a span repeat)."""
    found: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in path.read_text(encoding="utf-8").splitlines():
        span = json.loads(line)
        found[span["cell"], span["arm"]][span["span"]] += (span["end_ns"] - span["start_ns"]) / 1e9
    return found


def client_span(campaign_dir: Path, cell: str, arm_name: str) -> float | None:
    """Seconds from the cell run's first request sent to its last ended (``cell.json``)."""
    path = campaign_dir / "cells" / cell / arm_name / "attempt-1" / CELL_FILE
    window = CellRecord.read(path).window if path.is_file() else None
    return None if window is None else (window.end_ns - window.start_ns) / 1e9


def client_cpu(campaign_dir: Path, cell: str, arm_name: str) -> tuple[float, int] | None:
    """The client process's CPU seconds and the requests it journaled (its summary line)."""
    found = read_summary(campaign_dir / "cells" / cell / arm_name / "attempt-1" / CLIENT_LOG)
    return None if found is None else (float(found["cpu_s"]), int(found["journaled"]))


def breakdown(seconds: dict[str, float], client: float) -> dict[str, float]:
    """A cell run's overhead parts: they add up to the stop policy, the lane check and the
    task call, less the client's span."""
    parts = {name: seconds.get(name, 0.0) for name in PARTS}
    parts["prefect task bookkeeping"] = seconds[spans.CELL_TASK] - seconds[spans.RUN_CELL]
    parts[CLIENT_START_EXIT] = seconds[spans.CLIENT] - client
    inner = sum(v for k, v in parts.items() if k not in {spans.POLICY, spans.LANE_CHECK, OTHER})
    parts[OTHER] = seconds[spans.CELL_TASK] - client - inner  # code between the spans
    return parts


def summary(campaign_dir: Path, spans_path: Path) -> dict[str, Any]:
    runs, cpu = [], []
    for (cell, arm_name), seconds in sorted(read_spans(spans_path).items()):
        client = client_span(campaign_dir, cell, arm_name)
        if client is None or spans.CELL_TASK not in seconds or spans.CLIENT not in seconds:
            continue  # not run (blocked): no client span to subtract
        runs.append((client, breakdown(seconds, client)))
        if (used := client_cpu(campaign_dir, cell, arm_name)) is not None:
            cpu.append(used)
    if not runs:
        raise SystemExit(f"no cell run has spans and a window; see {spans_path}")
    overheads = [sum(parts.values()) for _, parts in runs]
    return {
        "cell_runs": len(runs),
        "median_overhead_s": round(statistics.median(overheads), 3),
        "max_overhead_s": round(max(overheads), 3),
        "median_client_span_s": round(statistics.median(c for c, _ in runs), 3),
        "median_part_s": {
            name: round(statistics.median(parts[name] for _, parts in runs), 3) for name in PARTS
        },
        "target_s": TARGET_S,
        "median_client_cpu_s": round(statistics.median(c for c, _ in cpu), 3) if cpu else None,
        "client_cpu_ms_per_request": (
            round(1000 * sum(c for c, _ in cpu) / sum(n for _, n in cpu), 1) if cpu else None
        ),
    }


def show(found: dict[str, Any], exit_code: int) -> None:
    print(f"faceoff run exit {exit_code}; {found['cell_runs']} cell runs measured")
    print(
        f"per cell run: overhead median {found['median_overhead_s']:.3f} s "
        f"(max {found['max_overhead_s']:.3f} s; target ≤ {TARGET_S:g} s) beside a client "
        f"span of {found['median_client_span_s']:.3f} s"
    )
    print(
        f"client process CPU: median {found['median_client_cpu_s']} s per cell run, "
        f"{found['client_cpu_ms_per_request']} ms per request (start-up included)"
    )
    print(f"{'part':<28} {'median s':>9}")
    for name, value in found["median_part_s"].items():
        print(f"{name:<28} {value:>9.3f}")
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=12, help="cells, each run on both arms")
    parser.add_argument("--keep", type=Path, help="keep the campaign and its spans here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faceoff-overhead-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        workdir, spans_path = root / "runs", root / "spans.jsonl"
        spans_path.unlink(missing_ok=True)
        try:
            code = run(matrix(root, args.cells), workdir, spans_path)
        finally:
            teardown(workdir)
        if code not in {0, 3}:  # complete, or closed partial (a loaded host blocks cells)
            log = (root / "run.log").read_text(encoding="utf-8", errors="replace")
            raise SystemExit(f"faceoff run exited {code}:\n{log[-3000:]}")
        show(summary(workdir / NAME, spans_path), code)


if __name__ == "__main__":
    main()
