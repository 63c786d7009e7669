"""faceoff review: decisions recorded in the bundle (hashed, chained) and the ledger."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from evidence.audit import audit_bundle
from evidence.decision import Decision
from evidence.review import ReviewRequest, record_review
from evidence.reviews import GENESIS, read_reviews
from faceoff.errors import FaceoffError
from ledger.campaigns import open_campaign, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.tables import ReviewRow
from matrix.freeze import read_frozen
from tests.foundation.cli import faceoff

T0 = datetime(2026, 10, 17, 13, 3, 57, tzinfo=UTC)


def ledger_for(root: Path, status: str) -> Engine:
    """A SQLite ledger in the bundle's workdir with the campaign row the flow would leave."""
    engine = open_ledger(resolve_url(None, root.parent))
    frozen = read_frozen(root / "matrix.frozen.json")
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name=frozen.matrix.campaign.name, matrix_id=frozen.matrix_id,
            evidence_dir=root, now=lambda: T0,
        )  # fmt: skip
        row.status = status
    return engine


@pytest.fixture
def partial(bundle_copy: Callable[[], Path]) -> tuple[Path, Engine]:
    root = bundle_copy()
    return root, ledger_for(root, "closed_partial")


def test_promote_is_refused_for_a_partial_campaign(partial: tuple[Path, Engine]) -> None:
    root, engine = partial
    request = ReviewRequest("alice", Decision.PROMOTE, "looks faster")
    with pytest.raises(
        FaceoffError, match=r"refusing to record promote.*closed partial: 4 accepted"
    ):
        record_review(engine, "glm53-sim", request, now=lambda: T0)
    assert not (root / "reviews.jsonl").exists()


def test_a_decision_is_appended_hashed_and_shown_and_the_bundle_still_audits(
    partial: tuple[Path, Engine],
) -> None:
    root, engine = partial
    first = record_review(
        engine, "glm53-sim", ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed"),
        now=lambda: T0,
    )  # fmt: skip
    forced = record_review(
        engine, "glm53-sim",
        ReviewRequest("bob", Decision.PROMOTE, "natural cells suffice", force_reason="C1 only"),
        now=lambda: T0,
    )  # fmt: skip
    records = read_reviews(root)
    assert [r.record_sha256 for r in records] == [first.record_sha256, forced.record_sha256]
    assert records[0].previous_sha256 == GENESIS
    assert records[1].previous_sha256 == first.record_sha256
    assert records[1].forced_reason == "C1 only" and records[1].campaign_status == "closed_partial"
    with session_scope(engine) as session:
        campaign = require_campaign(session, "glm53-sim")
        rows = session.exec(select(ReviewRow).where(ReviewRow.campaign_id == campaign.id)).all()
    assert [(r.decision, r.record_sha256) for r in rows] == [
        ("no_promotion", first.record_sha256),
        ("promote", forced.record_sha256),
    ]
    card = (root / "RESULT.md").read_text(encoding="utf-8")
    assert "Decision: promote the candidate (recorded by bob)" in card
    assert "alice: **no_promotion** — controlled failed" in card
    assert "(forced: C1 only)" in card
    done = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=root, check=False)
    assert done.returncode == 0
    assert audit_bundle(root).ok


def test_an_edited_review_record_is_found_by_audit(partial: tuple[Path, Engine]) -> None:
    root, engine = partial
    request = ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed")
    record_review(engine, "glm53-sim", request, now=lambda: T0)
    line = json.loads((root / "reviews.jsonl").read_text())
    line["decision"] = "promote"
    (root / "reviews.jsonl").write_text(json.dumps(line) + "\n")
    found = [f.line for f in audit_bundle(root).findings]
    assert "reviews.jsonl: sha256 is" in found[0]
    assert any("reviews.jsonl: record_sha256: " in f and "edited" in f for f in found)


