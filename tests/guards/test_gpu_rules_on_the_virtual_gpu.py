"""The GPU rules end to end on the virtual GPU: a simulator lane with two virtual GPUs, the
real plan, client process and collectors (``cellrun``), the guard judging the folder. A
fault planted in the simulator throttles its GPUs, puts a foreign process on one, or raises
an Xid from the cell's first scored request on (after its one warmup); each blocks the cell
with its own reason."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.gpu.energy import cell_energy
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples
from faceoff.formats.collector_samples import GpuSample
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.reasons import Disposition, Reason
from faceoff.formats.stalls import GPU_FILE
from faceoff.formats.verdict import Outcome, Presence, Verdict
from guards.judge import judge_cell
from matrix.toml.reader import load_matrix
from simulator.launch import SimServer, running
from tests.guards.cellrun import CellRun, run_cell
from tests.guards.helpers import num

GPU_IDS = [0, 1]
MATRIX = f"""
schema_version = 1
[campaign]
name = "virtual-gpu"
seed = 3

[[arms]]
name = "incumbent"
role = "incumbent"
lane = "simulator"
port = 18321
served_model = "sim-tiny"
gpu_ids = {GPU_IDS}
[arms.simulator]
profile = "tiny"

[[arms]]
name = "candidate"
role = "candidate"
lane = "simulator"
port = 18322
served_model = "sim-tiny"
gpu_ids = {GPU_IDS}
[arms.simulator]
profile = "tiny"

[[cells]]
id = "natural-256-c2"
kind = "natural"
input_tokens = 256
concurrency = 2
requests = 6
warmups = 1
deadline_s = 120
[cells.sampling]
max_tokens = 96
reasoning_effort = "low"

[thresholds]
engine_period_s = 0.1
memory_period_s = 0.25
min_coverage = 0.2          # generous: shared CPUs; the point here is the GPU rules
max_consecutive_misses = 40
max_stalled_requests = 1.0  # the shared test host stalls; host_stall has its own tests
max_client_cpu_wait = 1.0
"""
SETTINGS = CollectorSettings(engine_period_s=0.1, memory_period_s=0.25, drain_timeout_s=3.0)
CELL = "natural-256-c2"


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> FrozenMatrix:
    path = tmp_path_factory.mktemp("matrix") / "matrix.toml"
    path.write_text(MATRIX)
    return freeze(load_matrix(path))


@pytest.fixture
def sim() -> Iterator[SimServer]:
    args = ["--served-model-name", "sim-tiny", "--gpus", str(len(GPU_IDS))]
    with running("tiny", time_scale=1.0, args=args) as server:
        yield server


def faults(server: SimServer, **changes: Any) -> dict[str, Any]:
    data = json.dumps(changes).encode() if changes else None
    request = urllib.request.Request(
        server.url + "/_sim/faults", data, method="POST" if data else "GET"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        state: dict[str, Any] = json.load(answer)
        return state


def after_the_warmup(server: SimServer, fault: str) -> None:
    assert faults(server, **{fault: 1})["arrivals"] == 0


def judged(frozen: FrozenMatrix, sim: SimServer, folder: Path) -> Verdict:
    run_cell(CellRun(frozen, CELL, "incumbent", sim, folder, SETTINGS, gpu_ids=GPU_IDS))
    return judge_cell(folder, frozen)


def test_a_clean_cell_on_the_virtual_gpu_is_accepted_with_its_energy(
    frozen: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    verdict = judged(frozen, sim, tmp_path)
    assert verdict.disposition is Disposition.ACCEPTED, verdict.sentence
    gpu_memory = next(f for f in verdict.families if f.name == "gpu_memory")
    assert gpu_memory.presence is Presence.PRESENT
    rules = {r.code: r for r in verdict.rules}
    for code in (Reason.GPU_THROTTLED, Reason.GPU_CONTENDED, Reason.GPU_ERRORS):
        assert rules[code].outcome is Outcome.PASSED, rules[code].detail
        assert rules[code].evidence["simulated"] is True
    samples, _ = read_samples(tmp_path / GPU_FILE, GpuSample)
    window = verdict_window(tmp_path)
    energy = cell_energy(samples, window)
    assert energy.simulated and energy.exact and energy.joules is not None
    assert [d.index for d in energy.devices] == GPU_IDS
    assert energy.joules > 2 * 90.0 * energy.window_s  # above two idle GPUs


def test_a_planted_throttle_window_blocks_the_cell_gpu_throttled_on_the_virtual_gpu(
    frozen: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    after_the_warmup(sim, "gpu_throttle_after_requests")
    verdict = judged(frozen, sim, tmp_path)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.GPU_THROTTLED)
    rule = next(r for r in verdict.rules if r.code is Reason.GPU_THROTTLED)
    assert rule.evidence["reasons"] == ["hw_thermal_slowdown", "sw_thermal_slowdown"]
    assert rule.evidence["min_sm_clock_ratio"] == round(1500 / 2617, 4)
    assert num(rule.evidence["slowdown_share"]) > frozen.matrix.thresholds.max_gpu_slowdown_share


def test_a_planted_foreign_process_blocks_the_cell_gpu_contended_on_the_virtual_gpu(
    frozen: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    after_the_warmup(sim, "gpu_foreign_after_requests")
    verdict = judged(frozen, sim, tmp_path)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.GPU_CONTENDED)
    assert "pid 4194303 on GPU 0" in verdict.sentence


def test_a_planted_xid_blocks_the_cell_gpu_errors_on_the_virtual_gpu(
    frozen: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    after_the_warmup(sim, "gpu_xid_after_requests")
    verdict = judged(frozen, sim, tmp_path)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.GPU_ERRORS)
    rule = next(r for r in verdict.rules if r.code is Reason.GPU_ERRORS)
    assert (rule.evidence["xid_errors"], rule.evidence["ecc_uncorrected"]) == (1, 1)


def verdict_window(folder: Path):  # type: ignore[no-untyped-def]
    from faceoff.formats.cell_record import CELL_FILE, CellRecord

    window = CellRecord.read(folder / CELL_FILE).window
    assert window is not None
    return window
