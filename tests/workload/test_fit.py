"""A ~300K-token prompt through plan synthesis, the client process and the simulator.

A test across the plan, the client process and the simulator, kept beside the filler
search: a prompt planned to within its precision of 300K tokens is what it mainly asserts.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

from faceoff.formats.attempt.journal import Status
from matrix.cell import Cell
from simulator.launch import running
from tests.workload.conftest import http_plan
from workload.cell_client import client_command
from workload.fit import precision
from workload.journal import read_journal

REPO = Path(__file__).resolve().parents[2]
TARGET = 300_000


def test_a_300k_token_prompt_round_trips(tmp_path: Path) -> None:
    edge = Cell.model_validate(
        {
            "id": "capacity-edge-300k",
            "kind": "capacity_edge",
            "input_tokens": TARGET,
            "concurrency": 1,
            "requests": 2,
            "sampling": {"max_tokens": 16, "ignore_eos": True},
        }
    )
    with running("bench-200", time_scale=20.0) as sim:
        started = time.perf_counter()
        plan = asyncio.run(http_plan(sim.url, edge, model="sim-bench"))
        planning_s = time.perf_counter() - started
        plan.write(tmp_path / "requests.json")
        argv = client_command(
            tmp_path / "requests.json", sim.url, tmp_path / "journal.jsonl", arm="a", attempt=1
        )
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert planning_s < 60  # generous: ≈ 2–4 s on a shared 2-core host
    assert all(abs(r.input_tokens - TARGET) <= precision(TARGET) for r in plan.requests)
    outcomes = read_journal(tmp_path / "journal.jsonl").outcomes
    assert [o.status for o in outcomes] == [Status.OK, Status.OK]
    assert [o.usage.prompt_tokens for o in outcomes if o.usage] == [
        r.input_tokens for r in plan.requests
    ]
    summary = json.loads(done.stdout.splitlines()[-1])["summary"]
    assert summary["cpu_s"] < 30  # the client's whole process, imports included