def test_rerun_cells_must_name_planned_cell_runs(partial: tuple[Path, Engine]) -> None:
    _, engine = partial
    with pytest.raises(FaceoffError, match="unknown cell runs natural-1-c1/exl3-r11"):
        record_review(
            engine, "glm53-sim",
            ReviewRequest("a", Decision.RERUN_CELLS, "again", ("natural-1-c1/exl3-r11",)),
            now=lambda: T0,
        )  # fmt: skip
    record = record_review(
        engine, "glm53-sim",
        ReviewRequest("a", Decision.RERUN_CELLS, "again", ("controlled-8192-c1/exl3-r11",)),
        now=lambda: T0,
    )  # fmt: skip
    assert record.cells == ["controlled-8192-c1/exl3-r11"]


def test_the_cli_shows_the_card_and_refuses_promote_with_advice(
    partial: tuple[Path, Engine],
) -> None:
    root, _ = partial

    def review(*args: str) -> subprocess.CompletedProcess[str]:
        workdir = str(root.parent)
        return faceoff("review", "glm53-sim", "--workdir", workdir, *args, env={"USER": "carol"})

    shown = review()
    assert shown.returncode == 0, shown.stderr
    assert "glm53-sim — closed_partial" in shown.stdout and "Result card" in shown.stdout
    refused = review("--decision", "promote", "--note", "ship it")
    assert refused.returncode == 2 and "--force-reason" in refused.stderr
    assert refused.stdout == ""  # a refused decision prints no card before its error
    recorded = review("--decision", "no_promotion", "--note", "controlled failed")
    assert recorded.returncode == 0 and "recorded no_promotion by carol" in recorded.stdout
    assert "Result card" not in recorded.stdout
    assert "no Prefect server holds this campaign's artifacts" in recorded.stdout


def test_a_review_refuses_a_bundle_with_an_edited_native_file_and_launders_nothing(
    partial: tuple[Path, Engine],
) -> None:
    root, engine = partial
    name = "lanes/nvfp4-r2/campaign-001/boot.log"
    boot = root / name
    boot.write_text(boot.read_text().replace("quantization=modelopt_fp4", "quantization=exl3"))
    sums = (root / "SHA256SUMS").read_bytes()
    found = [f.line for f in audit_bundle(root).findings]
    assert any(f.startswith(f"{name}: sha256 is") for f in found)
    request = ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed")
    with pytest.raises(FaceoffError, match=f"no longer matches its SHA256SUMS.*{name}"):
        record_review(engine, "glm53-sim", request, now=lambda: T0)
    done = faceoff(
        "review", "glm53-sim", "--workdir", str(root.parent),
        "--decision", "no_promotion", "--note", "controlled failed",
    )  # fmt: skip
    assert done.returncode == 2 and name in done.stderr and "Traceback" not in done.stderr
    assert not (root / "reviews.jsonl").exists()
    assert (root / "SHA256SUMS").read_bytes() == sums
    assert [f.line for f in audit_bundle(root).findings] == found


def test_a_signed_review_whose_record_is_rehashed_fails_the_keyed_audit(
    partial: tuple[Path, Engine],
) -> None:
    root, engine = partial
    key = b"operator-review-key"
    request = ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed")
    record = record_review(engine, "glm53-sim", request, now=lambda: T0, key=key)
    assert record.signature is not None
    keyed = [f.line for f in audit_bundle(root, key=key).findings]
    assert not any(f.startswith("reviews.jsonl") for f in keyed)
    forged = record.model_copy(update={"note": "all fine"}).sealed()  # hash redone, no key
    (root / "reviews.jsonl").write_text(forged.model_dump_json() + "\n")
    found = [f.line for f in audit_bundle(root, key=key).findings]
    assert "reviews.jsonl: line 1.signature: signature does not match" in " ".join(found)
    unkeyed = [f.line for f in audit_bundle(root).findings]
    assert not any("signature" in f for f in unkeyed)
