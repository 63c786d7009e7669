"""The real NVML path on a GPU host: ``deploy/gpu-check`` run as an operator runs it (skipped
elsewhere; never part of CI's GPU-less run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gpu.check import no_gpu, run_entry

pytestmark = pytest.mark.gpu


def test_gpu_check_passes_on_this_gpu_host(tmp_path: Path) -> None:
    why = no_gpu()
    if why is not None:
        pytest.skip(f"not a GPU host: {why}")
    done = run_entry("--seconds", "9", "--period", "1", "--alloc-gib", "2", cwd=tmp_path)
    report = json.loads((tmp_path / "gpu-check-report.json").read_text())
    failed = [c for c in report["checks"] if not c["ok"]]
    assert done.returncode == 0 and report["status"] == "passed", (failed, done.stdout)
    assert report["energy"]["exact"] and report["posture_start"]["status"] != "unavailable"
