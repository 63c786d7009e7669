"""Host-process lanes: real processes, their groups, boot logs and readiness failures.

A host-process lane is ours before it listens: its engine runs only once ``lane.json``
names its pid, so an orchestrator killed while a lane boots never leaves an engine that no
record names (teardown, restore and the resume find every one by its record).

Was: the engine was started, then recorded; a SIGKILL of `faceoff run` in between (while
the incumbent's restore lane booted) left an engine on the incumbent's port that no
lane.json or ledger row named: the resume died with address-in-use, and neither
`faceoff restore` nor `faceoff teardown` could stop it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faceoff.formats.lane import LaneRecord
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LanePurpose, live_run_dir
from lanes.leftovers import live_process_records, stop_processes, teardown
from lanes.process import GATE, GATE_CLOSED
from lanes.readiness import Waiting, wait_ready
from tests.conftest import free_port
from tests.lanes import helpers
from tests.lanes.helpers import PYTHON, arm, context, gone, kill_recorded_processes, now

SECRET = "hf_process_lane_secret"

# Prints a boot line with its secret, forks a worker that ignores SIGTERM, then waits.
STUBBORN = """
import os, signal, subprocess, sys, time
print("quantization=exl3 token=" + os.environ["HF_TOKEN"], flush=True)
worker = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"])
print("worker", worker.pid, flush=True)
time.sleep(300)
"""


@pytest.fixture
def campaign_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield tmp_path
    kill_recorded_processes(tmp_path)


def wait_for(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_stop_reaches_the_whole_group_and_redacts_the_boot_log(campaign_dir: Path) -> None:
    the_arm = arm(command=[PYTHON, "-c", STUBBORN], secrets={"HF_TOKEN": "OP_TOKEN"})
    lane = open_lane(the_arm, context(campaign_dir, the_arm, environ={"OP_TOKEN": SECRET}))
    record = lane.start()
    assert record.pid is not None and record.state == "running" and lane.exit_status() is None
    wait_for(lambda: "worker " in lane.boot_log())
    log = lane.boot_log()
    assert SECRET not in log and "token=***" in log
    worker = int(log.split("worker ", 1)[1].split()[0])
    ended = lane.stop(grace_s=1.0)
    assert ended.signal in (15, 9) and ended.exit_code in (143, 137)
    wait_for(lambda: gone(worker))
    saved = LaneRecord.read(lane.ctx.run_dir / "lane.json")
    assert saved.state == "stopped" and saved.exit == ended
    assert saved.env == {"HF_TOKEN": "***"} and saved.target().kind == "process"
    assert SECRET not in (lane.ctx.run_dir / "boot.log").read_text()
    assert SECRET not in (lane.ctx.run_dir / "lane.json").read_text()


def test_a_lane_that_dies_while_booting_is_not_waited_for(campaign_dir: Path) -> None:
    script = "import sys; print('CUDA out of memory while loading shard 3'); sys.exit(3)"
    the_arm = arm(command=[PYTHON, "-c", script], startup_deadline_s=60)
    lane = open_lane(the_arm, context(campaign_dir, the_arm))
    lane.start()
    started = time.monotonic()
    readiness = wait_ready(lane, UrllibHttp(), Waiting(now=now))
    assert time.monotonic() - started < 30
    assert not readiness.ready and readiness.reason is not None
    assert "exited before it was ready" in readiness.reason and "status 3" in readiness.reason
    assert "CUDA out of memory while loading shard 3" in readiness.reason


def test_readiness_gives_up_at_the_startup_deadline(campaign_dir: Path) -> None:
    port = free_port()
    server = [PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    the_arm = arm(command=server, port=port, startup_deadline_s=2, probes={"poll_interval_s": 0.2})
    lane = open_lane(the_arm, context(campaign_dir, the_arm))
    lane.start()
    readiness = wait_ready(lane, UrllibHttp(), Waiting(now=now))
    lane.stop(grace_s=2)
    assert not readiness.ready and readiness.reason is not None
    assert "not ready within the startup deadline of 2 s" in readiness.reason
    assert "HTTP 404" in readiness.reason  # the server answered, just not /health


def test_a_lane_left_by_a_crashed_orchestrator_is_found_by_its_record(campaign_dir: Path) -> None:
    sleeper = [PYTHON, "-c", "import time; time.sleep(300)"]
    the_arm = arm(name="cand", role="candidate", command=sleeper)
    lane = open_lane(the_arm, context(campaign_dir, the_arm))
    pid = lane.start().pid
    assert pid is not None
    found = live_process_records(campaign_dir, arms=["cand"])
    assert [r.pid for _, r in found] == [pid]
    assert live_process_records(campaign_dir, arms=["other"]) == []
    stopped = stop_processes(found, now, grace_s=1)
    assert [s.ident for s in stopped] == [str(pid)]
    lane.exit_status()  # reap our child so it is not left a zombie
    wait_for(lambda: gone(pid))
    assert LaneRecord.read(live_run_dir(found[0][0]) / "lane.json").state == "stopped"
    assert LaneRecord.read(found[0][0] / "lane.json").state == "running"  # the bundle's, as was
    assert live_process_records(campaign_dir) == []


def test_teardown_stops_the_restored_incumbent_too(campaign_dir: Path) -> None:
    sleeper = [PYTHON, "-c", "import time; time.sleep(300)"]
    the_arm = arm(command=sleeper)
    lane = open_lane(the_arm, context(campaign_dir, the_arm, purpose=LanePurpose.RESTORE))
    pid = lane.start().pid
    assert pid is not None
    assert live_process_records(campaign_dir) == []  # production again: left alone by default

    def no_docker() -> None:
        raise AssertionError("no lane record names a container")

    stopped = teardown(campaign_dir, "c1", now, no_docker)

    assert [(s.ident, s.purpose) for s in stopped] == [(str(pid), "restore")]
    lane.exit_status()
    wait_for(lambda: gone(pid))


REPO = Path(__file__).resolve().parents[2]

# The engine: says whether its lane.json named its pid when it started.
ENGINE = (
    "import json, os, pathlib, sys, time\n"
    "record = pathlib.Path(sys.argv[1])\n"
    "named = record.is_file() and json.loads(record.read_text())['pid'] == os.getpid()\n"
    "pathlib.Path(sys.argv[2]).write_text(str(named))\n"
    "time.sleep(300)\n"
)

# An orchestrator that starts a lane and is SIGKILLed after the spawn, before the record:
# the moment is held open (the record waits on a file that never comes) and reported.
ORCHESTRATOR = """
import pathlib, sys, time
import lanes.process
from lanes.factory import open_lane
from tests.lanes.helpers import arm, context

