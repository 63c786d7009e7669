"""Binding an engine to its arm: faceoff adds --host/--port/--served-model-name to a vLLM
arm, refuses conflicting flags, records what it added, and validate shows where arms listen."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from faceoff.formats.lane import LaneExit, LaneRecord
from lanes.bringup import bring_up
from lanes.commands import binding_line, container_command, host_command
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.readiness import Waiting, wait_ready
from matrix.engines import runs_vllm
from tests.conftest import free_port
from tests.foundation.cli import REPO, faceoff
from tests.lanes.helpers import PYTHON, arm, context, kill_recorded_processes, now

GLM = REPO / "matrix" / "examples" / "glm53-exl3-vs-nvfp4.toml"
BIND = ["--host", "127.0.0.1", "--port", "8001", "--served-model-name", "llm.primary"]


@pytest.fixture
def campaign_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield tmp_path / "c"
    kill_recorded_processes(tmp_path / "c")


@pytest.mark.parametrize(
    "command",
    [
        ["vllm", "serve", "/models/m"],
        ["/opt/venv/bin/vllm", "serve", "/models/m"],
        ["/opt/venv/bin/python", "-m", "vllm.entrypoints.cli.main", "serve", "/models/m"],
        ["python", "vllm_cli.py", "serve", "/models/m"],
        ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/models/m"],
    ],
)
def test_a_vllm_serve_command_is_recognised(command: list[str]) -> None:
    assert runs_vllm(command)
    the_arm = arm(command=command, port=8001)
    assert host_command(the_arm, PYTHON) == [*command, *BIND]


def test_other_commands_are_left_as_written() -> None:
    assert not runs_vllm(["python", "-m", "http.server", "8001"])
    assert not runs_vllm(["sglang", "serve"])  # 'serve' alone says nothing
    the_arm = arm(command=["python", "-m", "http.server", "8001"], port=8001)
    assert host_command(the_arm, PYTHON) == ["python", "-m", "http.server", "8001"]


def test_engine_other_opts_out_of_detection() -> None:
    """A command that looks like vLLM but is not (a wrapper with its own flags) is left alone."""
    command = ["/opt/bin/vllm-router", "serve", "--listen", "127.0.0.1:8001"]
    the_arm = arm(engine="other", command=command, port=8001)
    assert not the_arm.runs_vllm and host_command(the_arm, PYTHON) == command
    assert binding_line(the_arm).endswith(
        "engine 'other': launched as written, its command must listen there"
    )


def test_a_declared_vllm_container_gets_the_arms_binding() -> None:
    the_arm = arm(
        lane="docker",
        image="vllm/vllm-openai@sha256:" + "ab" * 32,
        engine="vllm",
        command=["/models/m"],
        port=8001,
        engine_args=["--max-model-len", "8192", "--port=8001"],  # agrees: not added again
    )
    assert container_command(the_arm) == [
        "/models/m", "--max-model-len", "8192", "--port=8001",
        "--host", "127.0.0.1", "--served-model-name", "llm.primary",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--port", "8000"], "--port 8000 (the arm says 8001)"),
        (["--host=10.0.0.5"], "--host 10.0.0.5 (the arm says 127.0.0.1)"),
        (["--served-model-name", "other"], "--served-model-name other (the arm says llm.primary)"),
    ],
)
def test_a_vllm_arm_with_conflicting_binding_flags_is_refused(flags: list[str], named: str) -> None:
    with pytest.raises(ValidationError) as caught:
        arm(name="cand", engine="vllm", command=["vllm", "serve", "/m"], engine_args=flags,
            port=8001)  # fmt: skip
    text = str(caught.value)
    assert f"arm 'cand' runs vLLM with {named}" in text and "remove these flags" in text


def test_a_wildcard_host_also_listens_on_the_arms_host() -> None:
    the_arm = arm(engine="vllm", command=["vllm", "serve", "/m"], engine_args=["--host", "0.0.0.0"])
    assert "--host" not in host_command(the_arm, PYTHON)[4:]


def test_validate_refuses_a_conflicting_port_with_exit_2(tmp_path: Path) -> None:
    text = GLM.read_text().replace('"--tensor-parallel-size", "2",\n', "", 1)
    text = text.replace("engine_args = [\n", 'engine_args = [\n    "--port", "8002",\n', 2)
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    result = faceoff("validate", str(bad))
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert "arm 'exl3-r11' runs vLLM with --port 8002 (the arm says 8000)" in result.stderr


def test_validate_prints_where_each_arm_listens_and_the_worst_case() -> None:
    result = faceoff("validate", str(GLM), columns=400)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert (
        "arm nvfp4-r2 (candidate): 127.0.0.1:8001, GPUs 0,1; vLLM; faceoff adds "
        "--host 127.0.0.1 --port 8001 --served-model-name llm.primary"
    ) in out
    assert "arm exl3-r11 (incumbent): 127.0.0.1:8000, GPUs 0,1;" in out
    # 2 × 1800 s startup, 2 × 1200 s warmups, 42 × 1200 s cells; restoration: 1800 s startup
    # and 8 probes of 120 s (2 smokes and 2 JSON smokes direct, as many through the router)
    assert (
        "worst case by the deadlines: 16.4 h (startup 3,600 s + warmups 2,400 s + "
        "cells 50,400 s + restoration 2,760 s)"
    ) in out


def test_faceoff_makes_a_vllm_arms_engine_listen_on_its_port(campaign_dir: Path) -> None:
    """The simulator takes vLLM's binding flags; declared as vLLM and run with none of them,
    it listens where the arm says only because faceoff added them, and lane.json says so."""
    port = free_port()
    engine = [PYTHON, "-m", "simulator", "--profile", "tiny", "--time-scale", "20",
              "--set", "model.quantization=exl3"]  # fmt: skip
    the_arm = arm(engine="vllm", command=engine, port=port, expected_quantization="exl3",
                  probes={"poll_interval_s": 0.2})  # fmt: skip
    lane = open_lane(the_arm, context(campaign_dir, the_arm))
    up = bring_up(lane, UrllibHttp(), Waiting(now=now))
    assert up.ok, up.reason
    added = ["--host", "127.0.0.1", "--port", str(port), "--served-model-name", "llm.primary"]
    saved = LaneRecord.read(lane.ctx.run_dir / "lane.json")
    assert saved.added_args == added and saved.command == [*engine, *added]
    assert [m.id for m in up.identity.readiness.models] == ["llm.primary"]
    lane.stop(grace_s=5)


def test_readiness_names_the_exit_status_once(campaign_dir: Path) -> None:
    the_arm = arm(command=[PYTHON, "-c", "import sys; sys.exit(2)"], startup_deadline_s=60)
    lane = open_lane(the_arm, context(campaign_dir, the_arm))
    lane.start()
    readiness = wait_ready(lane, UrllibHttp(), Waiting(now=now))
    assert readiness.reason is not None
    assert readiness.reason.split(";")[0].count("status 2") == 1, readiness.reason
    container = LaneExit(exit_code=137, oom_killed=True, detail="container exited")
    assert container.sentence == "container exited, status 137, OOM-killed"
