"""Several hosts, one view: two Prefect workers on two work pools, one Prefect server, one
PostgreSQL ledger.

Each "host" is a `prefect worker` subprocess on its own pool with its own host name
(``FACEOFF_HOST``), workdir and deployment (`prefect deploy`, as deploy/prefect.yaml does
it). Both run a small simulator campaign at once, migrating the fresh ledger together;
then `faceoff status --all-hosts` from either host shows both campaigns, each with its
host, and plain `faceoff status` shows only the host's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun

from flows.prefect.flow import PARTIAL
from tests.e2e.conftest import REPO
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.e2e.test_deploy import PREFECT, prefect_cli, stop_worker
from tests.foundation.cli import faceoff
from tests.lanes.helpers import kill_recorded_processes

pytestmark = [pytest.mark.prefect, pytest.mark.postgres]

HOSTS = ("host-a", "host-b")
CLOSED_STATES = ("Completed", PARTIAL)
# Two campaigns at once on a loaded two-core host, with a Prefect server and two workers.
RUN_DEADLINE_S = 720.0


def host_matrix(folder: Path, host: str) -> Path:
    """One cell on two simulator arms, on ports of its own."""
    data = matrix(f"hosts-{host}", [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["cells"] = data["cells"][:1]
    return write_matrix(folder, data)


def deployment_file(tmp_path: Path, matrices: dict[str, Path]) -> Path:
    """One deployment per host, each on the host's pool, as deploy/prefect.yaml has them."""
    spec = {
        "name": "faceoff-e2e-hosts",
        "pull": [{"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}],
        "deployments": [
            {
                "name": f"nightly-{host}",
                "entrypoint": "flows/prefect/flow.py:campaign",
                "parameters": {"matrix": str(path), "workdir": str(tmp_path / host / "runs")},
                "work_pool": {"name": f"pool-{host}"},
            }
            for host, path in matrices.items()
        ],
    }
    path = tmp_path / "prefect.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@contextmanager
def worker(host: str, api_url: str, ledger_url: str, log: Path) -> Iterator[None]:
    """A process worker for the host's pool: the host's name and the shared ledger in its
    environment, which every flow run it starts inherits."""
    env = {
        **os.environ,
        "PREFECT_API_URL": api_url,
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "FACEOFF_DB_URL": ledger_url,
        "FACEOFF_HOST": host,
    }
    command = [PREFECT, "worker", "start", "--pool", f"pool-{host}", "--type", "process"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--name", f"worker-{host}", "--limit", "1"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield
    finally:
        stop_worker(process)


def wait_until(check: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(1.0)


def status(ledger_url: str, host: str, *args: str) -> dict[str, Any]:
    done = faceoff("status", "--db", ledger_url, "--json", *args, env={"FACEOFF_HOST": host})
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.timeout(1200)
def test_two_hosts_on_two_pools_share_one_ledger_and_status_shows_both(
    harness_api: str, scratch_pg: Callable[[], str], tmp_path: Path
) -> None:
    ledger_url = scratch_pg()
    matrices = {host: host_matrix(tmp_path, host) for host in HOSTS}
    for host in HOSTS:
        pool = prefect_cli(harness_api, "work-pool", "create", f"pool-{host}", "--type", "process")
        assert pool.returncode == 0, pool.stdout + pool.stderr
    spec = deployment_file(tmp_path, matrices)
    done = prefect_cli(harness_api, "deploy", "--all", "--prefect-file", str(spec))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    logs = {host: tmp_path / f"worker-{host}.log" for host in HOSTS}
    runs: dict[str, FlowRun] = {}
    try:
        with ExitStack() as workers, get_client(sync_client=True) as client:
            for host in HOSTS:
                workers.enter_context(worker(host, harness_api, ledger_url, logs[host]))
            for host in HOSTS:
                deployment = client.read_deployment_by_name(f"faceoff-campaign/nightly-{host}")
                runs[host] = client.create_flow_run_from_deployment(deployment.id)

            def finished() -> bool:
                states = [client.read_flow_run(r.id).state for r in runs.values()]
                return all(s is not None and s.is_final() for s in states)

            try:
                wait_until(finished, "both hosts' campaigns to end", RUN_DEADLINE_S)
            except AssertionError:
                said = "\n".join(f"{h}: {p.read_text()[-3000:]}" for h, p in logs.items())
                raise AssertionError(said) from None
            for host, run in runs.items():
                state = client.read_flow_run(run.id).state
                # Complete, or closed partial where a guard judged the loaded host harshly:
                # either way the campaign ran on its host and closed.
                assert state is not None and state.name in CLOSED_STATES, (
                    f"{host}: {state}\n{logs[host].read_text()[-3000:]}"
                )
    finally:
        for host in HOSTS:
            for campaign_dir in (tmp_path / host / "runs").glob("*/"):
                kill_recorded_processes(campaign_dir)

    for viewer in HOSTS:
        every = status(ledger_url, viewer, "--all-hosts")
        assert every["all_hosts"] is True
        shown = {c["name"]: c for c in every["campaigns"]}
        assert {name: c["host"] for name, c in shown.items()} == {
            f"hosts-{host}": host for host in HOSTS
        }
        for host in HOSTS:
            campaign = shown[f"hosts-{host}"]
            assert campaign["status"] in ("complete", "closed_partial"), campaign
            evidence = tmp_path / host / "runs" / f"hosts-{host}"
            assert campaign["evidence_dir"] == str(evidence.resolve())
        own = status(ledger_url, viewer)
        assert own["all_hosts"] is False
        assert [c["name"] for c in own["campaigns"]] == [f"hosts-{viewer}"]

    table = faceoff("status", "--db", ledger_url, "--all-hosts", env={"FACEOFF_HOST": "host-a"})
    assert table.returncode == 0, table.stderr
    assert "campaigns of every host" in table.stdout
    for host in HOSTS:
        assert f"hosts-{host}" in table.stdout and host in table.stdout
