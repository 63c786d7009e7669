"""The deployment files: prefect.yaml registered for real, compose and systemd checked."""

from __future__ import annotations

import configparser
import grp
import os
import pwd
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.cli.deploy._models import PrefectYamlModel
from prefect.client.orchestration import get_client

from flows.prefect.nightly import deployment_timezone
from tests.e2e.conftest import REPO

DEPLOY = REPO / "deploy"
PREFECT = str(Path(sys.executable).with_name("prefect"))


def load(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


def prefect_cli(api_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PREFECT_API_URL": api_url}
    return subprocess.run(
        [PREFECT, "--no-prompt", *args], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as a service manager stops a worker; then SIGKILL. Prefect's worker now and
    then idles on after the SIGINT it forwards itself, and its exit is not under test."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(60)


def test_prefect_yaml_is_what_prefect_itself_accepts() -> None:
    model = PrefectYamlModel.model_validate(load(DEPLOY / "prefect.yaml"))
    (nightly,) = model.deployments
    assert nightly.entrypoint == "flows/prefect/flow.py:campaign"
    assert nightly.parameters["dated"] is True
    assert nightly.parameters["pilot"] is True  # the scheduled night pilots its cells


@pytest.mark.prefect
def test_the_nightly_deployment_registers_with_its_schedule_and_concurrency(
    harness_api: str,
) -> None:
    pool = prefect_cli(harness_api, "work-pool", "create", "gpu-a", "--type", "process")
    assert pool.returncode == 0, pool.stdout + pool.stderr
    done = prefect_cli(
        harness_api, "deploy", "--all", "--prefect-file", str(DEPLOY / "prefect.yaml")
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("faceoff-campaign/nightly-glm53-gpu-a")
    (schedule,) = deployment.schedules
    assert schedule.active
    cron = schedule.schedule
    assert (cron.cron, cron.timezone) == ("30 1 * * *", "Europe/Berlin")  # type: ignore[union-attr]
    # dated: true names each night by its date in this timezone (tests/e2e/test_nightly.py)
    assert deployment_timezone(str(deployment.id)) == "Europe/Berlin"
    assert deployment.global_concurrency_limit is not None
    assert deployment.global_concurrency_limit.limit == 1
    assert deployment.concurrency_options is not None
    assert deployment.concurrency_options.collision_strategy == "CANCEL_NEW"
    assert deployment.work_pool_name == "gpu-a"
    assert deployment.entrypoint == "flows/prefect/flow.py:campaign"
    assert deployment.parameters["matrix"] == "matrix/examples/glm53-exl3-vs-nvfp4.toml"
    assert deployment.pull_steps == [
        {"prefect.deployments.steps.set_working_directory": {"directory": "/opt/faceoff"}}
    ]
    assert deployment.parameter_openapi_schema is not None
    # No ledger URL among the parameters: Prefect stores them, a password included.
    parameters = set(deployment.parameter_openapi_schema["properties"])
    assert parameters == {
        "matrix",
        "workdir",
        "dated",
        "aa",
        "pilot",
        "waivers",
        "checked",
        "locked",
    }
    assert deployment.parameters["pilot"] is True


def test_compose_runs_the_server_on_the_postgresql_that_also_holds_the_ledger() -> None:
    compose = load(DEPLOY / "compose.yaml")
    postgres, server = compose["services"]["postgres"], compose["services"]["prefect-server"]
    url = server["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert url.startswith("postgresql+asyncpg://prefect:") and "@postgres:5432/prefect" in url
    assert server["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert server["environment"]["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    init = "./postgres/10-faceoff-ledger.sh:/docker-entrypoint-initdb.d/10-faceoff-ledger.sh:ro"
    assert init in postgres["volumes"]
    script = (DEPLOY / "postgres" / "10-faceoff-ledger.sh").read_text()
    assert "CREATE DATABASE faceoff OWNER faceoff" in script
    assert os.access(DEPLOY / "postgres" / "10-faceoff-ledger.sh", os.X_OK)
    example = (DEPLOY / "compose.env.example").read_text()
    assert "POSTGRES_PASSWORD=\n" in example and "FACEOFF_DB_PASSWORD=\n" in example


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "systemd" / "faceoff-worker@.service")
    return parser


def test_the_worker_unit_runs_one_campaign_at_a_time_for_its_pool() -> None:
    service = unit()["Service"]
    assert service["ExecStart"].split() == [
        "/opt/faceoff/.venv/bin/prefect", "worker", "start", "--pool", "%i", "--type",
        "process", "--name", "%H-%i", "--limit", "1",
    ]  # fmt: skip
    assert service["KillMode"] == "process"  # a restored host-process incumbent outlives it
    assert service["EnvironmentFile"] == "/etc/faceoff/worker.env"
    env = (DEPLOY / "systemd" / "worker.env.example").read_text()
    assert "FACEOFF_DB_URL=postgresql://faceoff:" in env and "PREFECT_API_URL=" in env


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not here")
def test_systemd_accepts_the_worker_unit(tmp_path: Path) -> None:
    text = (DEPLOY / "systemd" / "faceoff-worker@.service").read_text()
    text = text.replace("/opt/faceoff/.venv/bin/prefect", PREFECT)  # an executable that exists
    path = tmp_path / "faceoff-worker@gpu-a.service"
    path.write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "faceoff-worker@gpu-a.service" not in done.stderr, done.stderr


def doc_command(prefix: str) -> list[str]:
    """deploy.md's shell line that starts with ``prefix``, as words."""
    text = (REPO / "docs" / "deploy.md").read_text()
    (line,) = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(prefix)]
    return line.split()


@pytest.mark.skipif(os.geteuid() != 0, reason="install -o needs root")
def test_the_documented_folders_are_all_owned_by_the_service_user(tmp_path: Path) -> None:
    """Step 1's `install -d` as written, under a temporary root and for an existing
    unprivileged user: every folder the worker writes (PREFECT_HOME, the workdir) and
    their parent /var/lib/faceoff are the user's, so it can create what it needs."""
    owner = pwd.getpwnam("nobody")
    names = {"-o": owner.pw_name, "-g": grp.getgrgid(owner.pw_gid).gr_name}
    words = doc_command("sudo install -d -o faceoff")[1:]  # without sudo: we are root
    command = []
    for flag, word in zip(["", *words], words, strict=False):
        named = names.get(flag, word)
        command.append(f"{tmp_path}{named}" if named.startswith("/") else named)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    env = dict(
        line.split("=", 1)
        for line in (DEPLOY / "systemd" / "worker.env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    for folder in (env["PREFECT_HOME"], env["FACEOFF_WORKDIR"], "/var/lib/faceoff"):
        assert (tmp_path / folder.lstrip("/")).stat().st_uid == owner.pw_uid, folder
