"""End-to-end fixtures: a workdir whose lanes are all gone after the test, the harness URL."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.lanes.helpers import kill_recorded_processes

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """The campaign workdir; every host lane recorded under it is killed afterwards
    (a restored incumbent keeps serving after the run, as it must in production)."""
    runs = tmp_path / "runs"
    yield runs
    for campaign_dir in runs.glob("*/"):
        kill_recorded_processes(campaign_dir)


@pytest.fixture(scope="session")
def harness_api(prefect_harness: None) -> str:
    """The harness server's API URL, for `faceoff run` subprocesses (no ephemeral server)."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    assert url, "the Prefect test harness set no API URL"
    return str(url)


def faceoff_run(
    matrix: Path, workdir: Path, api_url: str, *, log: Path, options: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """`faceoff run` as its own process, against the harness server; ``options`` added."""
    env = {**os.environ, "PREFECT_API_URL": api_url, "COLUMNS": "160"}
    command = [sys.executable, "-m", "flows", "run", str(matrix), "--workdir", str(workdir)]
    with log.open("ab") as out:
        return subprocess.Popen(
            [*command, *options],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def faceoff(argv: list[str], api_url: str) -> subprocess.CompletedProcess[str]:
    """`faceoff ARGV` as its own process, against the harness server."""
    return subprocess.run(
        [sys.executable, "-m", "flows", *argv],
        cwd=REPO,
        env={**os.environ, "PREFECT_API_URL": api_url},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