folder, marker, said = (pathlib.Path(p) for p in sys.argv[1:4])
def held(pid):  # the first thing faceoff does with the new process, before its record
    said.write_text(str(pid))
    while True:
        time.sleep(1)
lanes.process.cgroup_of = held
touch = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"
engine = arm(command=[sys.executable, "-c", touch, str(marker)])
open_lane(engine, context(folder, engine)).start()
"""


def test_the_engine_starts_only_once_lane_json_names_its_pid(
    campaign_dir: Path, tmp_path: Path
) -> None:
    said = tmp_path / "named.txt"
    ctx = context(campaign_dir, arm())
    record_path = ctx.run_dir / "lane.json"
    lane = open_lane(arm(command=[PYTHON, "-c", ENGINE, str(record_path), str(said)]), ctx)

    record = lane.start()

    helpers.wait_for(said.is_file, "the engine to start")
    assert said.read_text() == "True"
    assert record.pid is not None and json.loads(record_path.read_text())["pid"] == record.pid
    lane.stop(grace_s=1.0)


def test_an_orchestrator_killed_before_the_record_leaves_no_engine(
    campaign_dir: Path, tmp_path: Path
) -> None:
    marker, said = tmp_path / "engine-ran", tmp_path / "gate-pid"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", ORCHESTRATOR, str(campaign_dir), str(marker), str(said)]
    orchestrator = subprocess.Popen(command, cwd=REPO, env=env)
    try:
        helpers.wait_for(
            lambda: said.is_file() and said.read_text(), "the lane's process to be spawned"
        )
        gate = int(said.read_text())
    finally:
        orchestrator.send_signal(signal.SIGKILL)
        orchestrator.wait()

    helpers.wait_for(lambda: gone(gate), "the gate to see its recorder die")
    assert not marker.exists()  # the engine never ran
    assert not list(campaign_dir.glob("lanes/*/*/lane.json"))


def test_a_gate_closed_without_a_go_exits_with_its_own_status(tmp_path: Path) -> None:
    marker = tmp_path / "engine-ran"
    gate, release = os.pipe()
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            GATE,
            str(gate),
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w')",
        ],
        pass_fds=(gate,),
    )
    os.close(gate)
    os.close(release)
    assert process.wait(60) == GATE_CLOSED and not marker.exists()
