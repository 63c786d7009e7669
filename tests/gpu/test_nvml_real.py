"""The real NVML path on a GPU host (skipped elsewhere; never part of CI's GPU-less run)."""

from __future__ import annotations

import pytest

from tests.gpu.nvml_probe import NoGpu, device_count, probe

pytestmark = pytest.mark.gpu


def test_real_nvml_samples_follow_a_device_allocation() -> None:
    try:
        count = device_count()
        result = probe(seconds=9.0, period_s=1.0, gpu_ids=list(range(count)), alloc_gib=2.0)
    except NoGpu as exc:
        pytest.skip(str(exc))
    failed = [name for name, ok in result.checks if not ok]
    assert not failed, failed
    assert result.summary.worst_device is not None
    assert all(d.total_bytes and d.name for d in result.summary.devices)
