"""A server that never names a finish_reason: every request ok, its reason null, and counted.

The lane is `benchmarks.truth_server` with `--no-finish-reason`, a real HTTP server over
loopback sharing no code with the client: each stream ends with usage and [DONE] only.
The client process journals the cell; the summary, the comparison's arm entry and the
card's line are made from that journal by the code that makes them for a campaign.

A test across the client and the evidence, kept beside the stream reader: a stream that
ends without a finish_reason, read as ok, is what it mainly asserts.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from evidence.attempt.summary import summarize_journal
from evidence.comparison.cells import arm_cell
from evidence.comparison.read import AttemptInputs
from evidence.comparison.standing import read_standing
from evidence.folder.layout import AttemptDir
from evidence.views.card.probe_cells import unnamed_finishes
from faceoff.formats.attempt.journal import JOURNAL_NAME, Status
from faceoff.formats.attempt.request_plan import PLAN_NAME, PlanOptions, RequestPlan
from matrix.cell import Cell
from workload.cell_client import client_command
from workload.journal import read_journal
from workload.plan import build_plan
from workload.tokenizer import LaneTokenizer

REPO = Path(__file__).resolve().parents[2]
MODEL, REQUESTS, TOKENS = "truth", 12, 6
CELL = Cell.model_validate(
    {
        "id": "unnamed-c3",
        "kind": "natural",
        "input_tokens": 64,
        "concurrency": 3,
        "requests": REQUESTS,
        "sampling": {"max_tokens": TOKENS, "ignore_eos": True},
    }
)


@pytest.fixture
def unnamed_server(tmp_path: Path) -> Iterator[str]:
    """The truth server on a free port, its streams ending without a finish_reason."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "benchmarks.truth_server", "--port", str(port)]
    command += ["--log", str(tmp_path / "truth.jsonl"), "--model", MODEL, "--rate", "500"]
    command += ["--prefill-ms", "5", "--no-finish-reason"]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_healthy(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, "the truth server exited"
        try:
            urllib.request.urlopen(url + "/health", timeout=5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the truth server did not answer /health within 60 s")


async def plan_on(url: str) -> RequestPlan:
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, url, MODEL)
        return await build_plan(
            CELL, seed=3, namespace="unnamed", model=MODEL, tokenizer=tokenizer,
            options=PlanOptions(),
        )  # fmt: skip


def test_streams_without_a_finish_reason_are_ok_and_counted_on_the_card(
    unnamed_server: str, tmp_path: Path
) -> None:
    root = tmp_path / "campaign"
    where = AttemptDir(CELL.id, "inc", 1, root / "cells" / CELL.id / "inc" / "attempt-1")
    where.path.mkdir(parents=True)
    plan = asyncio.run(plan_on(unnamed_server))
    plan.write(where.path / PLAN_NAME)
    command = client_command(
        where.path / PLAN_NAME, unnamed_server, where.path / JOURNAL_NAME, arm="inc", attempt=1
    )
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    journal = read_journal(where.path / JOURNAL_NAME)
    assert len(journal.outcomes) == REQUESTS and journal.intact
    for o in journal.outcomes:
        assert (o.status, o.finish_reason, o.error) == (Status.OK, None, None)
        assert o.usage is not None and o.usage.completion_tokens == TOKENS
        assert o.done_ns is not None and len(o.chunk_offsets_us) == TOKENS

    summary = summarize_journal(journal, plan, arm="inc", attempt=1, slo=None)
    assert summary.statuses == {"ok": REQUESTS} and summary.unnamed_finishes == REQUESTS
    assert summary.metrics["ttft_s"].n == REQUESTS  # counted in the statistics, like any ok
    attempt = AttemptInputs(where, summary, None, read_standing(where))
    arm = arm_cell(CELL, "inc", attempt, root)
    assert arm.unnamed_finishes == REQUESTS
    line = unnamed_finishes([(CELL.id, arm)])
    assert line.startswith("Scored requests whose server never named a finish_reason")
    assert line.endswith(f"{CELL.id} / inc: {REQUESTS}.")
    assert unnamed_finishes([(CELL.id, arm.model_copy(update={"unnamed_finishes": 0}))]) == ""
