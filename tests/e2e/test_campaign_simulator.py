"""A whole campaign under the Prefect test harness: 2 simulator arms, 4 cell runs.

Real parts throughout: simulator processes on loopback, the client process, the
collectors, the guard, a SQLite ledger, the evidence bundle, the incumbent behind
a token-checking router that the flow drains and restoration readmits.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from evidence.audit.reverify import audit_bundle
from evidence.reviews.recording import ReviewRequest
from faceoff.formats.bundle.reviews import Decision
from faceoff.formats.fidelity_scores import FidelityScores
from faceoff.formats.receipt import verify_receipt
from flows.cli.review import record_review
from flows.prefect.flow_runner import run_campaign
from ledger.campaigns import cell_runs, require_campaign
from ledger.cells import request_rows
from ledger.db import open_ledger, resolve_url, session_scope
from tests.conftest import free_port
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.lanes.router_proxy import RouterProxy

TOKEN = "router-token-e2e-5e1"
TOKEN_ENV = "FACEOFF_E2E_ROUTER_TOKEN"
BUNDLE_FILES = ("MANIFEST.json", "comparison.json", "RESULT.md", "report.html", "SHA256SUMS")

# Quiet host: it asserts complete campaigns across a rerun and a resume, and an answer that a
# busy host delivers in one read blocks its cell (decode undefined).
pytestmark = [pytest.mark.prefect, pytest.mark.alone]


@pytest.fixture
def proxy() -> Iterator[RouterProxy]:
    router = RouterProxy(upstream="", token=TOKEN, port=free_port()).start()
    yield router
    router.stop()


def routed_matrix(tmp_path: Path, proxy: RouterProxy) -> Path:
    """Incumbent behind the router, one protected operator file."""
    protected = tmp_path / "routes.yaml"
    protected.write_text("llm.primary: 127.0.0.1\n")
    incumbent = arm("inc", "incumbent")
    proxy.upstream = f"http://127.0.0.1:{incumbent['port']}"
    incumbent["router"] = {
        "url": proxy.url,
        "token_env": TOKEN_ENV,
        "drain_url": proxy.admin("drain"),
        "readmit_url": proxy.admin("readmit"),
    }
    data = matrix("e2e-sim", [incumbent, arm("cand", "candidate")])
    return write_matrix(
        tmp_path, data | {"protected_files": [str(protected)], "fidelity": [FIDELITY]}
    )


# A fidelity cell beside the speed cells: both lanes serve the same simulated model.
CORPUS = Path(__file__).resolve().parents[2] / "matrix/examples/data/fidelity-corpus.txt"
FIDELITY = {
    "id": "fidelity-corpus",
    "corpus": {"file": str(CORPUS)},
    "input_tokens": 64,
    "windows": 6,
    "greedy_prompts": 2,
    "greedy_tokens": 8,
}


def test_a_two_arm_campaign_runs_end_to_end(
    prefect_harness: None,
    workdir: Path,
    tmp_path: Path,
    proxy: RouterProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    path = routed_matrix(tmp_path, proxy)

    result = run_campaign(path, workdir)

    assert result.complete and result.restored
    assert result.closure.sentence.startswith("complete: 4 accepted, 0 failed, 0 blocked")
    assert "inc versus cand" in result.card
    assert "| fidelity-corpus | cand vs inc" in result.card  # the same model: within the floor
    assert "indistinguishable (floor 0.0000 [0.0000, 0.0000])" in result.card
    scores = result.bundle / "fidelity" / "fidelity-corpus" / "cand" / "scores.json"
    scored_at = scores.stat().st_mtime_ns
    assert not (scores.parent / "windows").exists()  # scores.npz holds the kept windows now
    assert FidelityScores.read(scores).stored_against == "../inc"  # scored after the reference
    check_ledger(workdir)
    check_bundle(result.bundle)
    check_restoration(result.bundle, proxy)
    assert {"e2e-sim-dispositions", "e2e-sim-result-card"} <= _artifact_keys()

    # A reviewer asks for one cell run again: the next run makes attempt 2 of it alone.
    rerun = ReviewRequest("qa", Decision.RERUN_CELLS, "noisy neighbour", ("natural-600-c2/cand",))
    record_review(open_ledger(resolve_url(None, workdir)), "e2e-sim", rerun, now=utc_now)
    again = run_campaign(path, workdir)
    assert again.complete and again.restored and again.restoration is not None
    assert scores.stat().st_mtime_ns == scored_at  # a scored arm is not scored again
    assert attempts(workdir) == [
        ("natural-600-c1", "cand", 1),
        ("natural-600-c1", "inc", 1),
        ("natural-600-c2", "cand", 1),
        ("natural-600-c2", "cand", 2),
        ("natural-600-c2", "inc", 1),
    ]
    assert sorted(p.name for p in (result.bundle / "lanes" / "cand").iterdir()) == [
        "campaign-001",
        "campaign-002",
    ]
    assert [e for e, _ in proxy.events] == ["drain", "readmit", "drain", "readmit"]
    # The card no longer asks for the rerun; the review is marked superseded by attempt 2.
    assert "before deciding" not in again.card
    assert "Decision: pending human review (the rerun_cells recorded by qa was superseded" in (
        again.card
    )
    assert "Superseded by natural-600-c2/cand attempt 2. Every run it named was rerun" in (
        again.card
    )

    last = run_campaign(path, workdir)  # nothing left: no lane touched
    assert last.complete and last.restoration is None
    assert len(proxy.events) == 4


def utc_now() -> datetime:
    return datetime.now(UTC)


def attempts(workdir: Path) -> list[tuple[str, str, int]]:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, "e2e-sim"))
    return sorted((r.cell_id, r.arm, r.attempt) for r in runs)


def check_ledger(workdir: Path) -> None:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        row = require_campaign(session, "e2e-sim")
        runs = cell_runs(session, row)
        assert row.status == "complete" and (row.accepted, row.pending) == (4, 0)
        assert sorted((r.cell_id, r.arm, r.attempt, r.disposition) for r in runs) == [
            ("natural-600-c1", "cand", 1, "accepted"),
            ("natural-600-c1", "inc", 1, "accepted"),
            ("natural-600-c2", "cand", 1, "accepted"),
            ("natural-600-c2", "inc", 1, "accepted"),
        ]
        assert all(len(request_rows(session, r)) == 4 for r in runs)  # 4 scored, no cell warmups


def check_bundle(bundle: Path) -> None:
    for name in BUNDLE_FILES:
        assert (bundle / name).is_file(), name
    sums = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=bundle, check=False)
    assert sums.returncode == 0
    assert audit_bundle(bundle).ok
    for attempt in bundle.glob("cells/*/*/attempt-1"):
        names = {p.name for p in attempt.iterdir()}
        assert {"requests.json", "journal.jsonl", "engine.jsonl", "host.jsonl"} <= names
        assert {"cell.json", "telemetry.json", "verdict.json", "summary.json"} <= names
    warmup = bundle / "lanes" / "inc" / "campaign-001" / "warmup" / "journal.jsonl"
    assert '"phase":"warmup"' in warmup.read_text()
    assert (bundle / "handoffs" / "handoff-001.json").is_file()


def check_restoration(bundle: Path, proxy: RouterProxy) -> None:
    receipt = verify_receipt(bundle / "receipt.json")
    assert receipt.outcome == "restored" and receipt.protected_unchanged
    assert [c.absent for c in receipt.candidates] == [True]
    assert receipt.router is not None and receipt.router.readmitted_after_identity
    assert [e for e, _ in proxy.events] == ["drain", "readmit"]
    assert proxy.refused == 0


def _artifact_keys() -> set[str]:
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_="e2e-sim"))
        )
    return {a.key for a in found if a.key}
