"""`faceoff preflight`: each way a matrix a user would write loses the night, caught on the
campaign host before any lane is touched, naming the fix.

The matrix is a two-GPU FP8-vs-NVFP4 comparison as a new user writes it from the docs:
Docker arms running vLLM, the model mounted, GPUs 0 and 1. Real parts: the Docker daemon
and the local registry (the simulator image by digest), sockets, files, the SQLite ledger.
NVML alone is replaced, by ``FakeNvml`` (the collectors' ``Nvml`` interface), since this host
has no NVIDIA GPU; the real library is used where its absence is the point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from collectors.gpu.nvml import MemoryInfo, NvmlDevice, PynvmlLibrary, Utilization
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.preflight import CheckResult, PreflightReport, Waiver
from flows.campaign.preflight.gpus import gpu_checks
from flows.campaign.preflight.host import PreflightHost
from flows.campaign.preflight.host_checks import require_passed, run_preflight
from flows.campaign.restore import restore_tools
from lanes.bringup import bring_up
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LaneContext, LanePurpose, next_run_dir
from lanes.readiness import Waiting
from matrix.toml.reader import load_matrix
from tests.conftest import free_port
from tests.e2e.matrices import write_matrix
from tests.foundation.cli import faceoff
from tests.lanes.helpers import now

GIB = 1024**3


class FakeNvml:
    """A stand-in for NVML on a host without GPUs: the devices a GPU host would list, and
    the compute processes each holds (pid, bytes)."""

    def __init__(self, devices: dict[int, list[tuple[int, int]]]) -> None:
        self.devices = devices

    def init(self) -> None:
        pass

    def device(self, index: int) -> NvmlDevice:
        if index not in self.devices:
            raise RuntimeError(f"NVML: Invalid Argument (no device {index})")
        return FakeDevice(index, self.devices[index])

    def shutdown(self) -> None:
        pass


class FakeDevice:
    def __init__(self, index: int, processes: list[tuple[int, int]]) -> None:
        self.index, self._processes = index, processes

    def uuid(self) -> str:
        return f"GPU-fake-{self.index}"

    def name(self) -> str:
        return "NVIDIA RTX PRO 6000 Blackwell Max-Q (fake)"

    def memory(self) -> MemoryInfo:
        return MemoryInfo(0, 96 * GIB, 96 * GIB)

    def utilization(self) -> Utilization:
        return Utilization(0, 0)

    def power_w(self) -> float:
        return 0.0

    def temperature_c(self) -> int:
        return 30

    def processes(self) -> list[tuple[int, int | None]]:
        return [(pid, used) for pid, used in self._processes]


TWO_GPUS = {0: [], 1: []}


def the_matrix(tmp: Path, sim_image: str, **campaign: Any) -> dict[str, Any]:
    """Two Docker vLLM arms on GPUs 0 and 1, each model mounted: the matrix as it should be."""
    arms = []
    for name, role in (("fp8", "incumbent"), ("nvfp4", "candidate")):
        model = tmp / "models" / name
        model.mkdir(parents=True, exist_ok=True)
        config = {"architectures": ["Qwen3ForCausalLM"], "max_position_embeddings": 40960}
        (model / "config.json").write_text(json.dumps(config))
        arms.append({
            "name": name, "role": role, "lane": "docker", "image": sim_image, "engine": "vllm",
            "command": [f"/models/{name}"],
            "engine_args": ["--tensor-parallel-size", "2", "--max-model-len", "32768"],
            "gpu_ids": [0, 1], "port": free_port(), "served_model": "qwen3",
            "mounts": [{"source": str(model), "target": f"/models/{name}"}],
            "weights_manifest": f"/models/{name}",
        })  # fmt: skip
    return {
        "schema_version": 1,
        "campaign": {"name": "fp8-vs-nvfp4", "seed": 7, **campaign},
        "arms": arms,
        "cells": [
            {"kind": "natural", "input_tokens": [8192, 16384], "concurrency": [1, 2],
             "requests": 8, "sampling": {"max_tokens": 1024}, "deadline_s": 600.0},
        ],
    }  # fmt: skip


def checked(
    tmp: Path, data: dict[str, Any], nvml: Any = None, *, environ: dict[str, str] | None = None
) -> PreflightReport:
    frozen = freeze(load_matrix(write_matrix(tmp, data)))
    return run_preflight(frozen, host(tmp, nvml or FakeNvml(TWO_GPUS), environ), pilot=False)


def host(tmp: Path, nvml: Any, environ: dict[str, str] | None = None) -> PreflightHost:
    workdir = tmp / "runs"
    return PreflightHost(
        workdir=workdir,
        db_url=f"sqlite:///{workdir / 'faceoff.db'}",
        prefect_home=workdir / ".prefect",
        tools=restore_tools(os.environ if environ is None else environ),
        nvml=nvml,
        zone=UTC,
    )


def only_failure(report: PreflightReport, check: str) -> CheckResult:
    """The report's one FAIL, of ``check``; nothing touched (no workdir was made)."""
    assert [(f.check, f.status.value) for f in report.failures] == [(check, "FAIL")], [
        f.line for f in report.failures
    ]
    return report.failures[0]


