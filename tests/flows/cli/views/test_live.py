"""The live view reads a running attempt from the ledger and its files, as they are written."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from flows.campaign.client import CLIENT_LOG, ClientArgs, ClientProcess
from flows.cli.views.live import Watch, render
from flows.cli.views.phase import boot_line, lane_up
from flows.cli.views.progress import Tail
from lanes.bringup import check_identity
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.readiness import Waiting, wait_ready
from ledger.campaigns import open_campaign
from ledger.cells import begin_attempt, finish_attempt
from ledger.db import open_ledger, resolve_url, session_scope
from matrix.toml.reader import load_matrix
from simulator.launch import SimServer
from tests.e2e.matrices import arm, campaign, write_matrix
from tests.flows.conftest import cell, write_plan
from tests.lanes import helpers


def now() -> datetime:
    return datetime.now(UTC)


def live_matrix(folder: Path, name: str = "live") -> FrozenMatrix:
    """Two arms, one cell (natural-400-c1): two planned cell runs."""
    data = campaign(name, [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["cells"] = [data["cells"][0] | {"id": "natural-400-c1", "input_tokens": 400}]
    return freeze(load_matrix(write_matrix(folder, data)))


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
    # one watch: the second snapshot reads only what was added
    watch = Watch(engine, live_matrix(tmp_path), now)
    before = watch.snapshot()
    assert before.running is not None and before.phase.name == "cell"
    assert (before.running.done, before.running.total, before.running.health) == (0, 4, [])

    collectors = CellCollectors(
        metrics_url=sim.url + "/metrics",
        target=MemoryTarget(pid=sim.process.pid),
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
    assert after.running is not None
    running = after.running
    assert (running.arm, running.cell_id, running.done, running.total) == (
        "inc", "natural-400-c1", 4, 4,
    )  # fmt: skip
    assert running.ttft_p50_s is not None and running.ttft_p50_s > 0
    engine_health = next(h for h in running.health if h.source == "engine")
    assert engine_health.samples >= 2 and engine_health.ok == engine_health.samples
    console = Console(record=True, width=160)
    console.print(render(after))
    text = console.export_text()
    assert "live — 0/2 cell runs — elapsed 0:" in text and "ETA ≤ " in text
    assert "phase cell: natural-400-c1 on inc, attempt 1: requests 4/4, TTFT p50" in text
    assert "ms" in text and "engine" in text


def test_before_the_campaign_is_opened_the_view_says_it_is_starting(tmp_path: Path) -> None:
    engine = open_ledger(resolve_url(None, tmp_path))
    snap = Watch(engine, live_matrix(tmp_path, "not-yet"), now).snapshot()
    assert (snap.status, snap.planned, snap.finished) == ("starting", 2, 0)
    assert snap.phase.name == "starting"
    console = Console(record=True, width=160)
    console.print(render(snap))
    assert "not-yet — 0/2 cell runs — elapsed 0:00" in console.export_text()


def test_a_finished_run_says_its_disposition_once_and_a_reason_only_when_not_accepted(
    tmp_path: Path,
) -> None:
    engine = open_ledger(resolve_url(None, tmp_path))
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name="live", matrix_id="c" * 64, evidence_dir=tmp_path / "live", now=now
        )
        for name, disposition, code, reason in (
            ("inc", "accepted", "accepted", "every validity rule passed"),
            ("cand", "failed", "error_rate", "3 of 4 scored requests errored"),
        ):
            folder = f"cells/natural-400-c1/{name}/attempt-1"
            run = begin_attempt(session, row, cell_id="natural-400-c1", arm=name, attempt=1,
                                artifacts_dir=folder, now=now)  # fmt: skip
            finish_attempt(session, run, disposition=disposition, reason_code=code,
                           reason=reason, verdict_sha256=None, now=now)  # fmt: skip
    snap = Watch(engine, live_matrix(tmp_path), now).snapshot()
    assert (snap.finished, snap.planned) == (2, 2)
    console = Console(record=True, width=160)
    console.print(render(snap))
    text = console.export_text()
    assert "live — 2/2 cell runs (1 accepted, 1 failed)" in text
    assert "accepted: accepted" not in text and "accepted:" not in text
    assert "failed: error_rate: 3 of 4 scored requests errored" in text


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


def test_the_phase_follows_a_real_lane_from_boot_to_identity(tmp_path: Path) -> None:
    """A simulator lane started for real: `lane boot` with its boot log's last line until
    its identity is written, then the lane is up and identified."""
    the_arm = helpers.simulator_arm(name="inc")
    campaign_dir = tmp_path / "runs" / "phase"
    lane = open_lane(the_arm, helpers.context(campaign_dir, the_arm, campaign="phase"),
                     python=helpers.SIM_PYTHON)  # fmt: skip
    lane.start()
    try:
        booting = lane_up(campaign_dir)
        assert booting is not None and (booting.arm, booting.identified) == ("inc", False)
        helpers.wait_for(lambda: boot_line(booting.run_dir), "a line in the lane's boot log")
        readiness = wait_ready(lane, UrllibHttp(), Waiting(now=now))  # lanes.bringup's steps,
        assert check_identity(lane, readiness, now()).verdict.ok  # without starting it again
        up = lane_up(campaign_dir)
        assert up is not None and up.identified and up.run_dir == booting.run_dir
        assert boot_line(up.run_dir)  # the boot log beside lane.json, once written
        lane.stop()
        assert lane_up(campaign_dir) is None  # stopped: no lane is up
    finally:
        helpers.kill_recorded_processes(campaign_dir)
