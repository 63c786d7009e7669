"""Fixtures of the collectors tests: vLLM's real exposition text and a live endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.collectors.metrics_server import MetricsServer

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def vllm_text() -> str:
    """A full /metrics scrape captured from a real vLLM 0.32.0 server."""
    return (DATA / "vllm-0.32-metrics.txt").read_text()


@pytest.fixture
def metrics_server(vllm_text: str) -> Iterator[MetricsServer]:
    server = MetricsServer(lambda: vllm_text).start()
    yield server
    server.stop()
