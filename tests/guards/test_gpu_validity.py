"""The GPU rules over planted gpu.jsonl readings: a throttle window, a foreign process, an
Xid rise (pure), on a captured clean cell whose window they are placed around.

The GPU rules end to end on the virtual GPU: a simulator lane with two virtual GPUs, the
real plan, client process and collectors (``cellrun``), the guard judging the folder. A
fault planted in the simulator throttles its GPUs, puts a foreign process on one, or raises
an Xid from the cell's first scored request on (after its one warmup); each blocks the cell
with its own reason.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.gpu.clock_events import HW_SLOWDOWN, HW_THERMAL_SLOWDOWN, SW_POWER_CAP
from collectors.gpu.energy import cell_energy
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import GpuProcess, GpuReading, GpuSample, ReadStatus
from faceoff.formats.attempt.stalls import GPU_FILE
from faceoff.formats.attempt.verdict import Outcome, Presence, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.reasons import Disposition, Reason
from guards.artifacts import CellArtifacts
from guards.dispositions import decide
from guards.gpu_validity import gpu_contended, gpu_errors, gpu_throttled
from guards.judge import judge_cell
from matrix.thresholds import Thresholds
from matrix.toml.reader import load_matrix
from simulator.launch import SimServer, running
from tests.guards.cellrun import CellRun, run_cell
from tests.guards.helpers import load, num
from tests.guards.test_validity import cell_of, rules

LANE_PID, OTHER_PID = 4100, 4200
DEFAULT = Thresholds()


@pytest.fixture(scope="module")
def clean() -> CellArtifacts:
    return load("natural")


def readings(art: CellArtifacts, per_device: list[list[dict[str, object]]]) -> CellArtifacts:
    """``art`` with gpu.jsonl samples spread evenly over its window (one before the start and
    one after the end, as the sampler's baseline and drain), one reading per device each."""
    window = art.record.window
    assert window is not None
    ticks = len(per_device[0])
    step = (window.end_ns - window.start_ns) // (ticks - 3)
    samples = [
        GpuSample(
            seq=k, final=k == ticks - 1, period_ns=step, scheduled_ns=at, actual_ns=at,
            wall_utc=art.record.started_at, latency_ns=0, status=ReadStatus.OK,
            devices=[reading(i, device[k]) for i, device in enumerate(per_device)],
        )
        for k in range(ticks)
        for at in [window.start_ns + (k - 1) * step - (1 if k == 0 else 0)]
    ]  # fmt: skip
    return dataclasses.replace(art, gpu=samples)


def reading(index: int, fields: dict[str, object]) -> GpuReading:
    base: dict[str, object] = {
        "index": index, "used_bytes": 1, "free_bytes": 1, "total_bytes": 2,
        "clock_event_reasons": 0, "sm_clock_mhz": 2000, "max_sm_clock_mhz": 2000,
        "processes": [GpuProcess(pid=LANE_PID, used_bytes=1, lane=True)],
        "xid_errors": 0, "ecc_uncorrected": 0, "ecc_corrected": 0,
    }  # fmt: skip
    return GpuReading.model_validate(base | fields)


def steady(ticks: int, **fields: object) -> list[dict[str, object]]:
    return [dict(fields) for _ in range(ticks)]


THROTTLED = {"clock_event_reasons": HW_THERMAL_SLOWDOWN | HW_SLOWDOWN, "sm_clock_mhz": 1100}


def test_a_throttle_window_beyond_the_threshold_blocks_the_cell(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    hot = [*steady(4), *[THROTTLED] * 4, *steady(4)]  # 4 of the 10 readings inside the window
    art = readings(clean, [steady(12), hot])
    result = gpu_throttled(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.FAILED, result.detail
    ev = result.evidence
    assert (ev["worst_device"], ev["readings"], ev["slowed"]) == (1, 10, 4)
    assert ev["reasons"] == ["hw_slowdown", "hw_thermal_slowdown"]
    assert ev["min_sm_clock_ratio"] == 0.55
    assert result.detail.startswith("GPU 1 slowed down (thermal or power delivery) in 4 of 10")
    decision = decide([], rules(art, frozen).values())
    assert (decision.disposition, decision.reason) == (Disposition.BLOCKED, Reason.GPU_THROTTLED)


def test_a_short_slowdown_is_flagged_and_a_power_cap_is_only_counted(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    blip = [*steady(5), THROTTLED, *steady(6)]
    capped = steady(12, clock_event_reasons=SW_POWER_CAP)
    art = readings(clean, [blip, capped])
    result = gpu_throttled(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.PASSED and result.evidence["flagged"] is True
    assert result.detail.startswith("flagged: GPU 0 slowed down")
    assert result.evidence["power_capped_readings"] == 10
    strict = DEFAULT.model_copy(update={"max_gpu_slowdown_share": 0.0})
    assert gpu_throttled(art, cell_of(frozen, art), strict).outcome is Outcome.FAILED
    only_capped = readings(clean, [capped])
    quiet = gpu_throttled(only_capped, cell_of(frozen, art), DEFAULT)
    assert quiet.outcome is Outcome.PASSED and quiet.evidence["flagged"] is False


def test_a_gpu_without_clock_event_reasons_is_not_evaluated(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    art = readings(clean, [steady(12, clock_event_reasons=None)])
    result = gpu_throttled(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.NOT_EVALUATED


def test_a_foreign_process_on_the_arm_s_gpus_blocks_the_cell(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    shared = [GpuProcess(pid=LANE_PID, used_bytes=1, lane=True),
              GpuProcess(pid=OTHER_PID, used_bytes=2**30, lane=False)]  # fmt: skip
    visited = steady(6) + steady(1, processes=shared) + steady(5)
    art = readings(clean, [steady(12), visited])
    result = gpu_contended(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.FAILED
    assert (
        result.detail
        == f"a foreign compute process shared the arm's GPUs: pid {OTHER_PID} on GPU 1"
    )
    assert result.evidence["foreign_max_bytes"] == 2**30
    decision = decide([], rules(art, frozen).values())
    assert (decision.disposition, decision.reason) == (Disposition.BLOCKED, Reason.GPU_CONTENDED)


def test_a_process_of_unknown_owner_is_flagged(clean: CellArtifacts, frozen: FrozenMatrix) -> None:
    unknown = [GpuProcess(pid=OTHER_PID, used_bytes=None, lane=None)]
    art = readings(clean, [steady(12, processes=unknown)])
    result = gpu_contended(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.PASSED and result.evidence["flagged"] is True


def test_a_foreign_process_only_after_the_drain_is_outside_the_window(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    late = [GpuProcess(pid=OTHER_PID, used_bytes=1, lane=False)]
    art = readings(clean, [steady(11) + steady(1, processes=late)])
    assert gpu_contended(art, cell_of(frozen, art), DEFAULT).outcome is Outcome.PASSED


def test_an_xid_rise_in_the_window_blocks_the_cell(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    xid = steady(5, xid_errors=2) + steady(7, xid_errors=3, ecc_uncorrected=1)
    art = readings(clean, [steady(12), xid])
    result = gpu_errors(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.FAILED
    assert (result.evidence["xid_errors"], result.evidence["ecc_uncorrected"]) == (1, 1)
    assert result.evidence["on_devices"] == [1]
    decision = decide([], rules(art, frozen).values())
    assert (decision.disposition, decision.reason) == (Disposition.BLOCKED, Reason.GPU_ERRORS)


def test_errors_from_before_the_window_and_corrected_ones_do_not_block(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    old = steady(12, xid_errors=4, ecc_uncorrected=2)
    corrected = steady(6, ecc_corrected=10) + steady(6, ecc_corrected=12)
    art = readings(clean, [old, corrected])
    result = gpu_errors(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.PASSED and result.evidence["flagged"] is True
    assert result.evidence["ecc_corrected"] == 2


def test_an_arm_without_gpu_ids_has_no_gpu_rules(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    assert clean.gpu is None
    for rule in (gpu_throttled, gpu_contended, gpu_errors):
        assert rule(clean, cell_of(frozen, clean), DEFAULT).outcome is Outcome.NOT_APPLICABLE


def test_unavailable_samples_leave_the_rules_not_evaluated(
    clean: CellArtifacts, frozen: FrozenMatrix
) -> None:
    art = readings(clean, [steady(12)])
    gone = {"status": ReadStatus.UNAVAILABLE, "devices": [], "error": "NVML unavailable: gone"}
    down = [s.model_copy(update=gone) for s in art.gpu or []]
    art = dataclasses.replace(art, gpu=down)
    result = gpu_throttled(art, cell_of(frozen, art), DEFAULT)
    assert result.outcome is Outcome.NOT_EVALUATED
    assert result.detail.endswith("NVML unavailable: gone")


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
def virtual_matrix(tmp_path_factory: pytest.TempPathFactory) -> FrozenMatrix:
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


def judged(virtual_matrix: FrozenMatrix, sim: SimServer, folder: Path) -> Verdict:
    run_cell(CellRun(virtual_matrix, CELL, "incumbent", sim, folder, SETTINGS, gpu_ids=GPU_IDS))
    return judge_cell(folder, virtual_matrix)


def test_a_clean_cell_on_the_virtual_gpu_is_accepted_with_its_energy(
    virtual_matrix: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    verdict = judged(virtual_matrix, sim, tmp_path)
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
    virtual_matrix: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    after_the_warmup(sim, "gpu_throttle_after_requests")
    verdict = judged(virtual_matrix, sim, tmp_path)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.GPU_THROTTLED)
    rule = next(r for r in verdict.rules if r.code is Reason.GPU_THROTTLED)
    assert rule.evidence["reasons"] == ["hw_thermal_slowdown", "sw_thermal_slowdown"]
    assert rule.evidence["min_sm_clock_ratio"] == round(1500 / 2617, 4)
    bound = virtual_matrix.matrix.thresholds.max_gpu_slowdown_share
    assert num(rule.evidence["slowdown_share"]) > bound


def test_a_planted_foreign_process_blocks_the_cell_gpu_contended_on_the_virtual_gpu(
    virtual_matrix: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    after_the_warmup(sim, "gpu_foreign_after_requests")
    verdict = judged(virtual_matrix, sim, tmp_path)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.GPU_CONTENDED)
    assert "pid 4194303 on GPU 0" in verdict.sentence


def test_a_planted_xid_blocks_the_cell_gpu_errors_on_the_virtual_gpu(
    virtual_matrix: FrozenMatrix, sim: SimServer, tmp_path: Path
) -> None:
    after_the_warmup(sim, "gpu_xid_after_requests")
    verdict = judged(virtual_matrix, sim, tmp_path)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.GPU_ERRORS)
    rule = next(r for r in verdict.rules if r.code is Reason.GPU_ERRORS)
    assert (rule.evidence["xid_errors"], rule.evidence["ecc_uncorrected"]) == (1, 1)


def verdict_window(folder: Path):  # type: ignore[no-untyped-def]
    from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord

    window = CellRecord.read(folder / CELL_FILE).window
    assert window is not None
    return window
