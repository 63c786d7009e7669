"""A lane's death as the flow observes it: how it ended, recorded truthfully, never as faceoff's
own stop, and an OOM kill only where Docker or the kernel says so.

Real lanes: the simulator as a host process (alone, or as the worker of a shell leader, the
way vLLM runs its API server, EngineCore and workers in one process group), and a container
under a memory limit that the kernel really OOM-kills.

Why an arm's warmups failed, in the sentence its verdict and ticket carry.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from faceoff.formats.attempt.cell_record import LaneAtEnd
from faceoff.formats.attempt.journal import RequestOutcome, Status
from faceoff.formats.lane import LANE_FILE, LaneRecord
from flows.campaign.arm import CUT, ArmRun, lane_death, warmup_failure
from flows.campaign.client import ClientExit
from flows.campaign.restore import restore_tools
from lanes.bringup import bring_up
from lanes.docker import exit_from_state
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane import Lane
from lanes.readiness import Waiting
from tests.lanes import helpers

OOM_HOG = "x = bytearray(512 << 20)"  # written at once: resident, far past a 64 MiB limit


@pytest.fixture
def campaign_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    helpers.kill_recorded_processes(tmp_path)


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


def up(lane: Lane) -> ArmRun:
    assert bring_up(lane, UrllibHttp(), Waiting(now=helpers.now)).ok, lane.boot_log()
    lane.watch()
    return ArmRun(lane.arm, lane, lane.ctx.run_dir, ready=True, identity_ok=True, reason=None)


def recorded_exit(lane: Lane) -> Any:
    return LaneRecord.read(lane.ctx.run_dir / LANE_FILE).exit


def test_a_sigkilled_process_lane_is_a_sigkill_not_an_oom(campaign_dir: Path) -> None:
    the_arm = helpers.simulator_arm()
    lane = open_lane(the_arm, helpers.context(campaign_dir, the_arm), python=helpers.SIM_PYTHON)
    run = up(lane)
    os.kill(lane.record.pid or 0, signal.SIGKILL)

    ended = wait_for(lambda: lane_death(run, restore_tools(os.environ)), "the lane's death")

    assert (ended.exit_code, ended.signal) == (137, signal.SIGKILL)
    assert ended.oom_killed is not True  # the cgroup's OOM-kill count did not rise
    assert "ended by SIGKILL" in ended.detail
    end = LaneAtEnd(running=False, exit_code=137, oom_killed=ended.oom_killed)
    assert not end.oom
    lane.stop(grace_s=5)
    assert recorded_exit(lane) == ended


def test_a_worker_that_dies_under_a_live_leader_is_the_lane_dying(campaign_dir: Path) -> None:
    port = helpers.free_port()
    sim = [sys.executable, "-m", "simulator", "--profile", "tiny", "--port", str(port)]
    sim += ["--time-scale", "20", "--served-model-name", "llm.primary", *helpers.SIM_ARGS]
    # A leader that serves nothing itself, with two workers in its group, like vLLM's.
    script = f"{' '.join(sim)} & {sys.executable} -c 'import time; time.sleep(600)' & wait"
    the_arm = helpers.arm(
        command=["sh", "-c", script], port=port, expected_quantization="exl3",
        probes={"poll_interval_s": 0.2},
    )  # fmt: skip
    lane = open_lane(the_arm, helpers.context(campaign_dir, the_arm), python=helpers.SIM_PYTHON)
    run = up(lane)
    tools = restore_tools(os.environ)
    assert lane_death(run, tools) is None
    leader = psutil.Process(lane.record.pid or 0)
    [worker] = [p for p in leader.children() if "sleep" in " ".join(p.cmdline())]
    worker.kill()

    ended = wait_for(lambda: lane_death(run, tools), "the group to shrink")

    assert leader.is_running()  # the API and its leader still run: only the group says so
    assert ended.exit_code is None
    assert f"process {worker.pid}" in ended.detail and "leader still ran" in ended.detail
    lane.stop(grace_s=5)
    assert recorded_exit(lane) == ended  # not the SIGTERM the stop sent


def test_a_lane_whose_api_stops_answering_is_dead_and_keeps_that_exit(campaign_dir: Path) -> None:
    the_arm = helpers.simulator_arm()
    lane = open_lane(the_arm, helpers.context(campaign_dir, the_arm), python=helpers.SIM_PYTHON)
    run = up(lane)
    os.kill(lane.record.pid or 0, signal.SIGSTOP)  # runs on, answers nothing
    try:
        ended = lane_death(run, restore_tools(os.environ))
        assert ended is not None and ended.exit_code is None
        assert "stopped answering /health" in ended.detail
        assert lane.exit_status() == ended
        lane.stop(grace_s=1)
    finally:
        os.kill(lane.record.pid or 0, signal.SIGCONT)
    assert recorded_exit(lane) == ended  # not the SIGKILL the stop ended it with


@pytest.mark.docker
def test_a_container_the_kernel_oom_kills_is_an_oom_and_a_docker_kill_is_not(
    docker_client: Any, sim_image: str
) -> None:
    def run(command: list[str]) -> Any:
        return docker_client.containers.run(
            sim_image, entrypoint=command, mem_limit="64m", memswap_limit="64m",
            network_mode="host", detach=True,
        )  # fmt: skip

    hog = run(["python3", "-c", OOM_HOG])
    sleeper = run(["sleep", "600"])
    try:
        sleeper.kill()  # SIGKILL, as an operator's `docker kill` sends it
        ended = {}
        for name, container in (("hog", hog), ("sleeper", sleeper)):
            container.wait(timeout=120)
            container.reload()
            ended[name] = exit_from_state(container.attrs["State"])
    finally:
        hog.remove(force=True)
        sleeper.remove(force=True)

    assert ended["hog"] is not None and ended["hog"].oom_killed is True
    assert ended["hog"].exit_code == 137 and "OOM-killed" in ended["hog"].detail
    assert ended["sleeper"] is not None and ended["sleeper"].oom_killed is False
    assert (ended["sleeper"].exit_code, ended["sleeper"].signal) == (137, signal.SIGKILL)
    for exit_ in ended.values():
        assert exit_ is not None
        end = LaneAtEnd(running=False, exit_code=137, oom_killed=exit_.oom_killed)
        assert end.oom is (exit_ is ended["hog"])


WORDS = " ".join(f"token{n} is longer than the model's maximum input" for n in range(40))


def errored(text: str) -> RequestOutcome:
    """Only what warmup_failure reads (unvalidated: the rest of the journal line is unused)."""
    fields: dict[str, Any] = {"status": Status.HTTP_ERROR, "error": text}
    return RequestOutcome.model_construct(**fields)


def test_a_long_first_error_is_cut_between_words_and_says_where_the_rest_is() -> None:
    said = warmup_failure([errored(WORDS)], 1, ClientExit(0, None, None))
    assert said is not None and said.endswith(CUT)
    kept = said.removeprefix("1 of 1 warmup(s) errored; first: http_error: ").removesuffix(CUT)
    assert WORDS.startswith(kept) and WORDS[len(kept)] == " "  # whole words only
    assert len(kept) > 200


def test_a_short_error_is_quoted_whole_on_one_line() -> None:
    said = warmup_failure([errored("input too\nlong")], 1, ClientExit(0, None, None))
    assert said == "1 of 1 warmup(s) errored; first: http_error: input too long"
