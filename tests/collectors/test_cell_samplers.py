"""The facade around a cell: real HTTP, a real process lane, a fake device set for NVML.

Collectors against the engine simulator over loopback: load, renames, faults.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from collectors.aliases import vllm_aliases
from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from collectors.settings import CollectorSettings
from collectors.telemetry import read_samples, summarize_folder
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.collector_samples import EngineSample, EngineStatus
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from simulator.launch import SimServer, running
from tests.collectors.gpu.test_sampler import FakeDevice, FakeNvml
from tests.collectors.metrics_server import MetricsServer
from tests.collectors.test_engine import samples

SETTINGS = CollectorSettings(engine_period_s=0.1, memory_period_s=0.2, drain_timeout_s=2.0)


class EngineState:
    """A tiny engine exposing vLLM's families through prometheus_client's own writer."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ["engine", "model_name"]
        self.running = Gauge("vllm:num_requests_running", "", labels, registry=self.registry)
        self.waiting = Gauge("vllm:num_requests_waiting", "", labels, registry=self.registry)
        self.kv = Gauge("vllm:kv_cache_usage_perc", "", labels, registry=self.registry)
        self.prompt = Counter("vllm:prompt_tokens", "", labels, registry=self.registry)
        self.prefill = Histogram(
            "vllm:request_prefill_time_seconds", "", labels, registry=self.registry
        )
        info = Gauge(
            "vllm:cache_config_info", "", ["block_size", "num_gpu_blocks"], registry=self.registry
        )
        info.labels(block_size="16", num_gpu_blocks="62388").set(1)
        self.lock = threading.Lock()

    def step(self, running: int, kv: float) -> None:
        with self.lock:
            self.running.labels("0", "m").set(running)
            self.waiting.labels("0", "m").set(0)
            self.kv.labels("0", "m").set(kv)
            if running:
                self.prompt.labels("0", "m").inc(100)
                self.prefill.labels("0", "m").observe(0.25)

    def text(self) -> str:
        with self.lock:
            return generate_latest(self.registry).decode()


@pytest.fixture
def lane_process() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait(10)


@pytest.fixture
def engine_state() -> EngineState:
    state = EngineState()
    state.step(0, 0.0)
    return state


@pytest.fixture
def engine_server(engine_state: EngineState) -> Iterator[MetricsServer]:
    server = MetricsServer(engine_state.text).start()
    yield server
    server.stop()


def collectors_for(server: MetricsServer, pid: int, folder: Path) -> CellCollectors:
    nvml = FakeNvml({0: FakeDevice(0, 40.0), 1: FakeDevice(1, 70.0)})
    return CellCollectors(
        metrics_url=server.url,
        target=MemoryTarget(pid=pid),
        gpu_ids=[0, 1],
        folder=folder,
        settings=SETTINGS,
        nvml=nvml,
    )


def test_a_cell_is_collected_drained_and_summarized_with_fake_nvml(
    engine_server: MetricsServer,
    engine_state: EngineState,
    lane_process: subprocess.Popen[bytes],
    tmp_path: Path,
) -> None:
    collectors = collectors_for(engine_server, lane_process.pid, tmp_path)
    collectors.start()  # baseline samples exist when this returns
    start = time.perf_counter_ns()
    for step in range(10):
        engine_state.step(running=4, kv=0.1 * (step + 1))
        time.sleep(0.1)
    end = time.perf_counter_ns()
    # The last requests leave the engine a little after the client saw them end.
    threading.Timer(0.3, engine_state.step, kwargs={"running": 0, "kv": 0.0}).start()
    report = collectors.stop()
    summary = collectors.summarize(CellWindow(start_ns=start, end_ns=end))

    assert [s.source for s in report.sources] == ["engine", "host", "gpu"]
    assert all(s.sampler_errors == 0 for s in report.sources)
    engine = summary.engine
    assert engine.counters["prompt_tokens"].delta == 1_000
    assert engine.counters["prompt_tokens"].exact
    prefill = engine.histograms["request_prefill_time_seconds"]
    assert (prefill.count_delta, prefill.mean) == (10, pytest.approx(0.25))
    assert engine.max_running == 4 and engine.max_kv_usage_perc == pytest.approx(1.0)
    assert engine.kv_pool_tokens == 16 * 62_388
    assert engine.families["num_requests_running"].coverage >= 0.8
    assert engine.cadence.ticks >= 9
    drained, _ = read_samples(tmp_path / "engine.jsonl", EngineSample)
    assert drained[-1].final and drained[-1].metrics is not None
    assert drained[-1].metrics.gauges["num_requests_running"] == 0  # it waited for the engine
    assert summary.gpu is not None and summary.gpu.worst_device == 1
    assert summary.host.lane_sources == ["process_tree_rss"]
    assert summary.host.families["lane_memory"].coverage >= 0.8
    assert summary.host.host_available_min_bytes is not None
    stalls = summary.host_stalls  # the monitor process watched the whole cell
    assert stalls is not None and stalls.watched and stalls.stopped
    files = ("scrape-first.txt", "scrape-last.txt", TELEMETRY_FILE, "gpu.jsonl", "host.jsonl")
    for name in (*files, "stalls.jsonl"):
        assert (tmp_path / name).exists(), name

    # The audit's recomputation from the files gives the very same summary.
    recomputed = summarize_folder(tmp_path, summary.window, summary.settings, vllm_aliases())
    assert recomputed == TelemetrySummary.read(tmp_path / TELEMETRY_FILE)


def test_an_attempt_folder_is_never_collected_into_twice(
    engine_server: MetricsServer, lane_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    with collectors_for(engine_server, lane_process.pid, tmp_path):
        time.sleep(0.15)
    with pytest.raises(FaceoffError, match="samples of two runs would mix"):
        collectors_for(engine_server, lane_process.pid, tmp_path).start()


def test_an_arm_without_gpu_ids_writes_no_gpu_file(
    engine_server: MetricsServer, lane_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    collectors = CellCollectors(
        metrics_url=engine_server.url,
        target=MemoryTarget(pid=lane_process.pid),
        gpu_ids=[],
        folder=tmp_path,
        settings=SETTINGS,
    )
    collectors.start()
    start = time.perf_counter_ns()
    time.sleep(0.3)
    collectors.stop()
    summary = collectors.summarize(CellWindow(start_ns=start, end_ns=time.perf_counter_ns()))
    assert summary.gpu is None and not (tmp_path / "gpu.jsonl").exists()


def test_the_scrape_timeout_must_be_shorter_than_the_period() -> None:
    with pytest.raises(ValueError, match="must be shorter than engine_period_s"):
        CollectorSettings(engine_period_s=0.5, engine_timeout_s=0.5)
    assert CollectorSettings(engine_period_s=0.25).scrape_timeout_s == pytest.approx(0.2)


SIM_SETTINGS = CollectorSettings(engine_period_s=0.25, memory_period_s=0.5, drain_timeout_s=3.0)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with running("tiny", time_scale=1.0) as server:
        yield server


def collectors(server: SimServer, folder: Path, settings: CollectorSettings = SIM_SETTINGS):  # type: ignore[no-untyped-def]
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
