"""Host and lane memory: real cgroup files of this kernel, real processes, v2 file formats."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from collectors.cgroup import (
    MemoryCgroup,
    cgroup_of_pid,
    memory_mounts,
    memory_paths,
    read_memory_mounts,
    read_v2,
)
from collectors.host import HostSampler, MemoryTarget, ProcessTreeReader, lane_reader
from collectors.sampler import Clocks, Tick
from collectors.telemetry import read_samples
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.collector_samples import HostSample, LaneMemorySource, ReadStatus

MIB = 2**20

HYBRID_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_MOUNTINFO = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def test_mountinfo_gives_the_v1_memory_and_the_v2_unified_hierarchies() -> None:
    mounts = memory_mounts(HYBRID_MOUNTINFO)
    assert [(m.version, str(m.mount_point)) for m in mounts] == [
        (1, "/sys/fs/cgroup/memory"),
        (2, "/sys/fs/cgroup/unified"),
    ]
    assert [(m.version, m.root) for m in memory_mounts(V2_MOUNTINFO)] == [(2, "/")]


def test_proc_cgroup_names_the_memory_and_unified_paths() -> None:
    text = "9:name=systemd:/docker/a\n4:memory:/docker/a\n3:cpu,cpuacct:/docker/a\n0::/docker/a\n"
    assert memory_paths(text) == {1: "/docker/a", 2: "/docker/a"}
    scope = "/system.slice/docker-a.scope"
    assert memory_paths(f"0::{scope}\n") == {2: scope}


def test_v2_files_give_usage_anon_file_limit_and_peak(tmp_path: Path) -> None:
    (tmp_path / "memory.current").write_text("734003200\n")
    (tmp_path / "memory.stat").write_text("anon 524288000\nfile 209715200\nkernel 1048576\n")
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.peak").write_text("800000000\n")
    lane = read_v2(tmp_path)
    assert lane.source is LaneMemorySource.CGROUP_V2
    assert (lane.usage_bytes, lane.anon_bytes, lane.file_bytes) == (734003200, 524288000, 209715200)
    assert (lane.limit_bytes, lane.kernel_peak_bytes) == (1073741824, 800000000)
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.peak").unlink()  # kernels before 5.19
    again = MemoryCgroup(tmp_path, 2).read()
    assert again.limit_bytes is None and again.kernel_peak_bytes is None


def test_this_process_has_a_readable_memory_cgroup_on_this_kernel() -> None:
    try:
        found = cgroup_of_pid(os.getpid(), read_memory_mounts())
    except LookupError as exc:
        pytest.skip(f"no memory cgroup visible here: {exc}")
    lane = found.read()
    assert lane.source in (LaneMemorySource.CGROUP_V1, LaneMemorySource.CGROUP_V2)
    assert lane.usage_bytes > 0 and lane.anon_bytes is not None and lane.file_bytes is not None


HOG = textwrap.dedent(
    """
    import subprocess, sys, time
    chunk = bytearray(b"\\x01") * ({mib} << 20)  # written, so resident
    if len(sys.argv) > 1:
        child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
    print("ready", flush=True)
    time.sleep(60)
    """
)


@pytest.fixture
def process_tree() -> Iterator[subprocess.Popen[str]]:
    """A process holding 64 MiB whose child holds 48 MiB more."""
    child = HOG.format(mib=48)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOG.format(mib=64), child], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        kids = psutil.Process(proc.pid).children()
        if kids and kids[0].memory_info().rss > 48 * MIB:
            break
        time.sleep(0.05)
    tree = [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]
    yield proc
    kill_tree(tree)
    proc.wait(10)


def kill_tree(tree: list[psutil.Process]) -> None:
    for member in tree:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            continue


def test_a_process_lane_in_our_own_cgroup_is_measured_as_its_tree_rss(
    process_tree: subprocess.Popen[str],
) -> None:
    reader = lane_reader(MemoryTarget(pid=process_tree.pid))
    assert isinstance(reader, ProcessTreeReader)  # a shared cgroup would count us too
    lane = reader.read()
    assert lane.source is LaneMemorySource.PROCESS_TREE_RSS
    assert lane.usage_bytes >= (64 + 48) * MIB
    assert lane.where == f"pid {process_tree.pid} and 1 descendants"
    assert lane.anon_bytes is None  # not told by RSS: never guessed


def test_host_sampler_records_host_memory_and_the_lane(
    process_tree: subprocess.Popen[str], tmp_path: Path
) -> None:
    sampler = HostSampler(MemoryTarget(pid=process_tree.pid), tmp_path, clocks=Clocks())
    sampler.open()
    sampler.take(Tick(0, 0, 0, 2_000_000_000))
    kill_tree([*psutil.Process(process_tree.pid).children(), psutil.Process(process_tree.pid)])
    process_tree.wait(10)
    sampler.take(Tick(1, 2_000_000_000, 2_000_000_000, 2_000_000_000))  # the lane is gone
    sampler.close()
    (first, second), bad = read_samples(sampler.path, HostSample)
    assert bad == 0
    assert first.status is ReadStatus.OK and first.lane is not None
    assert 0 < (first.host_available_bytes or 0) <= (first.host_total_bytes or 0)
    assert second.status is ReadStatus.PARTIAL and second.lane is None
    assert "NoSuchProcess" in (second.lane_error or "")
    assert second.host_available_bytes is not None  # the run goes on


def test_a_lane_target_needs_a_container_or_a_pid() -> None:
    with pytest.raises(FaceoffError, match="container id or a pid"):
        MemoryTarget()
