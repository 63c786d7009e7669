"""faceoff review: decisions recorded in the bundle (hashed, chained) and the ledger."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from evidence.audit.reverify import audit_bundle
from evidence.bundle.write import BundleIndex, reopen_bundle, write_bundle
from evidence.comparison.attempts import with_standing
from evidence.reviews.recording import ReviewRequest
from evidence.views.card.render import decision_words
from faceoff.credentials import NOBODY, Credentials
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import Comparison, ReviewRef
from faceoff.formats.bundle.reviews import GENESIS, Decision, read_reviews
from faceoff.formats.frozen_matrix import read_frozen
from faceoff.formats.host_facts import HostFacts, SourceFacts
from flows.cli.review import record_review
from ledger.campaigns import open_campaign, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.tables import ReviewRow
from tests.evidence.campaign import rerun_cell
from tests.evidence.matrices import PLANTED_TOKEN, TOKEN_ENV
from tests.foundation.cli import faceoff

T0 = datetime(2026, 10, 17, 13, 3, 57, tzinfo=UTC)


def utc_now() -> datetime:
    """The wall clock: a review is compared with the attempts' own (wall-clock) start times."""
    return datetime.now(UTC)


def ledger_for(root: Path, status: str) -> Engine:
    """A SQLite ledger in the bundle's workdir with the campaign row the flow would leave."""
    engine = open_ledger(resolve_url(None, root.parent))
    frozen = read_frozen(root / "matrix.frozen.json")
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name=frozen.matrix.campaign.name, matrix_id=frozen.matrix_id,
            evidence_dir=root, now=utc_now,
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
        record_review(engine, "glm53-sim", request, now=utc_now)
    assert not (root / "reviews.jsonl").exists()


def test_a_decision_is_appended_hashed_and_shown_and_the_bundle_still_audits(
    partial: tuple[Path, Engine],
) -> None:
    root, engine = partial
    first = record_review(
        engine, "glm53-sim", ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed"),
        now=utc_now,
    )  # fmt: skip
    forced = record_review(
        engine, "glm53-sim",
        ReviewRequest("bob", Decision.PROMOTE, "natural cells suffice", force_reason="C1 only"),
        now=utc_now,
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
    record_review(engine, "glm53-sim", request, now=utc_now)
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
            now=utc_now,
        )  # fmt: skip
    record = record_review(
        engine, "glm53-sim",
        ReviewRequest("a", Decision.RERUN_CELLS, "again", ("controlled-8192-c1/exl3-r11",)),
        now=utc_now,
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
    assert "glm53-sim — closed_partial" in shown.stdout
    card = (root / "RESULT.md").read_text().splitlines()
    assert card[0] in shown.stdout and card[-1] not in shown.stdout  # its first screen
    more = f"… {len(card) - 40} more lines: the whole card is {root / 'RESULT.md'}, with its"
    assert more in shown.stdout, shown.stdout[-500:]
    refused = review("--decision", "promote", "--note", "ship it")
    assert refused.returncode == 2 and "--force-reason" in refused.stderr
    assert refused.stdout == ""  # a refused decision prints no card before its error
    recorded = review("--decision", "no_promotion", "--note", "controlled failed")
    assert recorded.returncode == 0 and "recorded no_promotion by carol" in recorded.stdout
    assert "Result card" not in recorded.stdout
    assert "no Prefect server holds this campaign's artifacts" in recorded.stdout
    (root.parent / ".prefect").mkdir()  # `faceoff run`'s own Prefect: not started to republish
    again = review("--decision", "no_promotion", "--note", "still failed")
    assert again.returncode == 0, again.stderr
    assert "Prefect artifacts not republished" in again.stdout and not again.stderr


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
        record_review(engine, "glm53-sim", request, now=utc_now)
    done = faceoff(
        "review", "glm53-sim", "--workdir", str(root.parent),
        "--decision", "no_promotion", "--note", "controlled failed",
    )  # fmt: skip
    assert done.returncode == 2 and name in done.stderr and "Traceback" not in done.stderr
    assert not (root / "reviews.jsonl").exists()
    assert (root / "SHA256SUMS").read_bytes() == sums
    assert [f.line for f in audit_bundle(root).findings] == found


def test_a_signed_review_whose_record_is_rehashed_fails_the_keyed_audit(
    partial: tuple[Path, Engine], host_facts: HostFacts, source_facts: SourceFacts
) -> None:
    root, engine = partial
    key = Credentials(hmac=b"operator-review-key")
    reopen_bundle(root, NOBODY, sealed=True)  # closed with the key, as its operator runs
    write_bundle(root, now=utc_now, host=host_facts, source=source_facts, credentials=key)
    request = ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed")
    record = record_review(engine, "glm53-sim", request, now=utc_now, credentials=key)
    assert record.signature is not None
    keyed = [f.line for f in audit_bundle(root, credentials=key).findings]
    assert not any(f.startswith("reviews.jsonl") for f in keyed)
    forged = record.model_copy(update={"note": "all fine"}).sealed()  # hash redone, no key
    (root / "reviews.jsonl").write_text(forged.model_dump_json() + "\n")
    found = [f.line for f in audit_bundle(root, credentials=key).findings]
    assert "reviews.jsonl: line 1.signature: signature does not match" in " ".join(found)
    unkeyed = [f.line for f in audit_bundle(root).findings]
    assert not any("signature" in f for f in unkeyed)


def test_a_rerun_supersedes_earlier_decisions_and_the_card_keeps_the_attempt_history(
    partial: tuple[Path, Engine], host_facts: HostFacts, source_facts: SourceFacts
) -> None:
    root, engine = partial
    record_review(
        engine, "glm53-sim", ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed"),
        now=utc_now,
    )  # fmt: skip
    runs = ("natural-8192-c1/nvfp4-r2", "controlled-8192-c1/exl3-r11")
    record_review(
        engine, "glm53-sim", ReviewRequest("bob", Decision.RERUN_CELLS, "noisy host", runs),
        now=utc_now,
    )  # fmt: skip
    card = (root / "RESULT.md").read_text(encoding="utf-8")
    assert f"Decision: rerun {runs[0]} and {runs[1]} before deciding (recorded by bob)" in card

    reopen_bundle(root, NOBODY, sealed=True)
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), TOKEN_ENV: PLANTED_TOKEN}
    rerun_cell(root, "natural-8192-c1", "nvfp4-r2", environ)
    built = write_bundle(root, now=utc_now, host=host_facts, source=source_facts)

    first, rerun = built.comparison.reviews
    assert first.superseded_by == rerun.superseded_by == ["natural-8192-c1/nvfp4-r2 attempt 2"]
    assert rerun.outstanding == ["controlled-8192-c1/exl3-r11"]
    cell = next(c for c in built.comparison.cells if c.id == "natural-8192-c1")
    history = next(a for a in cell.arms if a.arm == "nvfp4-r2").history
    assert [(h.attempt, h.disposition, h.stands) for h in history] == [
        (1, "accepted", False),
        (2, "accepted", True),
    ]
    card = (root / "RESULT.md").read_text(encoding="utf-8")
    assert "Decision: rerun controlled-8192-c1/exl3-r11 before deciding (recorded by bob)" in card
    assert f"{runs[0]} before deciding" not in card
    assert "| natural-8192-c1 | nvfp4-r2 | 1 |" in card
    assert "superseded by a later attempt |" in card
    assert (
        "alice: **no_promotion** — controlled failed. "
        "Superseded by natural-8192-c1/nvfp4-r2 attempt 2" in card
    )
    assert "Still to rerun: controlled-8192-c1/exl3-r11" in card

    record_review(
        engine, "glm53-sim", ReviewRequest("carol", Decision.NO_PROMOTION, "seen attempt 2"),
        now=utc_now,
    )  # fmt: skip
    card = (root / "RESULT.md").read_text(encoding="utf-8")
    assert "Decision: no promotion (recorded by carol)" in card
    saved = Comparison.read(root / "comparison.json")
    assert saved.reviews[-1].superseded_by == [] and saved.reviews[0].superseded_by


