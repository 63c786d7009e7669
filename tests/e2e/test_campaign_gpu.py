"""On a GPU host: the campaign samples the arms' GPUs through NVML, and gpu_memory counts.

The lanes are still simulators (they compute nothing), but each arm is given GPU 0,
so the flow's collectors run the NVML sampler, the guard requires the gpu_memory
family (not declared not applicable here), and the bundle's manifest names the GPU.
Skipped where NVML is not usable (CI has no GPU).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faceoff.formats.attempt.verdict import Presence, Verdict
from flows.prefect.flow_runner import run_campaign
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.gpu.check import no_gpu

NO_GPU = no_gpu()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.prefect,
    pytest.mark.skipif(NO_GPU is not None, reason=f"not a GPU host: {NO_GPU}"),
]


def test_a_campaign_on_a_gpu_host_samples_gpu_memory(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    arms = [arm("inc", "incumbent", gpu_ids=[0]), arm("cand", "candidate", gpu_ids=[0])]
    data = matrix("e2e-gpu", arms) | {"families": {"not_applicable": {}}}
    path = write_matrix(tmp_path, data)

    result = run_campaign(path, workdir)

    assert result.complete, result.closure.sentence
    for attempt in result.bundle.glob("cells/*/*/attempt-1"):
        assert (attempt / "gpu.jsonl").read_text().count("\n") >= 1
        verdict = Verdict.read(attempt / "verdict.json")
        assert verdict.family("gpu_memory").presence is Presence.PRESENT
    manifest = json.loads((result.bundle / "MANIFEST.json").read_text())
    assert "NVIDIA" in json.dumps(manifest["host"]["gpu"])
