"""Host facts: each collector returns a typed record, and says why when it cannot read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from collectors.inventory import (
    PynvmlInventory,
    collect_cpu,
    collect_docker,
    collect_gpu,
    collect_kernel,
    collect_memory,
    collect_source,
)

REPO = Path(__file__).resolve().parents[2]


def has_nvidia_driver() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia").exists()


def test_cpu_memory_and_kernel_come_from_this_host(tmp_path: Path) -> None:
    cpu = collect_cpu()
    assert cpu.logical_cores == os.cpu_count() and cpu.architecture
    assert collect_memory().total_bytes >= collect_memory().available_bytes > 0
    assert collect_kernel().release == os.uname().release
    fake = tmp_path / "cpuinfo"
    fake.write_text("processor\t: 0\nmodel name\t: Example CPU @ 2.0GHz\n")
    assert collect_cpu(fake).model == "Example CPU @ 2.0GHz"
    assert collect_cpu(tmp_path / "absent").model is None


def test_gpu_facts_say_unavailable_with_the_nvml_reason_on_a_host_without_a_driver() -> None:
    if has_nvidia_driver():
        pytest.skip("this host has an NVIDIA driver; the gpu-marked test covers it")
    facts = collect_gpu(PynvmlInventory())
    assert facts.status == "unavailable" and facts.devices == []
    assert facts.detail and facts.detail.startswith("NVML: ")


@pytest.mark.gpu
def test_gpu_facts_list_real_devices_and_the_driver() -> None:
    if not has_nvidia_driver():
        pytest.skip("no NVIDIA driver on this host")
    facts = collect_gpu(PynvmlInventory())
    assert facts.status == "ok", facts.detail
    assert facts.driver_version and facts.devices
    assert all(d.name and (d.memory_total_bytes or 0) > 0 for d in facts.devices)


def test_docker_facts_record_why_the_daemon_could_not_be_asked() -> None:
    def refused() -> object:
        raise ConnectionRefusedError("connection refused")

    facts = collect_docker(refused)
    assert facts.status == "unavailable" and facts.detail == "connection refused"


@pytest.mark.docker
def test_docker_facts_come_from_the_real_daemon(docker_client) -> None:  # type: ignore[no-untyped-def]
    facts = collect_docker(lambda: docker_client)
    assert facts.status == "ok" and facts.server_version and facts.api_version


def test_source_facts_name_the_checkout_commit(tmp_path: Path) -> None:
    facts = collect_source(REPO)
    assert facts.git_sha is not None and len(facts.git_sha) == 40
    unknown = collect_source(tmp_path)
    assert unknown.git_sha is None and unknown.detail and unknown.detail.startswith("git: ")
