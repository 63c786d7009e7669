"""SIGKILL the orchestrator mid-campaign, then `faceoff restore` brings the incumbent back."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker.types import Mount as DockerMount
from sqlmodel import select

from faceoff.formats.receipt import Receipt, verify_receipt
from lanes.commands import container_command
from lanes.http import UrllibHttp
from lanes.leftovers import campaign_containers
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.tables import LaneRunRow, RestorationRow
from matrix.arm import Arm
from tests.lanes.helpers import (
    REPO,
    checkpoint,
    docker_simulator_arm,
    remove_campaign_containers,
    wait_for,
)
from tests.lanes.router_proxy import RouterProxy
from tests.restore.campaign import TOKEN, TOKEN_ENV, matrix, router

pytestmark = pytest.mark.docker

HF_SECRET = "hf_restore_secret_93b1"


def faceoff(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture
def campaign(docker_client: Any) -> Iterator[str]:
    name = f"kill-{uuid.uuid4().hex[:8]}"
    yield name
    remove_campaign_containers(docker_client, name)
    for container in docker_client.containers.list(
        all=True, filters={"label": f"faceoff.test={name}"}
    ):
        container.remove(force=True)


def start_production(client: Any, incumbent: Arm, campaign: str) -> Any:
    """The operator's incumbent as it ran before the campaign: same digest, not faceoff's."""
    mounts = [DockerMount(target=m.target, source=m.source, type="bind", read_only=True)
              for m in incumbent.mounts]  # fmt: skip
    container = client.containers.run(
        incumbent.image, command=container_command(incumbent), detach=True,
        network_mode="host", mounts=mounts, labels={"faceoff.test": campaign},
    )  # fmt: skip
    health = f"http://{incumbent.host}:{incumbent.port}/health"
    wait_for(lambda: UrllibHttp().get(health, timeout=2).ok, "the production incumbent")
    return container


def crash_campaign(workdir: Path, campaign: str, production: Any, env: dict[str, str]) -> None:
    """Run the orchestrator until its candidate is up, edit a protected file, SIGKILL it."""
    ready = workdir / "orchestrator.ready"
    log_path = workdir / "orchestrator.log"
    with log_path.open("w") as log:
        orchestrator = subprocess.Popen(
            [sys.executable, "-m", "tests.restore.orchestrator", "--workdir", str(workdir),
             "--campaign", campaign, "--incumbent-container", production.id,
             "--ready-file", str(ready)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_for(lambda: ready.exists() or orchestrator.poll() is not None, "the orchestrator")
            assert ready.exists(), log_path.read_text()
            assert ready.read_text() == "identity ok\n"
            routes = workdir / "etc" / "routes.yaml"
            routes.write_text("llm.primary: 127.0.0.1 (edited during the campaign)\n")
            orchestrator.send_signal(signal.SIGKILL)
            assert orchestrator.wait(30) == -signal.SIGKILL
        finally:
            with contextlib.suppress(ProcessLookupError):
                orchestrator.kill()


def assert_restored(client: Any, campaign: str, receipt: Receipt, sim_image: str) -> None:
    container = client.containers.get(receipt.container_id)
    running_image = client.images.get(container.attrs["Image"]).attrs["RepoDigests"]
    assert container.status == "running" and sim_image in running_image
    assert receipt.running_image == receipt.image == sim_image
    assert container.labels["faceoff.purpose"] == "restore"
    assert campaign_containers(client, campaign, arms=["cand"], keep_restore=False) == []
    assert receipt.candidates[0].absent and receipt.candidates[0].removed
    assert receipt.smoke is not None and receipt.smoke.line == "lane smoke 2/2"
    assert receipt.json_smoke is not None and receipt.json_smoke.line == "lane json smoke 2/2"
    assert receipt.router is not None and receipt.router.readmitted_after_identity
    assert receipt.router.smoke is not None and receipt.router.smoke.line == "router smoke 2/2"
    changes = {Path(c.path).name: c.change for c in receipt.protected_files}
    assert changes == {"routes.yaml": "modified", "llm-primary.service": "unchanged"}


def assert_ledger(workdir: Path, receipt: Receipt) -> None:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        [row] = session.exec(select(RestorationRow)).all()
        assert (row.state, row.attempts, row.receipt_sha256) == (
            "restored", 1, receipt.receipt_sha256,
        )  # fmt: skip
        runs = {r.purpose: r for r in session.exec(select(LaneRunRow)).all()}
        assert runs["campaign"].stopped_at is not None  # the removed candidate's run is closed
        assert runs["restore"].container_id == receipt.container_id
    engine.dispose()


def test_faceoff_restore_after_sigkill(
    docker_client: Any, sim_image: str, tmp_path: Path, campaign: str, proxy: RouterProxy
) -> None:
    model = checkpoint(tmp_path / "weights")
    routes = tmp_path / "etc" / "routes.yaml"
    unit = tmp_path / "etc" / "llm-primary.service"
    routes.parent.mkdir()
    routes.write_text("llm.primary: 127.0.0.1\n")
    unit.write_text("[Service]\nExecStart=docker start llm-primary\n")
    incumbent = docker_simulator_arm(
        sim_image, model, name="inc", router=router(proxy.url, proxy.admin_base)
    )
    candidate = docker_simulator_arm(sim_image, model, name="cand", role="candidate")
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    campaign_dir = tmp_path / campaign
    matrix(campaign, arms, [str(routes), str(unit)]).write(campaign_dir / "matrix.frozen.json")
    production = start_production(docker_client, incumbent, campaign)
    proxy.upstream = f"http://{incumbent.host}:{incumbent.port}"
    env = {**os.environ, TOKEN_ENV: TOKEN, "OP_HF_TOKEN": HF_SECRET, "COLUMNS": "200"}

    crash_campaign(tmp_path, campaign, production, env)
    production.reload()
    assert production.status == "exited" and proxy.drained
    [left] = campaign_containers(docker_client, campaign, arms=["cand"])
    assert left.status == "running"  # the crash left the candidate behind

    first = faceoff("restore", "--workdir", str(tmp_path), env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"campaign {campaign}: incumbent restored, but protected files changed" in first.stdout
    receipt = verify_receipt(campaign_dir / "receipt.json")
    assert_restored(docker_client, campaign, receipt, sim_image)
    assert not proxy.drained
    assert HF_SECRET not in "".join(p.read_text() for p in campaign_dir.rglob("*.json"))
    assert_ledger(tmp_path, receipt)

    written = (campaign_dir / "receipt.json").read_bytes()
    second = faceoff("restore", "--campaign", campaign, "--workdir", str(tmp_path), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already restored" in second.stdout and "nothing changed" in second.stdout
    assert (campaign_dir / "receipt.json").read_bytes() == written
    remaining = campaign_containers(docker_client, campaign, keep_restore=False)
    assert [c.id for c in remaining] == [receipt.container_id]
    assert remaining[0].status == "running"
