"""The facade around a cell: real HTTP, a real process lane, a fake device set for NVML."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from collectors.aliases import vllm_aliases
from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from collectors.settings import CollectorSettings
from collectors.telemetry import TELEMETRY_FILE, TelemetrySummary, read_samples, summarize_folder
from faceoff.errors import FaceoffError
from faceoff.formats.collector_samples import EngineSample
from faceoff.formats.stalls import CellWindow
from tests.collectors.metrics_server import MetricsServer
from tests.collectors.test_gpu import FakeDevice, FakeNvml

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
