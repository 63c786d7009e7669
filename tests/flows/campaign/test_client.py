"""The load client as the flow runs it: its own process, deadline, stop, parent death."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, Status
from faceoff.formats.attempt.request_plan import PLAN_NAME
from flows.campaign.client import CLIENT_LOG, ClientArgs, ClientProcess
from flows.campaign.planning import PlanTarget, plan_cell
from simulator.launch import SimServer
from tests.flows.conftest import cell, sim_arm, write_plan
from workload.cell_client import read_summary
from workload.journal import read_journal

REPO = Path(__file__).resolve().parents[3]


def args(server: SimServer, folder: Path, deadline_s: float = 60.0) -> ClientArgs:
    return ClientArgs(
        plan=folder / PLAN_NAME,
        base_url=server.url,
        journal=folder / JOURNAL_NAME,
        deadline_s=deadline_s,
        arm="inc",
        attempt=1,
    )


def wait_until_sending(journal: Path, timeout_s: float = 60.0) -> None:
    """Until the client journaled its first request: it runs, with the rest still to come."""
    deadline = time.monotonic() + timeout_s
    while not read_journal(journal).outcomes:
        assert time.monotonic() < deadline, "the client journaled nothing"
        time.sleep(0.02)


def test_a_client_run_journals_every_request_and_reports_its_summary(
    sim: SimServer, tmp_path: Path
) -> None:
    write_plan(sim, tmp_path, cell(warmups=1))
    client = ClientProcess(args(sim, tmp_path), tmp_path / CLIENT_LOG, sys.executable)
    client.start()
    ended = client.wait()
    assert (ended.returncode, ended.deadline_hit, ended.stopped_by_faceoff) == (0, False, None)
    assert ended.summary is not None and ended.summary["statuses"] == {"ok": 5}
    outcomes = read_journal(tmp_path / JOURNAL_NAME).outcomes
    assert [o.phase for o in outcomes].count(Phase.WARMUP) == 1
    assert {o.attempt for o in outcomes} == {1}


def test_the_cell_deadline_stops_the_client_with_its_own_exit_status(
    sim: SimServer, tmp_path: Path
) -> None:
    long = cell(requests=6, sampling={"max_tokens": 400, "ignore_eos": True})
    write_plan(sim, tmp_path, long)
    client = ClientProcess(
        args(sim, tmp_path, deadline_s=0.5), tmp_path / CLIENT_LOG, sys.executable
    )
    client.start()
    ended = client.wait()
    assert ended.deadline_hit and ended.stopped_by_faceoff is None
    outcomes = read_journal(tmp_path / JOURNAL_NAME).outcomes
    assert len(outcomes) == 6 and outcomes[-1].status is Status.CANCELLED


def test_stop_journals_the_requests_in_flight_as_cancelled(sim: SimServer, tmp_path: Path) -> None:
    write_plan(sim, tmp_path, cell(requests=6, sampling={"max_tokens": 400, "ignore_eos": True}))
    client = ClientProcess(args(sim, tmp_path), tmp_path / CLIENT_LOG, sys.executable)
    client.start()
    wait_until_sending(tmp_path / JOURNAL_NAME)
    ended = client.stop("the test stops it")
    assert ended.returncode == 128 + signal.SIGTERM
    assert ended.stopped_by_faceoff == "the test stops it"
    statuses = [o.status for o in read_journal(tmp_path / JOURNAL_NAME).outcomes]
    assert len(statuses) == 6 and Status.CANCELLED in statuses


def test_a_stop_before_the_client_is_ready_is_held_and_journaled(
    sim: SimServer, tmp_path: Path
) -> None:
    write_plan(sim, tmp_path, cell(requests=6, sampling={"max_tokens": 400, "ignore_eos": True}))
    client = ClientProcess(args(sim, tmp_path), tmp_path / CLIENT_LOG, sys.executable)
    client.start()
    ended = client.stop("stopped while the client was still importing")
    assert ended.returncode == 128 + signal.SIGTERM
    statuses = [o.status for o in read_journal(tmp_path / JOURNAL_NAME).outcomes]
    assert statuses == [Status.CANCELLED] * 6


ORPHANING_PARENT = """
import sys, time
from pathlib import Path
from flows.campaign.client import ClientArgs, ClientProcess
folder = Path(sys.argv[1])
args = ClientArgs(folder / "requests.json", sys.argv[2], folder / "journal.jsonl", 60.0, "inc", 1)
ClientProcess(args, folder / "client.log", sys.executable).start()
print("started", flush=True)
time.sleep(600)
"""


def test_a_killed_orchestrator_takes_its_client_down_with_the_journal_complete(
    sim: SimServer, tmp_path: Path
) -> None:
    write_plan(sim, tmp_path, cell(requests=6, sampling={"max_tokens": 400, "ignore_eos": True}))
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHANING_PARENT, str(tmp_path), sim.url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None and parent.stdout.readline() == "started\n"
    wait_until_sending(tmp_path / JOURNAL_NAME)
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 60
    # The journal's last line is written before the client prints its summary and exits.
    while len(read_journal(tmp_path / JOURNAL_NAME).outcomes) < 6 or not summary_of(tmp_path):
        assert time.monotonic() < deadline, (tmp_path / CLIENT_LOG).read_text()
        time.sleep(0.05)
    assert summary_of(tmp_path)["stopped_by"] == "SIGTERM received"


def test_a_retokenized_plan_keeps_the_texts_and_counts_on_the_other_lane(
    sim: SimServer, tmp_path: Path
) -> None:
    first = write_plan(sim, tmp_path, cell())
    target = PlanTarget(sim_arm(sim, name="cand", role="candidate"), sim.url, 3, "flows-tests")
    again = plan_cell(cell(), target, reference=first)
    assert [r.messages for r in again.requests] == [r.messages for r in first.requests]
    assert [r.prompt_sha256 for r in again.requests] == [r.prompt_sha256 for r in first.requests]


def summary_of(folder: Path) -> dict[str, Any]:
    """The client's closing summary in its log, or {} while it has printed none."""
    return read_summary(folder / CLIENT_LOG) or {}


def test_the_campaigns_receive_mode_reaches_the_clients_argv(tmp_path: Path) -> None:
    """spin is passed on; the default sleep leaves the argv as it always was."""
    spin = ClientArgs(tmp_path / PLAN_NAME, "http://x", tmp_path / "j", 60.0, "inc", 1, "spin")
    command = spin.command(sys.executable)
    assert command[command.index("--receive") + 1] == "spin"
    slept = ClientArgs(tmp_path / PLAN_NAME, "http://x", tmp_path / "j", 60.0, "inc", 1)
    assert "--receive" not in slept.command(sys.executable)
