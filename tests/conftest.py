"""Session-wide test services: Docker, PostgreSQL, the Prefect harness.

A test that needs a real service asks for its fixture. Where the service is
missing the test skips, unless the matching FACEOFF_REQUIRE_* variable is set
(as `.ci/run` does), in which case it fails: CI never hides a missing service.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import NoReturn

import pytest

from tests.suite_report import pytest_terminal_summary  # noqa: F401  (a hook: where time went)

REPO = Path(__file__).resolve().parents[1]

# Prefect reads its settings at import: give the test session its own home, offline.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="faceoff-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")


def missing_service(what: str, env: str, why: str) -> NoReturn:
    """Skip, or fail when the environment says the service is required."""
    if os.environ.get(env) == "1":
        pytest.fail(f"{what} is required ({env}=1) but unavailable: {why}")
    pytest.skip(f"{what} unavailable: {why}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def docker_client():  # type: ignore[no-untyped-def]
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:
        missing_service("Docker daemon", "FACEOFF_REQUIRE_DOCKER", str(exc))
    yield client
    client.close()


@pytest.fixture(scope="session")
def sim_image(docker_client) -> str:  # type: ignore[no-untyped-def]
    """The simulator lane image as repo@sha256:…, built offline if CI did not already."""
    ref = os.environ.get("FACEOFF_SIM_IMAGE")
    if ref:
        return ref
    try:
        out = subprocess.run(
            ["bash", str(REPO / "deploy/images/sim/build.sh")],
            check=True,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        missing_service("simulator image build", "FACEOFF_REQUIRE_DOCKER", detail[-2000:])
    ref = out.stdout.strip().splitlines()[-1]
    os.environ["FACEOFF_SIM_IMAGE"] = ref
    return ref


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The test server's database, one per xdist worker: workers that migrate and fill a
    ledger at the same time never share one."""
    url = os.environ.get("FACEOFF_TEST_PG_URL")
    if not url:
        missing_service("PostgreSQL", "FACEOFF_REQUIRE_POSTGRES", "FACEOFF_TEST_PG_URL is not set")
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        missing_service("PostgreSQL", "FACEOFF_REQUIRE_POSTGRES", str(exc))
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        yield url
        return
    from tests.scratch_db import scratch_database

    with scratch_database(url, prefix=f"faceoff_test_{worker}") as own:
        yield own


@pytest.fixture
def scratch_pg(postgres_url: str) -> Iterator[Callable[[], str]]:
    """Makes databases of their own on the test server, each dropped afterwards: a ledger
    test that migrates or fills one never touches the shared test database."""
    from tests.scratch_db import scratch_database

    with ExitStack() as made:
        yield lambda: made.enter_context(scratch_database(postgres_url))


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One ephemeral Prefect server for the whole session (it takes ~15 s to start)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: tests/suite.sh's passes select on it
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-engine tier pins its engine to one core and needs the other quiet: every test
    of it that times its engine runs in the `alone` pass."""
    for item in items:
        real = item.get_closest_marker("vllm") or item.get_closest_marker("vllm_image")
        if real and not item.get_closest_marker("engine_untimed"):
            item.add_marker(pytest.mark.alone)
