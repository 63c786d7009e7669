"""Probe verdicts and the receipt's self-hash, outcome and problems."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.protected import FileHash, ProtectedCheck
from faceoff.formats.receipt import (
    CandidateAbsence,
    ProbeSummary,
    Receipt,
    RouterAction,
    RouterOutcome,
    verify_receipt,
)
from lanes.http import HttpReply
from lanes.probes import judge_probe

WHEN = datetime(2026, 10, 17, 13, 3, 57, tzinfo=UTC)


def reply(content: str | None, status: int = 200, reasoning: str | None = None) -> HttpReply:
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    body = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
    return HttpReply(status, body, 0.01)


def test_smoke_needs_text() -> None:
    assert judge_probe("smoke", 0, reply("Online.")).ok
    thinking = judge_probe("smoke", 0, reply("", reasoning="Let me think"))
    assert thinking.ok and "reasoning" in thinking.detail
    empty = judge_probe("smoke", 1, reply(""))
    assert not empty.ok and empty.detail == "the completion returned no text"
    refused = judge_probe("smoke", 0, HttpReply(None, b"", 0.0, error="Connection refused"))
    assert not refused.ok and "Connection refused" in refused.detail
    assert "HTTP 503" in judge_probe("smoke", 0, HttpReply(503, b"drained", 0.0)).detail
    assert "not an OpenAI" in judge_probe("smoke", 0, HttpReply(200, b"{}", 0.0)).detail


def test_json_smoke_needs_an_object_that_parses() -> None:
    assert judge_probe("json_smoke", 0, reply('{"status": "ok"}')).ok
    assert "not JSON" in judge_probe("json_smoke", 0, reply("status: ok")).detail
    assert "not an object" in judge_probe("json_smoke", 0, reply("[1, 2]")).detail
    assert not judge_probe("json_smoke", 0, reply("", reasoning='{"a": 1}')).ok


def summary(kind: str, passed: int, via: str = "lane") -> ProbeSummary:
    results = [judge_probe(kind, i, reply('{"s": 1}' if i < passed else "")) for i in range(2)]  # type: ignore[arg-type]
    return ProbeSummary(
        kind=kind,
        via=via,
        url="u",
        model="m",
        passed=passed,
        total=2,
        results=results,  # type: ignore[arg-type]
    )


def receipt(**changes: object) -> Receipt:
    same = FileHash(path="/etc/routes.yaml", state="present", sha256="a" * 64, size=3)
    unchanged = ProtectedCheck(path=same.path, before=same, after=same, change="unchanged")
    base = Receipt(
        campaign="c1",
        matrix_id="f" * 64,
        attempt=1,
        incumbent_arm="inc",
        lane_kind="docker",
        lane_run="lanes/inc/restore-001",
        image="r@sha256:" + "a" * 64,
        running_image="r@sha256:" + "a" * 64,
        container_id="abc123def4567890",
        pid=4242,
        identity_ok=True,
        identity_reason=None,
        identity_ready_at=WHEN,
        candidates=[CandidateAbsence(arm="cand", absent=True, detail="gone")],
        smoke=summary("smoke", 2),
        json_smoke=summary("json_smoke", 2),
        router=RouterOutcome(
            readmit=RouterAction(action="readmit", via="http", ok=True, at=WHEN, detail="HTTP 200"),
            readmitted_after_identity=True,
            smoke=summary("smoke", 2, "router"),
            json_smoke=summary("json_smoke", 2, "router"),
        ),
        protected_files=[unchanged],
        started_at=WHEN,
        completed_at=WHEN,
    )
    return base.model_copy(update=changes).judged().sealed()


def test_a_clean_restoration_is_restored_and_verifies(tmp_path: Path) -> None:
    sealed = receipt()
    assert sealed.outcome == "restored" and sealed.problems == [] and sealed.protected_unchanged
    path = sealed.write(tmp_path / "receipt.json")
    assert verify_receipt(path) == sealed
    assert "router smoke 2/2" in sealed.summary() and "lane json smoke 2/2" in sealed.summary()


def test_an_edited_receipt_no_longer_verifies(tmp_path: Path) -> None:
    path = receipt().write(tmp_path / "receipt.json")
    data = json.loads(path.read_text())
    data["smoke"]["passed"] = 1
    path.write_text(json.dumps(data))
    with pytest.raises(FaceoffError, match="hashes to"):
        verify_receipt(path)


def test_a_forged_outcome_is_caught_even_when_rehashed(tmp_path: Path) -> None:
    failed = receipt(smoke=summary("smoke", 1))
    assert failed.outcome == "failed"
    forged = failed.model_copy(update={"outcome": "restored", "problems": []}).sealed()
    with pytest.raises(FaceoffError, match="do not follow"):
        verify_receipt(forged.write(tmp_path / "receipt.json"))


def test_problems_name_what_failed() -> None:
    bad = receipt(
        smoke=summary("smoke", 1),
        candidates=[CandidateAbsence(arm="cand", absent=False, detail="still present: pid 7")],
    )
    assert bad.outcome == "failed"
    assert "candidate cand is not absent: still present: pid 7" in bad.problems
    assert any(p.startswith("lane smoke 1/2: probe 1 failed") for p in bad.problems)


def test_a_changed_protected_file_restores_with_changes() -> None:
    before = FileHash(path="/etc/routes.yaml", state="present", sha256="a" * 64, size=3)
    after = before.model_copy(update={"sha256": "b" * 64})
    check = ProtectedCheck(path=before.path, before=before, after=after, change="modified")
    changed = receipt(protected_files=[check])
    assert changed.outcome == "restored_with_changes" and not changed.protected_unchanged
    assert changed.problems == [
        f"protected file /etc/routes.yaml was modified (sha256 {'a' * 64} before, {'b' * 64} after)"
    ]
