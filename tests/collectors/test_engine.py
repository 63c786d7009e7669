"""The engine sampler against a real /metrics endpoint on loopback, healthy and faulty."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.aliases import vllm_aliases
from collectors.engine import EngineSampler, HttpMetricsSource
from collectors.sampler import Clocks, SamplerLoop
from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import EngineSample, EngineStatus
from faceoff.formats.attempt.stalls import ENGINE_FILE, SCRAPE_FIRST, SCRAPE_LAST
from tests.collectors.metrics_server import MetricsServer
from tests.lanes.helpers import wait_for

MS = 1_000_000
PERIOD = 100 * MS
# Half the period: a scrape that gives up leaves the next tick 50 ms of slack, more than
# a loaded 2-core test host's usual wake-up delay (0.8 × period left only 20 ms).
TIMEOUT_S = 0.05


def engine_loop(url: str, folder: Path, timeout_s: float = TIMEOUT_S) -> SamplerLoop:
    sampler = EngineSampler(
        HttpMetricsSource(url, timeout_s), folder, vllm_aliases(), clocks=Clocks()
    )
    return SamplerLoop(sampler, period_ns=PERIOD, late_after_ns=PERIOD // 5)


def samples(folder: Path) -> list[EngineSample]:
    found, bad = read_samples(folder / ENGINE_FILE, EngineSample)
    assert bad == 0
    return found


def statuses_so_far(folder: Path) -> list[EngineStatus]:
    """The statuses written so far (a line still being written is left out)."""
    if not (folder / ENGINE_FILE).exists():
        return []
    return [s.status for s in read_samples(folder / ENGINE_FILE, EngineSample)[0]]


# What the sampler must write for each of the server's modes.
SAID = {
    "ok": EngineStatus.OK,
    "drop": EngineStatus.OK,
    "error500": EngineStatus.HTTP_ERROR,
    "hang": EngineStatus.TIMEOUT,
    "garbage": EngineStatus.PARSE_ERROR,
    "binary": EngineStatus.PARSE_ERROR,
}


def run_modes(  # type: ignore[no-untyped-def]
    server: MetricsServer, folder: Path, modes: list[str], per_mode: int = 2, timeout_s=TIMEOUT_S
):
    """Each mode held until the sampler has written ``per_mode`` samples saying it: a loaded
    host makes the run longer, never shorter (a fixed dwell saw too few samples there)."""
    loop = engine_loop(server.url, folder, timeout_s)
    loop.start()
    assert loop.wait_first(60)
    for mode in modes:
        server.mode = mode
        start = len(statuses_so_far(folder))
        wait_for(
            lambda: statuses_so_far(folder)[start:].count(SAID[mode]) >= per_mode,  # noqa: B023
            f"{per_mode} samples of {SAID[mode]} while the endpoint is {mode}",
            timeout=120,
        )
    server.mode = "ok"
    stats = loop.stop(timeout_s=10)
    return samples(folder), stats


def test_healthy_endpoint_gives_ok_samples_and_keeps_first_and_last_scrape(
    metrics_server: MetricsServer, tmp_path: Path, vllm_text: str
) -> None:
    # A scrape may take a loaded host's while: only the hang test needs the short timeout.
    found, stats = run_modes(metrics_server, tmp_path, ["ok"], per_mode=4, timeout_s=10.0)
    assert len(found) >= 4 and all(s.status is EngineStatus.OK for s in found)
    assert found[-1].final and not any(s.final for s in found[:-1])
    assert [s.seq for s in found[:-1]] == list(range(len(found) - 1))
    assert all(s.http_status == 200 and s.latency_ns > 0 for s in found)
    assert found[0].metrics is not None and found[0].metrics.counters["prompt_tokens"] == 52
    assert (tmp_path / SCRAPE_FIRST).read_text() == vllm_text
    assert (tmp_path / SCRAPE_LAST).read_text() == vllm_text
    assert stats.ticks == len(found) - 1 and stats.sampler_errors == 0


@pytest.mark.parametrize(
    ("mode", "status", "error_part"),
    [
        ("error500", EngineStatus.HTTP_ERROR, "HTTP 500"),
        ("hang", EngineStatus.TIMEOUT, f"no complete answer within {TIMEOUT_S} s"),
        ("garbage", EngineStatus.PARSE_ERROR, "not Prometheus text"),
        ("binary", EngineStatus.PARSE_ERROR, "not UTF-8"),
    ],
)
def test_a_faulty_endpoint_yields_samples_that_say_so_and_the_run_goes_on(
    metrics_server: MetricsServer,
    tmp_path: Path,
    mode: str,
    status: EngineStatus,
    error_part: str,
) -> None:
    found, stats = run_modes(metrics_server, tmp_path, ["ok", mode, "ok"])
    statuses = [s.status for s in found]
    faulty = [s for s in found if s.status is status]
    assert len(faulty) >= 2, statuses
    assert all(error_part in (s.error or "") and s.metrics is None for s in faulty)
    first, last = statuses.index(status), len(statuses) - 1 - statuses[::-1].index(status)
    assert EngineStatus.OK in statuses[:first] and EngineStatus.OK in statuses[last:]  # recovered
    assert stats.sampler_errors == 0
    if mode == "hang":  # a hanging scrape is given up at its timeout: it costs its own sample
        assert all(TIMEOUT_S * 1e9 <= s.latency_ns < PERIOD * 10 for s in faulty)
        assert stats.missed < len(faulty)  # not one slot lost per hung scrape
    if mode == "error500":
        assert all(s.http_status == 500 for s in faulty)


def test_a_dropped_family_is_named_in_each_sample_that_lacks_it(
    metrics_server: MetricsServer, tmp_path: Path
) -> None:
    metrics_server.drop_family = "vllm:request_prefill_time_seconds"
    # three in the drop mode: at most one scrape was already under way when it began
    found, _ = run_modes(metrics_server, tmp_path, ["ok", "drop", "ok"], per_mode=3, timeout_s=10.0)
    dropped = [s for s in found if s.metrics and s.metrics.missing]
    assert len(dropped) >= 2
    assert all(s.status is EngineStatus.OK for s in found)
    assert all(s.metrics.missing == ["request_prefill_time_seconds"] for s in dropped)  # type: ignore[union-attr]


def test_an_unreachable_endpoint_is_recorded_every_tick(tmp_path: Path) -> None:
    from tests.conftest import free_port

    loop = engine_loop(f"http://127.0.0.1:{free_port()}/metrics", tmp_path)
    loop.start()
    assert loop.wait_first(60)
    wait_for(lambda: len(statuses_so_far(tmp_path)) >= 3, "three unreachable samples", 120)
    loop.stop(drain=True, timeout_s=10)
    found = samples(tmp_path)
    assert len(found) >= 3
    assert all(s.status is EngineStatus.UNREACHABLE and s.http_status is None for s in found)
    assert not (tmp_path / SCRAPE_FIRST).exists() and not (tmp_path / SCRAPE_LAST).exists()