def test_a_decision_whose_reruns_all_began_after_it_leaves_the_campaign_pending(
    built: BundleIndex,
) -> None:
    review = ReviewRef(
        decision="rerun_cells", reviewer="bob", note="again", at=T0, forced_reason=None,
        record_sha256="0" * 64, cells=["natural-8192-c1/nvfp4-r2"],
        superseded_by=["natural-8192-c1/nvfp4-r2 attempt 2"], outstanding=[],
    )  # fmt: skip
    done = built.comparison.model_copy(update={"reviews": [review]})
    assert decision_words(done) == (
        "pending human review (the rerun_cells recorded by bob was superseded by 1 later "
        "attempt(s))"
    )
    waiting = review.model_copy(update={"superseded_by": [], "outstanding": review.cells})
    assert decision_words(built.comparison.model_copy(update={"reviews": [waiting]})) == (
        "rerun natural-8192-c1/nvfp4-r2 before deciding (recorded by bob)"
    )


def test_a_review_recorded_with_a_naive_clock_is_read_as_utc(built: BundleIndex) -> None:
    cell = built.comparison.cells[0]
    starts = [h.started_at for a in cell.arms for h in a.history if h.started_at is not None]
    naive = max(starts).astimezone(UTC).replace(tzinfo=None)  # when the cell's last attempt began
    review = ReviewRef(
        decision="no_promotion", reviewer="bob", note="n", at=naive, forced_reason=None,
        record_sha256="0" * 64, cells=[], superseded_by=[], outstanding=[],
    )  # fmt: skip
    assert with_standing(review, [cell]).superseded_by == []
    before = with_standing(review.model_copy(update={"at": naive - timedelta(seconds=1)}), [cell])
    assert len(before.superseded_by) == 1
