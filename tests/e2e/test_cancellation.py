"""Cancelling a scheduled campaign from Prefect: the worker's SIGTERM, then restoration.

The deployment path for real: a process work pool, `prefect deploy` of the flow, a
`prefect worker` subprocess that starts the flow run as its own child process, and a
cancellation set through the API while a cell's requests are in flight. The flow's
process must stop its client and lanes, restore the incumbent and write the receipt
before it exits; Prefect then shows the run as cancelled.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.states import Cancelling

from faceoff.formats.receipt import verify_receipt
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.conftest import REPO
from tests.e2e.test_deploy import PREFECT, prefect_cli, stop_worker
from tests.e2e.test_interruptions import FIRST, lines, slow_matrix, wait_for

pytestmark = pytest.mark.prefect

POOL = "e2e-cancel"


def deployment_file(tmp_path: Path, matrix: Path, workdir: Path) -> Path:
    spec = {
        "name": "faceoff-e2e",
        "pull": [{"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}],
        "deployments": [
            {
                "name": "cancel-me",
                "entrypoint": "flows/prefect/flow.py:campaign",
                "parameters": {"matrix": str(matrix), "workdir": str(workdir)},
                "work_pool": {"name": POOL},
            }
        ],
    }
    path = tmp_path / "prefect.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_prefect_cancellation_mid_cell_restores_the_incumbent_before_exit(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    matrix = slow_matrix(tmp_path, "e2e-cancel")
    assert (
        prefect_cli(harness_api, "work-pool", "create", POOL, "--type", "process").returncode == 0
    )
    done = prefect_cli(
        harness_api,
        "deploy",
        "--all",
        "--prefect-file",
        str(deployment_file(tmp_path, matrix, workdir)),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    env = {**os.environ, "PREFECT_API_URL": harness_api, "PREFECT_WORKER_QUERY_SECONDS": "1"}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [PREFECT, "worker", "start", "--pool", POOL, "--type", "process", "--limit", "1"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        with get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name("faceoff-campaign/cancel-me")
            run = client.create_flow_run_from_deployment(deployment.id)
            journal = workdir / "e2e-cancel" / FIRST / "attempt-1" / "journal.jsonl"
            wait_for(lambda: len(lines(journal)) >= 2, "two journal lines", timeout_s=180)
            client.set_flow_run_state(run.id, Cancelling())
            wait_for(
                lambda: client.read_flow_run(run.id).state_type == StateType.CANCELLED,
                "the flow run to be cancelled",
            )
    finally:
        stop_worker(worker)

    campaign_dir = workdir / "e2e-cancel"
    receipt = verify_receipt(campaign_dir / "receipt.json")
    assert receipt.outcome == "restored", log.read_text()[-3000:]
    assert len(lines(journal)) == 6
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        (attempt,) = cell_runs(session, require_campaign(session, "e2e-cancel"))
        assert attempt.interrupted
