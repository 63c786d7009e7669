"""Collectors against the engine simulator over loopback: load, renames, faults."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from collectors.settings import CollectorSettings
from collectors.telemetry import TelemetrySummary
from faceoff.formats.collector_samples import EngineStatus
from faceoff.formats.stalls import CellWindow
from simulator.launch import SimServer, running
from tests.collectors.test_engine import samples

SETTINGS = CollectorSettings(engine_period_s=0.25, memory_period_s=0.5, drain_timeout_s=3.0)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with running("tiny", time_scale=1.0) as server:
        yield server


def collectors(server: SimServer, folder: Path, settings: CollectorSettings = SETTINGS):  # type: ignore[no-untyped-def]
    return CellCollectors(
        metrics_url=server.url + "/metrics",
        target=MemoryTarget(pid=server.process.pid),
        gpu_ids=[],
        folder=folder,
        settings=settings,
    )


def load(server: SimServer, concurrency: int, requests: int) -> dict[str, Any]:
    """Streamed chat requests from a separate process, as the cell client sends them."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "benchmarks.collector_load", server.url),
            *("--concurrency", str(concurrency), "--requests", str(requests)),
            *("--max-tokens", "48"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def set_faults(server: SimServer, **faults: object) -> None:
    request = urllib.request.Request(
        server.url + "/_sim/faults",
        data=json.dumps(faults).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def test_counter_deltas_reconcile_with_the_client_under_c32_load(
    sim: SimServer, tmp_path: Path
) -> None:
    cell = collectors(sim, tmp_path)
    cell.start()
    client = load(sim, concurrency=32, requests=96)
    cell.stop()
    window = CellWindow(start_ns=client["first_send_ns"], end_ns=client["last_end_ns"])
    summary = cell.summarize(window)

    engine = summary.engine
    assert client["ok"] == 96 and client["failed"] == 0
    assert engine.counters["prompt_tokens"].delta == client["prompt_tokens"]
    assert engine.counters["generation_tokens"].delta == client["completion_tokens"]
    finished = [d for k, d in engine.counters.items() if k.startswith("request_success{")]
    assert sum(d.delta for d in finished) == client["ok"]
    assert all(d.exact for d in engine.counters.values()), engine.delta_notes
    assert engine.histograms["request_prefill_time_seconds"].count_delta == client["ok"]
    assert engine.histograms["request_queue_time_seconds"].count_delta == client["ok"]
    assert (engine.max_running or 0) > 0 and (engine.max_waiting or 0) > 0  # 32 > max_num_seqs
    assert engine.kv_pool_tokens == 32_768
    assert engine.resets == 0 and engine.aliased == {}
    assert engine.families["num_requests_running"].coverage >= 0.8  # generous: shared CPUs
    assert summary.host.lane_sources == ["process_tree_rss"]
    assert TelemetrySummary.read(tmp_path / "telemetry.json") == summary


def test_legacy_names_are_read_through_the_alias_table(tmp_path: Path) -> None:
    with running("tiny", time_scale=1.0, args=["--legacy-names"]) as legacy:
        cell = collectors(legacy, tmp_path)
        cell.start()
        client = load(legacy, concurrency=4, requests=8)
        cell.stop()
    summary = cell.summarize(
        CellWindow(start_ns=client["first_send_ns"], end_ns=client["last_end_ns"])
    )
    assert summary.engine.aliased == {
        "kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
        "prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
        "prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
        "inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
    }
    assert summary.engine.counters["prompt_tokens"].delta == client["prompt_tokens"]
    assert summary.engine.counters["prefix_cache_queries"].delta == client["prompt_tokens"]
    assert summary.engine.max_kv_usage_perc is not None


@pytest.mark.parametrize(
    ("faults", "status", "why"),
    [
        ({"metrics_delay_s": 1.0}, EngineStatus.TIMEOUT, "no complete answer within 0.2 s"),
        ({"metrics_status": 500}, EngineStatus.HTTP_ERROR, "HTTP 500"),
        ({"metrics_garbage": True}, EngineStatus.PARSE_ERROR, "not Prometheus text"),
    ],
)
def test_a_slow_or_failing_simulator_endpoint_is_recorded_and_the_run_goes_on(
    sim: SimServer, tmp_path: Path, faults: dict[str, object], status: EngineStatus, why: str
) -> None:
    cell = collectors(sim, tmp_path)
    cell.start()
    time.sleep(0.5)
    set_faults(sim, **faults)
    time.sleep(1.0)
    set_faults(sim, metrics_delay_s=0.0, metrics_status=200, metrics_garbage=False)
    time.sleep(0.5)
    report = cell.stop()
    found = samples(tmp_path)
    faulty = [s for s in found if s.status is status]
    assert len(faulty) >= 2 and all(why in (s.error or "") for s in faulty)
    assert found[0].ok and found[-1].ok  # before and after the fault
    assert report.sources[0].missed == 0  # a hanging scrape costs its sample, not the schedule


def test_a_family_the_simulator_drops_is_named_missing_in_its_samples(
    sim: SimServer, tmp_path: Path
) -> None:
    cell = collectors(sim, tmp_path)
    cell.start()
    start = time.perf_counter_ns()
    set_faults(sim, missing_families=["vllm:request_prefill_time_seconds"])
    time.sleep(1.0)
    end = time.perf_counter_ns()
    set_faults(sim, missing_families=[])
    cell.stop()
    summary = cell.summarize(CellWindow(start_ns=start, end_ns=end))
    coverage = summary.engine.families["request_prefill_time_seconds"]
    assert coverage.coverage < 0.5 and coverage.max_consecutive_misses >= 2
    assert summary.engine.families["num_requests_running"].coverage >= 0.8
    dropped = [s for s in samples(tmp_path) if s.metrics and s.metrics.missing]
    assert dropped and all(
        s.metrics.missing == ["request_prefill_time_seconds"] for s in dropped if s.metrics
    )
