"""``deploy/gpu-check`` on this host (no GPU: a clear result, a distinct exit code) and its
checks over a run on the virtual GPU of a simulator lane."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from collectors.gpu.owner import LaneProcessOwner
from collectors.gpu.sampler import GpuSampler
from collectors.gpu.virtual import VirtualNvml
from collectors.host import MemoryTarget
from collectors.sampler import Clocks, SamplerLoop
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import GpuSample
from faceoff.formats.attempt.stalls import CellWindow
from simulator.launch import SimServer, running
from tests.gpu.check import gpu_check, no_gpu, run_entry

GIB = 2**30
SETTINGS = CollectorSettings(memory_period_s=0.25)


def test_gpu_check_on_a_host_without_a_gpu_says_so_with_its_own_exit_code(tmp_path: Path) -> None:
    if no_gpu() is None:
        pytest.skip("this host has an NVIDIA GPU; tests/gpu/test_nvml_real.py runs the check")
    done = run_entry("--out", "report.json", cwd=tmp_path)
    assert done.returncode == gpu_check().EXIT_NO_GPU == 3, done.stderr
    assert done.stdout.startswith("gpu-check: no NVIDIA GPU: NVML unavailable: ")
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "no_nvidia_gpu" and report["checks"] == []
    assert report["reason"].startswith("NVML unavailable: NVMLError_")
    assert gpu_check().GpuCheckReport.model_validate(report).samples == 0


def post(server: SimServer, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(server.url + path, json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(request, timeout=60).close()


def test_the_checks_pass_and_fail_for_what_they_see_on_the_virtual_gpu(tmp_path: Path) -> None:
    """The check's own verification over the collectors' samples of two virtual GPUs. The
    foreign-process fault stands in for the allocation on GPU 0 only, held by "this process"
    (the simulator's process reads as this pid), so GPU 1's memory does not rise."""
    module = gpu_check()
    with running("tiny", args=["--gpus", "2"]) as sim:
        nvml = VirtualNvml(sim.url, [0, 1], lane_pid=os.getpid())
        owner = LaneProcessOwner(MemoryTarget(pid=os.getpid()))
        sampler = GpuSampler(nvml, [0, 1], tmp_path, clocks=Clocks(), owner=owner)
        period = SETTINGS.memory_period_ns
        loop = SamplerLoop(sampler, period_ns=period, late_after_ns=SETTINGS.late_after_ns(period))
        loop.start()
        assert loop.wait_first(30)
        start = time.perf_counter_ns()
        for _ in range(2):
            post(sim, "/v1/completions", {"prompt": "warm up", "max_tokens": 8})
        post(sim, "/_sim/faults", {"gpu_foreign_after_requests": 1, "gpu_foreign_gib": 2.0})
        held_from = time.perf_counter_ns()
        time.sleep(1.5)
        held = module.Held((held_from, time.perf_counter_ns()), 2 * GIB, os.getpid())
        post(sim, "/_sim/faults", {"gpu_foreign_after_requests": 0})
        time.sleep(0.5)
        window = CellWindow(start_ns=start, end_ns=time.perf_counter_ns())
        loop.stop(timeout_s=30)
    samples, _ = read_samples(sampler.path, GpuSample)
    checks, families, energy = module.verify(samples, window, held)
    results = {c.name: c.ok for c in checks}
    assert families[0] == dict.fromkeys(module.REQUIRED + module.OPTIONAL, "ok")
    assert energy.exact and energy.simulated
    for gpu in (0, 1):
        assert results[f"GPU {gpu}: every reading family"]
        assert results[f"GPU {gpu}: the energy counter moved"]
        assert results[f"GPU {gpu}: clock-event reasons readable"]
        assert results[f"GPU {gpu}: the process list named this process"]
    assert results["GPU 0: used memory rose by the allocation"]
    assert not results["GPU 1: used memory rose by the allocation"]
