"""A real container under a memory limit: the lane's cgroup samples follow its allocation."""

from __future__ import annotations

import itertools
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.cgroup import MemoryCgroup
from collectors.host import DockerStatsReader, HostSampler, MemoryTarget, lane_reader
from collectors.sampler import Clocks, SamplerLoop
from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import HostSample, LaneMemorySource, ReadStatus

pytestmark = pytest.mark.docker

MIB = 2**20
STEP_MIB, STEPS, LIMIT_MIB = 64, 6, 512
PERIOD = 250_000_000

HOG = textwrap.dedent(
    f"""
    import time
    print("ready", flush=True)
    time.sleep(1.0)
    held = []
    for step in range({STEPS}):
        held.append(bytearray(b"\\x01") * ({STEP_MIB} << 20))  # written, so resident
        print("held", step + 1, flush=True)
        time.sleep(0.5)
    time.sleep(1.0)
    held.clear()
    print("freed", flush=True)
    time.sleep(60)
    """
)


def wait_for_log(container: Any, text: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in container.logs().decode():
            return
        time.sleep(0.05)
    raise AssertionError(f"container never logged {text!r}: {container.logs().decode()[-500:]}")


@pytest.fixture
def hog(docker_client, sim_image: str) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    container = docker_client.containers.run(
        sim_image,
        entrypoint=["python3", "-c", HOG],
        network_mode="host",
        mem_limit=f"{LIMIT_MIB}m",
        detach=True,
    )
    try:
        wait_for_log(container, "ready")
        yield container
    finally:
        container.remove(force=True)


def test_cgroup_samples_follow_a_memory_hungry_container(docker_client, hog, tmp_path: Path):  # type: ignore[no-untyped-def]
    target = MemoryTarget(container_id=hog.id)
    reader = lane_reader(target, docker_client.api)
    assert isinstance(reader, MemoryCgroup) and hog.id in str(reader.path)
    loop = SamplerLoop(
        HostSampler(target, tmp_path, clocks=Clocks(), docker=docker_client.api),
        period_ns=PERIOD,
        late_after_ns=PERIOD // 5,
    )
    loop.start()
    wait_for_log(hog, f"held {STEPS}")
    time.sleep(0.6)
    stats_reading = DockerStatsReader(docker_client.api, hog.id).read()
    wait_for_log(hog, "freed")
    time.sleep(1.0)
    loop.stop(timeout_s=10)

    found, bad = read_samples(tmp_path / "host.jsonl", HostSample)
    assert bad == 0 and all(s.status is ReadStatus.OK for s in found)
    lanes = [s.lane for s in found if s.lane is not None]
    usage = [lane.usage_bytes for lane in lanes]
    assert {lane.source for lane in lanes} == {reader.read().source}
    assert all(lane.limit_bytes == LIMIT_MIB * MIB for lane in lanes)
    peak_at = usage.index(max(usage))
    assert usage[0] < 100 * MIB  # before the first allocation
    assert max(usage) >= STEPS * STEP_MIB * MIB and max(usage) < LIMIT_MIB * MIB
    rising = usage[: peak_at + 1]
    assert all(b >= a - 16 * MIB for a, b in itertools.pairwise(rising))
    assert len({u // (STEP_MIB * MIB) for u in rising}) >= STEPS  # it saw each step
    assert usage[-1] <= max(usage) - (STEPS - 1) * STEP_MIB * MIB  # and the release
    peak_lane = lanes[peak_at]
    assert peak_lane.anon_bytes is not None and peak_lane.anon_bytes >= STEPS * STEP_MIB * MIB
    if peak_lane.source is LaneMemorySource.CGROUP_V1:
        assert (peak_lane.kernel_peak_bytes or 0) >= max(usage)

    # The Docker stats API (the fallback) saw the same cgroup at the hold.
    assert stats_reading.source is LaneMemorySource.DOCKER_STATS
    assert abs(stats_reading.usage_bytes - max(usage)) < 48 * MIB
    assert stats_reading.limit_bytes == LIMIT_MIB * MIB


def test_a_container_whose_cgroup_is_not_visible_falls_back_to_docker_stats(
    docker_client,
    hog,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    empty_proc = tmp_path / "proc"
    (empty_proc / "self").mkdir(parents=True)
    (empty_proc / "self" / "mountinfo").write_text("")
    reader = lane_reader(MemoryTarget(container_id=hog.id), docker_client.api, proc=empty_proc)
    assert isinstance(reader, DockerStatsReader)
    lane = reader.read()
    assert lane.source is LaneMemorySource.DOCKER_STATS and lane.usage_bytes > 0
