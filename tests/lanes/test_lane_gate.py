"""A host-process lane is ours before it listens: its engine runs only once ``lane.json``
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
from pathlib import Path

import pytest

from lanes.factory import open_lane
from lanes.process import GATE, GATE_CLOSED
from tests.lanes.helpers import PYTHON, arm, context, gone, kill_recorded_processes, wait_for

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


@pytest.fixture
def campaign_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield tmp_path
    kill_recorded_processes(tmp_path)


def test_the_engine_starts_only_once_lane_json_names_its_pid(
    campaign_dir: Path, tmp_path: Path
) -> None:
    said = tmp_path / "named.txt"
    ctx = context(campaign_dir, arm())
    record_path = ctx.run_dir / "lane.json"
    lane = open_lane(arm(command=[PYTHON, "-c", ENGINE, str(record_path), str(said)]), ctx)

    record = lane.start()

    wait_for(said.is_file, "the engine to start")
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
        wait_for(lambda: said.is_file() and said.read_text(), "the lane's process to be spawned")
        gate = int(said.read_text())
    finally:
        orchestrator.send_signal(signal.SIGKILL)
        orchestrator.wait()

    wait_for(lambda: gone(gate), "the gate to see its recorder die")
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
