"""GPU posture through the collectors' NVML interface: a fake device set, and the real library
here (a host without a GPU: unavailable, with the reason)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pynvml
import pytest

from collectors.gpu.nvml import PynvmlLibrary
from collectors.gpu.posture import collect_gpu_posture
from faceoff.formats.attempt.collector_samples import ReadStatus
from faceoff.formats.gpu_posture import (
    GpuPosture,
    gpu_posture_changes,
    read_gpu_posture,
    write_gpu_posture,
)
from tests.collectors.gpu.test_sampler import FakeDevice, FakeNvml


def now() -> datetime:
    return datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def test_every_setting_of_every_gpu_is_read_with_fake_nvml() -> None:
    nvml = FakeNvml({0: FakeDevice(0, 1.0), 1: FakeDevice(1, 1.0)})
    posture = collect_gpu_posture(nvml, now)
    assert posture.status is ReadStatus.OK and posture.simulated is False
    assert (posture.driver_version, posture.cuda_driver_version) == ("580.65.06", "13.0")
    assert [d.index for d in posture.devices] == [0, 1]
    first = posture.devices[0]
    assert first.persistence_mode is True and first.power_limit_w == 600.0
    assert (first.application_sm_clock_mhz, first.max_sm_clock_mhz) == (1980, 1980)
    assert (first.mig_mode, first.ecc_mode, first.ecc_mode_pending) == (False, True, True)
    assert first.vbios_version == "97.00.5E.00.01" and first.errors == []
    assert nvml.inits == 1 and nvml.shutdowns == 1


def test_an_unreadable_setting_makes_the_posture_partial_with_fake_nvml() -> None:
    board = FakeDevice(0, 1.0, fail={"mig mode": pynvml.NVML_ERROR_NOT_SUPPORTED})
    posture = collect_gpu_posture(FakeNvml({0: board}), now, gpu_ids=[0])
    assert posture.status is ReadStatus.PARTIAL
    assert posture.devices[0].mig_mode is None and posture.devices[0].ecc_mode is True
    assert posture.devices[0].errors == ["mig mode: NVMLError_NotSupported: Not Supported"]


def test_changes_between_start_and_end_are_named_with_fake_nvml() -> None:
    start = collect_gpu_posture(FakeNvml({0: FakeDevice(0, 1.0)}), now)
    capped = FakeDevice(0, 1.0, power_limit=450.0)
    end = collect_gpu_posture(FakeNvml({0: capped, 1: FakeDevice(1, 1.0)}), now)
    assert gpu_posture_changes(start, end) == [
        "GPU 0 power_limit_w: 600.0 at the start, 450.0 at the end",
        "GPU 0 enforced_power_limit_w: 600.0 at the start, 450.0 at the end",
        "GPU 1 (GPU-fake-1): new at the end",
    ]
    assert gpu_posture_changes(start, start) == []
    assert gpu_posture_changes(start, None) == []


def test_a_resumed_campaign_keeps_its_opening_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "posture" / "gpu-start.json"
    first = collect_gpu_posture(FakeNvml({0: FakeDevice(0, 1.0)}), now)
    write_gpu_posture(path, first, keep_first=True)
    later = collect_gpu_posture(FakeNvml({0: FakeDevice(0, 1.0, power_limit=1.0)}), now)
    write_gpu_posture(path, later, keep_first=True)
    assert read_gpu_posture(path) == first
    assert read_gpu_posture(tmp_path / "absent.json") is None


def test_the_real_nvml_on_a_host_without_a_gpu_gives_an_unavailable_posture() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this host has a working NVML; deploy/gpu-check covers it")
    posture = collect_gpu_posture(PynvmlLibrary(), now)
    assert posture.status is ReadStatus.UNAVAILABLE and posture.devices == []
    assert (posture.error or "").startswith("NVML unavailable: NVMLError_LibraryNotFound")
    assert GpuPosture.model_validate_json(posture.model_dump_json()) == posture