pytestmark = pytest.mark.docker


def test_the_matrix_as_it_should_be_passes_in_seconds(tmp_path: Path, sim_image: str) -> None:
    started = time.perf_counter()
    report = checked(tmp_path, the_matrix(tmp_path, sim_image))
    assert report.passed, [f.line for f in report.failures]
    assert time.perf_counter() - started < 3
    assert {c.check for c in report.checks} >= {"gpus", "images", "context", "ports", "time"}
    assert not (tmp_path / "runs").exists()  # it touched nothing and made nothing


def test_arms_without_gpu_ids_where_gpu_memory_is_required(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    for arm in data["arms"]:
        del arm["gpu_ids"]
        arm["engine_args"] = ["--max-model-len", "32768"]
    found = checked(tmp_path, data).failures
    assert [(f.check, f.subject) for f in found] == [
        ("gpu_ids", "arm fp8"),
        ("gpu_ids", "arm nvfp4"),
    ]
    assert "every one of its 4 cell(s) would be blocked family_missing" in found[0].finding
    assert "gpu_ids = [...]" in (found[0].fix or "")


def test_the_context_written_twice_and_disagreeing_is_refused_before_anything(
    tmp_path: Path, sim_image: str
) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][1]["engine_args"] = ["--max-model-len", "65536"]
    data["arms"][1]["recipe"] = {"max_model_len": 131072}
    path = write_matrix(tmp_path, data)
    result = faceoff("preflight", str(path), "--workdir", str(tmp_path / "runs"))
    assert result.returncode == 2
    assert (
        "--max-model-len 65536" in result.stderr
        and "recipe.max_model_len = 131072" in result.stderr
    )
    assert "drop recipe.max_model_len" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_cell_beyond_the_models_config_json_limit(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    for arm in data["arms"]:
        arm["engine_args"] = ["--tensor-parallel-size", "2"]  # the engine takes the model's limit
    needle = {"kind": "needle", "input_tokens": 65536, "concurrency": 1, "requests": 2}
    data["cells"].append(needle | {"id": "needle-65536-c1", "sampling": {"max_tokens": 64}})
    report = checked(tmp_path, data)
    found = report.failures
    assert [(f.check, f.subject) for f in found] == [
        ("context", "arm fp8"),
        ("context", "arm nvfp4"),
    ]
    assert "config.json max_position_embeddings = 40,960" in found[0].finding
    assert "needle-65536-c1 (65,600)" in found[0].finding
    assert "lower those cells' input_tokens" in (found[0].fix or "")


def test_an_engine_context_beyond_the_models_limit(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][0]["engine_args"] = ["--tensor-parallel-size", "2", "--max-model-len", "64k"]
    found = only_failure(checked(tmp_path, data), "context")
    assert "--max-model-len 64000 in its engine flags exceeds the model's limit" in found.finding
    assert "vLLM refuses to start" in found.finding and "40960" in (found.fix or "")


def test_an_unmounted_model_path(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][1]["command"] = ["/models/nvfp4-r2"]  # the mount target is /models/nvfp4
    found = only_failure(checked(tmp_path, data), "model_path")
    assert found.subject == "arm nvfp4"
    assert "/models/nvfp4-r2 is under no mount target (mounts: /models/nvfp4)" in found.finding
    assert 'target = "/models"' in (found.fix or "")


def test_a_relative_mount(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][0]["mounts"][0]["source"] = "models/fp8"
    report = checked(tmp_path, data)
    found = [f for f in report.failures if f.check == "mounts"]
    assert len(found) == 1 and "'models/fp8' is not an absolute path" in found[0].finding
    assert "empty named volume" in found[0].finding and "absolute host path" in (found[0].fix or "")


def test_an_image_absent_locally_and_from_the_registry(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    repo = sim_image.split("@", maxsplit=1)[0]
    data["arms"][1]["image"] = f"{repo}@sha256:{'0' * 64}"  # a digest retyped wrong
    found = only_failure(checked(tmp_path, data), "images")
    assert found.subject == "arm nvfp4" and "manifest unknown" in found.finding
    assert "docker pull" in (found.fix or "")


def test_an_image_only_the_registry_has_is_found_there_without_pulling(
    docker_client: Any, sim_image: str
) -> None:
    from flows.campaign.preflight.images import registry_absence
    from lanes.images import parse_pinned

    pinned = parse_pinned(sim_image, where="test")
    assert registry_absence(docker_client, pinned) is None  # the local registry has it
    wrong = parse_pinned(f"{pinned.repo}@sha256:{'1' * 64}", where="test")
    assert "manifest unknown" in (registry_absence(docker_client, wrong) or "")


def test_an_unset_secret(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][1]["secrets"] = {"HF_TOKEN": "PREFLIGHT_TEST_HF_TOKEN"}
    environ = {k: v for k, v in os.environ.items() if k != "PREFLIGHT_TEST_HF_TOKEN"}
    found = only_failure(checked(tmp_path, data, environ=environ), "secrets")
    assert "PREFLIGHT_TEST_HF_TOKEN (secret HF_TOKEN) not set" in found.finding
    assert "export them" in (found.fix or "")
    set_now = checked(tmp_path, data, environ={**environ, "PREFLIGHT_TEST_HF_TOKEN": "x"})
    assert set_now.passed


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A foreign process: not faceoff's, listening on a port and holding a GPU."""
    port = free_port()
    script = (
        "import socket, sys, time; s = socket.socket(); "
        f"s.bind(('127.0.0.1', {port})); s.listen(); print('up', flush=True); time.sleep(600)"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"up\n"
    process.port = port  # type: ignore[attr-defined]
    yield process
    process.kill()
    process.wait()


def test_a_port_held_by_a_foreign_process(
    tmp_path: Path, sim_image: str, stranger: subprocess.Popen[bytes]
) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][1]["port"] = stranger.port  # type: ignore[attr-defined]
    found = only_failure(checked(tmp_path, data), "ports")
    assert found.subject == "arm nvfp4" and f"pid {stranger.pid} (" in found.finding
    assert "no lane faceoff started under this workdir" in found.finding
    assert "stop that process" in (found.fix or "")


def test_two_arms_on_one_gpu_set_while_another_process_holds_it(
    tmp_path: Path, sim_image: str, stranger: subprocess.Popen[bytes]
) -> None:
    nvml = FakeNvml({0: [], 1: [(stranger.pid, 20 * GIB)]})
    report = checked(tmp_path, the_matrix(tmp_path, sim_image), nvml)
    found = report.failures
    assert [(f.check, f.subject) for f in found] == [("gpus", "arm fp8"), ("gpus", "arm nvfp4")]
    assert f"GPU 1: pid {stranger.pid} ({sys.executable} -c import socket" in found[0].finding
    assert "holds 20.00 GiB" in found[0].finding and "stop those processes" in (found[0].fix or "")


def test_no_nvidia_gpu_fails_the_gpu_arms_through_the_real_library(
    tmp_path: Path, sim_image: str
) -> None:
    report = checked(tmp_path, the_matrix(tmp_path, sim_image), PynvmlLibrary())
    try:
        PynvmlLibrary().init()
    except Exception:
        found = report.failures
        assert [(f.check, f.subject) for f in found] == [("gpus", "arm fp8"), ("gpus", "arm nvfp4")]
        assert found[0].finding.startswith("no NVIDIA GPU: NVML cannot start on this host")
    else:
        pytest.skip("this host has an NVIDIA driver")


def test_a_gpu_id_nvml_does_not_list(tmp_path: Path, sim_image: str) -> None:
    report = checked(tmp_path, the_matrix(tmp_path, sim_image), FakeNvml({0: []}))
    found = report.failures
    assert [f.check for f in found] == ["gpus", "gpus"]
    assert "GPU 1: NVML: Invalid Argument" in found[0].finding and "nvidia-smi -L" in (
        found[0].fix or ""
    )


def test_tensor_parallel_size_above_the_gpu_ids(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][1]["gpu_ids"] = [1]
    found = only_failure(checked(tmp_path, data), "parallel")
    assert found.subject == "arm nvfp4"
    assert "ask for 2 GPUs" in found.finding and "gpu_ids = [1] gives 1" in found.finding


def test_a_window_shorter_than_the_estimate(tmp_path: Path, sim_image: str) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["cells"][0]["requests"] = 64  # each cell runs to its 600 s deadline at 75 tokens/s
    data["campaign"]["window"] = "22:00-23:00"
    frozen = freeze(load_matrix(write_matrix(tmp_path, data)))
    ahead = replace(host(tmp_path, FakeNvml(TWO_GPUS)), ahead=True)  # the night to come
    found = only_failure(run_preflight(frozen, ahead, pilot=False), "time")
    assert "even the estimate does not fit" in found.finding and "(1.0 h)" in found.finding
    assert "estimate 1.5 h (from the plan at 5,000 prefill and 75 decode tokens/s)" in found.finding
    assert "a longer window" in (found.fix or "")


def test_a_waived_fail_lets_the_run_go_on_and_carries_its_reason(
    tmp_path: Path, sim_image: str
) -> None:
    data = the_matrix(tmp_path, sim_image)
    data["arms"][1]["secrets"] = {"HF_TOKEN": "PREFLIGHT_TEST_HF_TOKEN"}
    environ = {k: v for k, v in os.environ.items() if k != "PREFLIGHT_TEST_HF_TOKEN"}
    frozen = freeze(load_matrix(write_matrix(tmp_path, data)))
    with pytest.raises(FaceoffError, match="preflight failed, nothing was touched: secrets"):
        require_passed(
            run_preflight(frozen, host(tmp_path, FakeNvml(TWO_GPUS), environ), pilot=False)
        )
    waiver = Waiver(check="secrets", reason="the model is public; HF_TOKEN only avoids limits")
    report = run_preflight(
        frozen, host(tmp_path, FakeNvml(TWO_GPUS), environ), [waiver], pilot=False
    )
    require_passed(report)
    assert [(c.check, c.waived) for c in report.waived] == [("secrets", waiver.reason)]
    assert report.waivers == [waiver] and "(1 waived)" in report.sentence


def test_the_incumbent_an_earlier_campaign_restored_holds_its_port_and_gpu_rightly(
    tmp_path: Path,
) -> None:
    data = simulator_matrix("tonight")
    earlier = restored_incumbent(tmp_path, data)
    try:
        pid = earlier.record.pid
        assert pid is not None
        nvml = FakeNvml({0: [(pid, 30 * GIB)]})
        frozen = freeze(load_matrix(write_matrix(tmp_path, data)))
        report = run_preflight(frozen, host(tmp_path, nvml), pilot=False)
        assert report.passed, [f.line for f in report.failures]
        by_check = {(c.check, c.subject): c for c in report.checks}
        assert "held by lane last-night/inc/restore-001" in by_check[("ports", "arm inc")].finding
        answers = by_check[("incumbent", "arm inc")]
        assert answers.status.value == "ok" and "answers as 'sim-tiny'" in answers.finding
        gpus = by_check[("gpus", "arm inc")]
        assert gpus.status.value == "ok" and "virtual GPUs" in gpus.finding
        # the same arm on hardware: its restored lane's pid on GPU 0 is the take-over's
        hardware = frozen.matrix.incumbent.model_copy(update={"simulator": None})
        assert [c.status.value for c in gpu_checks([hardware], nvml, {pid})] == ["ok"]
        assert [c.status.value for c in gpu_checks([hardware], nvml, set())] == ["FAIL"]

        faults = f"{earlier.record.base_url}/_sim/faults"
        sick = UrllibHttp().post_json(faults, {"health_status": 503}, timeout=10)
        assert sick.ok, sick.describe()  # it lists its model, and calls itself unhealthy
        report = run_preflight(frozen, host(tmp_path, nvml), pilot=False)
        unwell = next(c for c in report.checks if c.check == "incumbent")
        assert unwell.status.value == "WARN" and "/health says HTTP 503" in unwell.finding

        data["arms"][0]["served_model"] = "sim-tiny-v2"  # not what serves there
        frozen = freeze(load_matrix(write_matrix(tmp_path, data)))
        found = only_failure(run_preflight(frozen, host(tmp_path, nvml), pilot=False), "incumbent")
        assert (
            "serves ['sim-tiny'], not the incumbent's served_model 'sim-tiny-v2'" in found.finding
        )
    finally:
        earlier.stop()


def simulator_matrix(name: str) -> dict[str, Any]:
    arm = {"lane": "simulator", "served_model": "sim-tiny", "gpu_ids": [0],
           "simulator": {"profile": "tiny", "time_scale": 20.0},
           "probes": {"poll_interval_s": 0.1}}  # fmt: skip
    return {
        "schema_version": 1,
        "campaign": {"name": name, "seed": 1},
        "arms": [arm | {"name": "inc", "role": "incumbent", "port": free_port()},
                 arm | {"name": "cand", "role": "candidate", "port": free_port()}],
        "cells": [{"id": "natural-600-c1", "kind": "natural", "input_tokens": 600,
                   "concurrency": 1, "requests": 2, "sampling": {"max_tokens": 32}}],
        "families": {"not_applicable": {"gpu_memory": "a simulator samples no GPU"}},
    }  # fmt: skip


def restored_incumbent(tmp: Path, data: dict[str, Any]) -> Any:
    """The incumbent as campaign last-night restored it under the workdir, serving."""
    last = {**data, "campaign": {"name": "last-night", "seed": 1}}
    frozen = freeze(load_matrix(write_matrix(tmp, last)))
    arm = frozen.matrix.incumbent
    campaign_dir = tmp / "runs" / "last-night"
    ctx = LaneContext(
        campaign="last-night",
        matrix_id=frozen.matrix_id,
        purpose=LanePurpose.RESTORE,
        run_dir=next_run_dir(campaign_dir, arm.name, LanePurpose.RESTORE),
        environ=os.environ,
        now=now,
    )
    up = bring_up(open_lane(arm, ctx, python=sys.executable), UrllibHttp(), Waiting(now=now))
    assert up.ok, up.reason
    return up.lane
