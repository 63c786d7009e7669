"""Real-engine fixtures: the vLLM CPU build (required when FACEOFF_REQUIRE_VLLM=1) and its model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import missing_service
from tests.lanes.helpers import kill_recorded_processes
from tests.shared_once import made_once
from tests.vllm import engine


@pytest.fixture(scope="session")
def vllm_engine() -> Path:
    """The vLLM venv's python, or a skip (a failure in CI) saying why it cannot run. Where it
    is required (CI), a missing engine is installed first, or waited for while CI installs it."""
    why = engine.unavailable()
    if why is not None and os.environ.get("FACEOFF_REQUIRE_VLLM") == "1":
        why = engine.install() or engine.unavailable()
    if why is not None:
        missing_service("vLLM CPU build", "FACEOFF_REQUIRE_VLLM", why)
    return engine.python()


@pytest.fixture(scope="session")
def tiny_model(vllm_engine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per run: the parallel pass's untimed tests share it across workers."""

    def build(folder: Path) -> Path:
        folder.mkdir(parents=True)
        return engine.build_model(folder / "model")

    return made_once(tmp_path_factory, "tiny-llama", build)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """The campaign workdir; every engine recorded under it is killed afterwards (a restored
    incumbent keeps serving after a campaign, as it must in production)."""
    runs = tmp_path / "runs"
    yield runs
    for campaign_dir in runs.glob("*/"):
        kill_recorded_processes(campaign_dir)
