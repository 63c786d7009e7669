"""`faceoff run` killed mid-cell (SIGKILL) and resumed; terminated mid-cell (SIGTERM).

Both run the real command as a subprocess against the session's Prefect harness
server. The first cell runs slowly enough (real-time simulator, C1) that the
signal lands while requests are in flight.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.receipt import verify_receipt
from flows.campaign.signals import EXIT_TERMINATED, TERMINATED_MESSAGE
from ledger.campaigns import cell_runs, require_campaign
from ledger.cells import request_rows
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.restoration import RESTORED, find_restoration
from tests.e2e.conftest import faceoff_run
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

pytestmark = pytest.mark.prefect

SLOW: dict[str, Any] = {
    "simulator": {"time_scale": 1.0}
}  # ~0.3 s per request: a signal lands mid-cell
FIRST = Path("cells/natural-600-c1/inc")


def slow_matrix(folder: Path, name: str) -> Path:
    data = matrix(name, [arm("inc", "incumbent", **SLOW), arm("cand", "candidate")])
    data["cells"][0] |= {"requests": 6, "sampling": {"max_tokens": 64, "ignore_eos": True}}
    return write_matrix(folder, data)


def start_mid_cell(
    path: Path, workdir: Path, api_url: str, log: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    """`faceoff run` of the matrix, returned with the first cell's journal once that has
    two requests (or the run ended)."""
    journal = workdir / path.stem / FIRST / "attempt-1" / "journal.jsonl"
    run = faceoff_run(path, workdir, api_url, log=log)
    wait_for(lambda: len(lines(journal)) >= 2 or run.poll() is not None, "two journal lines")
    return run, journal


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def test_sigkill_mid_cell_then_resume_keeps_every_request_and_adds_attempt_2(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    path, log = slow_matrix(tmp_path, "e2e-kill"), tmp_path / "run.log"
    first, journal = start_mid_cell(path, workdir, harness_api, log)
    first.send_signal(signal.SIGKILL)
    assert first.wait(30) == -signal.SIGKILL, log.read_text()[-3000:]
    # The client learns of the kill from the kernel and journals the rest as cancelled.
    wait_for(lambda: len(lines(journal)) == 6, "the client to journal every planned request")
    kept = journal.read_bytes()
    done_before = [x["index"] for x in lines(journal) if x["status"] == "ok"]
    assert 2 <= len(done_before) < 6

    second = faceoff_run(path, workdir, harness_api, log=log)
    assert second.wait(300) == 0, log.read_text()[-3000:]

    assert journal.read_bytes() == kept  # nothing rewritten, nothing lost
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        row = require_campaign(session, "e2e-kill")
        assert row.status == "complete"
        runs = {(r.cell_id, r.arm, r.attempt): r for r in cell_runs(session, row)}
        interrupted = runs[("natural-600-c1", "inc", 1)]
        assert interrupted.interrupted and interrupted.disposition == "pending"
        assert runs[("natural-600-c1", "inc", 2)].disposition == "accepted"
        assert len(runs) == 5  # attempt 2 of the killed cell, attempt 1 of the other three
        indexed = request_rows(session, interrupted)
        assert [r.journal_line for r in indexed] == list(range(1, 7))
        assert sorted(r.request_index for r in indexed if r.status == "ok") == sorted(done_before)
        again = request_rows(session, runs[("natural-600-c1", "inc", 2)])
        assert sorted(r.request_index for r in again) == list(range(6))
        restoration = find_restoration(session, row)
        assert restoration is not None and restoration.state == RESTORED
    second_journal = journal.parent.parent / "attempt-2" / "journal.jsonl"
    assert [x["attempt"] for x in lines(second_journal)] == [2] * 6
    campaign_dir = workdir / "e2e-kill"
    # The resume restored the incumbent first (kept aside), then again at its end.
    assert verify_receipt(campaign_dir / "receipt.superseded-1.json").outcome == "restored"
    assert verify_receipt(campaign_dir / "receipt.json").outcome == "restored"
    assert audit_bundle(campaign_dir).ok  # the interrupted attempt's folder included


def test_sigterm_mid_cell_restores_and_writes_the_receipt_before_exit(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    path, log = slow_matrix(tmp_path, "e2e-term"), tmp_path / "run.log"
    run, journal = start_mid_cell(path, workdir, harness_api, log)
    run.send_signal(signal.SIGTERM)
    assert run.wait(120) == EXIT_TERMINATED, log.read_text()[-3000:]

    campaign_dir = workdir / "e2e-term"
    receipt = verify_receipt(campaign_dir / "receipt.json")
    assert receipt.outcome == "restored" and all(c.absent for c in receipt.candidates)
    assert TERMINATED_MESSAGE in log.read_text()
    assert len(lines(journal)) == 6  # in-flight and unsent requests journaled as cancelled
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        row = require_campaign(session, "e2e-term")
        assert row.status == "open"
        (attempt,) = cell_runs(session, row)
        assert attempt.interrupted and attempt.disposition == "pending"
        assert len(request_rows(session, attempt)) == 6
        restoration = find_restoration(session, row)
        assert restoration is not None and restoration.state == RESTORED
        assert restoration.receipt_sha256 == receipt.receipt_sha256
