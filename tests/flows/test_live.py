"""The live view reads a running attempt from the ledger and its files, as they are written."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from collectors.cell import CellCollectors
from collectors.host import LaneTarget
from flows.client import CLIENT_LOG, ClientArgs, ClientProcess
from flows.live import Watch, render
from flows.progress import Tail
from ledger.campaigns import open_campaign
from ledger.cells import begin_attempt
from ledger.db import open_ledger, resolve_url, session_scope
from simulator.launch import SimServer
from tests.flows.conftest import cell, write_plan
from workload.records import JOURNAL_NAME, PLAN_NAME


def now() -> datetime:
    return datetime.now(UTC)


def test_the_view_shows_the_running_cell_its_requests_ttft_and_telemetry(
    sim: SimServer, tmp_path: Path
) -> None:
    campaign_dir = tmp_path / "live"
    folder = campaign_dir / "cells" / "natural-400-c1" / "inc" / "attempt-1"
    write_plan(sim, folder, cell())
    engine = open_ledger(resolve_url(None, tmp_path))
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name="live", matrix_id="c" * 64, evidence_dir=campaign_dir, now=now
        )
        begin_attempt(
            session, row, cell_id="natural-400-c1", arm="inc", attempt=1,
            artifacts_dir="cells/natural-400-c1/inc/attempt-1", now=now,
        )  # fmt: skip
    watch = Watch(engine, "live")  # one watch: the second snapshot reads only what was added
    before = watch.snapshot()
    assert before is not None and before.running is not None
    assert (before.running.done, before.running.total, before.running.health) == (0, 4, [])

    collectors = CellCollectors(
        metrics_url=sim.url + "/metrics",
        target=LaneTarget(pid=sim.process.pid),
        gpu_ids=[],
        folder=folder,
    )
    collectors.start()
    args = ClientArgs(folder / PLAN_NAME, sim.url, folder / JOURNAL_NAME, 60.0, "inc", 1)
    client = ClientProcess(args, folder / CLIENT_LOG, sys.executable)
    client.start()
    client.wait()
    collectors.stop()

    after = watch.snapshot()
    assert after is not None and after.running is not None
    running = after.running
    assert (running.arm, running.cell_id, running.done, running.total) == (
        "inc", "natural-400-c1", 4, 4,
    )  # fmt: skip
    assert running.ttft_p50_s is not None and running.ttft_p50_s > 0
    engine_health = next(h for h in running.health if h.source == "engine")
    assert engine_health.samples >= 2 and engine_health.ok == engine_health.samples
    console = Console(record=True, width=160)
    console.print(render(after, "starting"))
    text = console.export_text()
    assert "live — open — 1 pending" in text
    assert "4/4" in text and "ms" in text and "engine" in text


def test_before_the_campaign_is_opened_there_is_nothing_to_show(tmp_path: Path) -> None:
    engine = open_ledger(resolve_url(None, tmp_path))
    assert Watch(engine, "not-yet").snapshot() is None
    console = Console(record=True)
    console.print(render(None, "starting the campaign not-yet…"))
    assert "starting the campaign not-yet" in console.export_text()


def test_a_followed_file_yields_each_complete_line_once(tmp_path: Path) -> None:
    path = tmp_path / "engine.jsonl"
    tail = Tail(path)
    assert tail.new_records() == []  # not written yet
    path.write_bytes(b'{"status": "ok"}\n{"status": "er')
    assert tail.new_records() == [{"status": "ok"}]  # the torn line waits for its end
    with path.open("ab") as handle:
        handle.write(b'ror"}\nnot json\n')
    assert tail.new_records() == [{"status": "error"}]
    assert tail.new_records() == []
