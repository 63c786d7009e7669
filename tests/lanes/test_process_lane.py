"""Host-process lanes: real processes, their groups, boot logs and readiness failures."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from faceoff.formats.lane import LaneRecord
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LanePurpose, live_run_dir
from lanes.leftovers import live_process_records, stop_processes, teardown
from lanes.readiness import Waiting, wait_ready
from tests.conftest import free_port
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
