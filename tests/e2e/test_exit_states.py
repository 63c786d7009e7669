"""How a campaign run ends: the exit status and the Prefect flow run's state, restoration first.

A resume whose pending restoration fails, with no cell left to run, must not end as
a complete campaign: the incumbent is down. A campaign that closes partial ends in
a ``Failed`` state named ``Partial``: never a green ``Completed``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prefect.states import StateType

from faceoff.exits import Exit
from faceoff.formats.preflight import Waiver
from flows.prefect.flow import PARTIAL, campaign
from flows.prefect.flow_runner import exit_status, result_of
from ledger.campaigns import require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.restoration import begin_attempt, find_restoration
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.lanes.helpers import kill_recorded_processes

pytestmark = pytest.mark.prefect


@contextmanager
def port_held(port: int, timeout_s: float = 60.0) -> Iterator[None]:
    """A socket bound to the port (once the killed lane let go of it): a lane started
    there cannot listen."""
    deadline = time.monotonic() + timeout_s
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        while True:
            try:
                sock.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        sock.listen()
        yield


def test_a_resume_whose_pending_restoration_fails_exits_4_and_fails_the_flow_run(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    inc = arm("inc", "incumbent", warmups=0)
    data = matrix("e2e-unrestored", [inc, arm("cand", "candidate", warmups=0)])
    data["cells"] = data["cells"][:1]
    path = write_matrix(tmp_path, data)
    first = campaign(matrix=str(path), workdir=str(workdir), return_state=True)
    assert first.type is StateType.COMPLETED and result_of(first).restored
    # The incumbent goes down again in a restoration attempt killed midway (the ledger
    # says "restoring"), and its port is now taken: it cannot come back.
    kill_recorded_processes(workdir / "e2e-unrestored")
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        row = find_restoration(session, require_campaign(session, "e2e-unrestored"))
        assert row is not None
        begin_attempt(session, row)

    held = Waiver(check="ports", reason="the test holds the incumbent's port on purpose")
    with port_held(inc["port"]):
        second = campaign(matrix=str(path), workdir=str(workdir), waivers=[held], return_state=True)

    result = result_of(second)
    assert result.closure.pending == 0  # every cell run had its disposition: none ran
    assert [r.state for r in result.restorations] == ["failed"]
    assert not result.restored and exit_status(result) == Exit.NOT_RESTORED
    assert second.type is StateType.FAILED
    assert "the incumbent is not restored" in (second.message or "")


def test_a_partial_campaign_ends_in_a_failed_state_named_partial(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    refuse = {"faults": {"refuse_above_tokens": 100}}  # every cell of the candidate fails
    arms = [
        arm("inc", "incumbent", warmups=0),
        arm("cand", "candidate", warmups=0, simulator=refuse),
    ]
    data = matrix("e2e-partial", arms)
    data["cells"] = data["cells"][:1]
    path = write_matrix(tmp_path, data)

    state = campaign(matrix=str(path), workdir=str(workdir), return_state=True)

    result = result_of(state)
    assert result.closure.status.value == "closed_partial" and result.restored
    assert exit_status(result) == Exit.PARTIAL
    assert state.type is StateType.FAILED and state.name == PARTIAL
    assert state.message == result.closure.sentence
