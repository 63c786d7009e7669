"""The GPU path on the virtual GPU of a simulator lane: the collectors' own sampler and posture
reader over ``collectors.gpu.virtual``, against a live simulator under load and faults."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from collectors.gpu.clock_events import reason_names
from collectors.gpu.energy import cell_energy
from collectors.gpu.owner import LaneProcessOwner
from collectors.gpu.posture import collect_gpu_posture
from collectors.gpu.sampler import GpuSampler
from collectors.gpu.virtual import VirtualGpuError, VirtualNvml, nvml_for_arm
from collectors.host import MemoryTarget
from collectors.sampler import Clocks, SamplerLoop
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import GpuSample, ReadStatus
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import EnergyMethod
from simulator.gpu import FOREIGN_PID, XID_DOUBLE_BIT_ECC
from simulator.launch import SimServer, running
from tests.collectors.gpu.test_sampler import run_ticks

REPO = Path(__file__).resolve().parents[3]
GPU_IDS = [2, 3]  # the arm's GPU ids: the simulator's devices 0 and 1
SETTINGS = CollectorSettings(memory_period_s=0.25)


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with running("tiny", time_scale=1.0, args=["--gpus", "2"]) as server:
        yield server


def set_faults(server: SimServer, **faults: Any) -> None:
    request = urllib.request.Request(
        server.url + "/_sim/faults", json.dumps(faults).encode(), method="POST"
    )
    urllib.request.urlopen(request, timeout=10).close()


def load(server: SimServer, requests: int, max_tokens: int = 64) -> None:
    """Streamed chat requests from a separate process, as the cell client sends them."""
    subprocess.run(
        [*(sys.executable, "-m", "benchmarks.collector_load", server.url),
         *("--concurrency", "4", "--requests", str(requests), "--max-tokens", str(max_tokens))],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=True,
    )  # fmt: skip


def sample_during(server: SimServer, folder: Path, work: Any) -> tuple[list[GpuSample], CellWindow]:
    nvml = VirtualNvml(server.url, GPU_IDS, lane_pid=server.process.pid)
    owner = LaneProcessOwner(MemoryTarget(pid=server.process.pid))
    sampler = GpuSampler(nvml, GPU_IDS, folder, clocks=Clocks(), owner=owner)
    period = SETTINGS.memory_period_ns
    loop = SamplerLoop(sampler, period_ns=period, late_after_ns=SETTINGS.late_after_ns(period))
    loop.start()
    assert loop.wait_first(30)
    start = Clocks().mono_ns()
    work()
    window = CellWindow(start_ns=start, end_ns=Clocks().mono_ns())
    loop.stop(timeout_s=30)
    samples, bad = read_samples(sampler.path, GpuSample)
    assert bad == 0
    return samples, window


def test_power_follows_the_engine_and_the_counter_integrates_it_on_the_virtual_gpu(
    sim: SimServer, tmp_path: Path
) -> None:
    samples, window = sample_during(sim, tmp_path, lambda: load(sim, 24))
    assert all(s.simulated and s.status is ReadStatus.OK for s in samples)
    first = samples[0].devices[0]
    assert first.name is not None and first.name.endswith("(simulated)")
    assert [r.index for r in samples[0].devices] == GPU_IDS
    powers = [r.power_w or 0.0 for s in samples for r in s.devices]
    assert min(powers) == 90.0 and max(powers) > 300.0  # idle, and a step at work
    energy = cell_energy(samples, window)
    assert energy.exact and energy.simulated
    assert all(d.method is EnergyMethod.COUNTER for d in energy.devices)
    assert energy.mean_power_w is not None and 2 * 90.0 < energy.mean_power_w < 2 * 600.0
    counters = [r.energy_mj or 0 for s in samples for r in s.devices if r.index == 2]
    assert counters == sorted(counters) and counters[-1] > counters[0]
    assert max(r.util_percent or 0 for s in samples for r in s.devices) > 0
    processes = first.processes or []
    assert [(p.pid, p.lane) for p in processes] == [(sim.process.pid, True)]
    assert first.used_bytes == processes[0].used_bytes


def test_a_planted_throttle_window_shows_thermal_slowdown_on_the_virtual_gpu(
    sim: SimServer, tmp_path: Path
) -> None:
    set_faults(sim, gpu_throttle_after_requests=1)
    samples, _ = sample_during(sim, tmp_path, lambda: load(sim, 8))
    last = samples[-1].devices[0]
    assert last.slowed_down is True
    assert last.clock_event_reasons is not None
    assert reason_names(last.clock_event_reasons) == ["sw_thermal_slowdown", "hw_thermal_slowdown"]
    assert (last.sm_clock_mhz, last.max_sm_clock_mhz) == (1500, 2617)
    assert samples[0].devices[0].slowed_down is False  # before the second request arrived


def test_a_foreign_process_and_an_xid_appear_on_the_virtual_gpu(
    sim: SimServer, tmp_path: Path
) -> None:
    set_faults(sim, gpu_foreign_after_requests=1, gpu_xid_after_requests=1)
    samples, _ = sample_during(sim, tmp_path, lambda: load(sim, 4))
    first, second = samples[-1].devices
    assert [(p.pid, p.lane) for p in first.processes or []] == [
        (sim.process.pid, True),
        (FOREIGN_PID, False),
    ]
    assert [p.pid for p in second.processes or []] == [sim.process.pid]
    assert (first.xid_errors, first.last_xid, first.ecc_uncorrected) == (1, XID_DOUBLE_BIT_ECC, 1)
    assert (second.xid_errors, samples[0].devices[0].xid_errors) == (0, 0)


def test_the_gpu_posture_of_a_simulator_lane_is_labelled_simulated_on_the_virtual_gpu(
    sim: SimServer,
) -> None:
    posture = collect_gpu_posture(
        VirtualNvml(sim.url, GPU_IDS), lambda: datetime.now(UTC), gpu_ids=GPU_IDS
    )
    assert posture.simulated and posture.status is ReadStatus.OK
    assert posture.driver_version is not None and posture.driver_version.endswith("(simulated)")
    assert [d.index for d in posture.devices] == GPU_IDS
    assert posture.devices[0].power_limit_w == 600.0 and posture.devices[0].ecc_mode is True


def test_more_gpu_ids_than_virtual_gpus_is_a_reading_error_that_says_how_to_fix_it(
    sim: SimServer,
) -> None:
    nvml = VirtualNvml(sim.url, [0, 1, 2])
    nvml.init()
    with pytest.raises(VirtualGpuError, match="models 2 GPU"):
        nvml.device(2)


def test_an_unreachable_simulator_makes_the_virtual_gpu_unavailable(tmp_path: Path) -> None:
    nvml = VirtualNvml("http://127.0.0.1:9", [0])
    (sample,) = run_ticks(GpuSampler(nvml, [0], tmp_path, clocks=Clocks()), 1)
    assert sample.status is ReadStatus.UNAVAILABLE and sample.simulated
    assert (sample.error or "").startswith("NVML unavailable: VirtualGpuError")


def test_only_a_simulator_arm_with_gpu_ids_reads_the_virtual_gpu() -> None:
    url = "http://127.0.0.1:8000"
    assert nvml_for_arm(simulator=True, base_url=url, gpu_ids=[0], lane_pid=7) is not None
    assert nvml_for_arm(simulator=True, base_url=url, gpu_ids=[], lane_pid=7) is None
    assert nvml_for_arm(simulator=False, base_url=url, gpu_ids=[0], lane_pid=7) is None
