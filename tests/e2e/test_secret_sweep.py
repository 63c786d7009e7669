"""Planted secrets, passed every way the matrix allows, appear in no file under the workdir.

A `faceoff run` as an operator runs it (its own Prefect server, whose home and database
sit under the workdir, logs sent to it): the incumbent behind a router whose bearer token
comes from the env var `router.token_env` names, and a lane secret from the operator's
env var `[arms.secrets]` names. Afterwards every file under the workdir (the bundle, the
SQLite ledger, lane logs, `.live/`, `.prefect/`) and the run's output are searched for
the secrets' bytes. The other ways a secret could enter a matrix are refused before
anything runs: env knobs with secret-looking names and flags that take a secret in
`engine_args` or `command` (tests/foundation/test_bad_input.py).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from faceoff.formats.receipt import verify_receipt
from lanes.leftovers import live_process_records
from tests.conftest import free_port
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.e2e.test_ephemeral_server import faceoff
from tests.lanes.router_proxy import RouterProxy

ROUTER_TOKEN_ENV, LANE_SECRET_ENV = "FACEOFF_SWEEP_ROUTER_TOKEN", "FACEOFF_SWEEP_HF_TOKEN"


@pytest.fixture
def secrets() -> dict[str, str]:
    return {env: f"planted-{uuid.uuid4().hex}" for env in (ROUTER_TOKEN_ENV, LANE_SECRET_ENV)}


@pytest.fixture
def proxy(secrets: dict[str, str]) -> Iterator[RouterProxy]:
    router = RouterProxy(upstream="", token=secrets[ROUTER_TOKEN_ENV], port=free_port()).start()
    yield router
    router.stop()


def test_planted_secrets_appear_in_no_file_under_the_workdir(
    workdir: Path, tmp_path: Path, proxy: RouterProxy, secrets: dict[str, str]
) -> None:
    incumbent = arm("inc", "incumbent", warmups=0, secrets={"HF_TOKEN": LANE_SECRET_ENV})
    proxy.upstream = f"http://127.0.0.1:{incumbent['port']}"
    incumbent["router"] = {
        "url": proxy.url,
        "token_env": ROUTER_TOKEN_ENV,
        "drain_url": proxy.admin("drain"),
        "readmit_url": proxy.admin("readmit"),
    }
    data = matrix("e2e-sweep", [incumbent, arm("cand", "candidate", warmups=0)])
    data["cells"] = data["cells"][:1]
    path, log = write_matrix(tmp_path, data), tmp_path / "run.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= secrets | {"PREFECT_LOGGING_TO_API_ENABLED": "true", "COLUMNS": "160"}

    run = faceoff(["run", str(path), "--workdir", str(workdir)], env, log)
    assert run.wait(600) in (0, 3), log.read_text()[-3000:]

    # The secrets were used: the router took its token, the restored lane holds its secret.
    receipt = verify_receipt(workdir / "e2e-sweep" / "receipt.json")
    assert receipt.router is not None and receipt.router.readmitted_after_identity
    assert proxy.refused == 0 and [e for e, _ in proxy.events] == ["drain", "readmit"]
    [(_, lane)] = live_process_records(workdir / "e2e-sweep", arms=["inc"], keep_restore=False)
    lane_env = Path(f"/proc/{lane.pid}/environ").read_bytes()
    assert f"HF_TOKEN={secrets[LANE_SECRET_ENV]}".encode() in lane_env.split(b"\0")

    files = [p for p in workdir.rglob("*") if p.is_file()]
    assert workdir / ".prefect" / "prefect.db" in files and workdir / "faceoff.db" in files
    assert any(".live" in p.parts for p in files)
    for secret in secrets.values():
        leaks = [str(p.relative_to(workdir)) for p in files if secret.encode() in p.read_bytes()]
        assert leaks == [], f"secret found in {leaks}"
        assert secret not in log.read_text()
