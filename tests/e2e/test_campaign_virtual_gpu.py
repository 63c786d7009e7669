"""A whole campaign on the virtual GPU: two simulator arms with GPU ids, run by the flow.

The flow picks the virtual NVML for the simulator arms, the lanes model two GPUs each,
every cell's gpu.jsonl is marked simulated and carries the energy counter, the guard
requires gpu_memory (not declared not applicable), and the candidate's GPUs throttle
from its second request on: each of its cells is blocked gpu_throttled, the incumbent's
accepted. The bundle audits clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.gpu.energy import cell_energy
from collectors.telemetry import read_samples
from evidence.audit.reverify import audit_bundle
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from faceoff.formats.attempt.collector_samples import GpuSample
from faceoff.formats.attempt.stalls import GPU_FILE
from faceoff.formats.attempt.verdict import Presence, Verdict
from faceoff.formats.reasons import Disposition, Reason
from flows.prefect.flow_runner import run_campaign
from tests.e2e.host_load import by_the_host
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

# Quiet host: the candidate's cells must be blocked for its throttle, not for the host.
pytestmark = [pytest.mark.prefect, pytest.mark.alone]
GPU_IDS = [0, 1]


def test_a_campaign_on_the_virtual_gpu_blocks_the_throttled_arm(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    throttled = {"faults": {"gpu_throttle_after_requests": 1}}
    arms = [
        arm("inc", "incumbent", gpu_ids=GPU_IDS),
        arm("cand", "candidate", gpu_ids=GPU_IDS, simulator=throttled),
    ]
    data = matrix("virtual-gpu", arms) | {"families": {"not_applicable": {}}}
    result = run_campaign(write_matrix(tmp_path, data), workdir)

    attempts = sorted(result.bundle.glob("cells/*/*/attempt-1"))
    assert len(attempts) == 4
    for attempt in attempts:
        verdict = Verdict.read(attempt / "verdict.json")
        assert verdict.family("gpu_memory").presence is Presence.PRESENT
        samples, bad = read_samples(attempt / GPU_FILE, GpuSample)
        assert bad == 0 and samples and all(s.simulated for s in samples)
        assert [r.index for r in samples[0].devices] == GPU_IDS
        window = CellRecord.read(attempt / CELL_FILE).window
        assert window is not None
        energy = cell_energy(samples, window)
        assert energy.exact and energy.joules is not None and energy.joules > 0
        if verdict.arm == "inc":  # or blocked by the host: an answer in one read, say
            assert verdict.disposition is Disposition.ACCEPTED or by_the_host(verdict), (
                verdict.sentence
            )
        else:
            assert (verdict.disposition, verdict.reason) == (
                Disposition.BLOCKED,
                Reason.GPU_THROTTLED,
            ), verdict.sentence
    assert audit_bundle(result.bundle).ok
