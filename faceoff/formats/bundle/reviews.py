"""``reviews.jsonl``: recorded human decisions, append-only, each record hashed and chained.

Each record carries the sha256 of its own content (every field but ``record_sha256`` and
``signature``) and the hash of the record before it, so an edited, removed or reordered
record no longer verifies; with the operator's key it is also signed (Ed25519, or the HMAC
of older bundles), so a rewritten chain does not pass an audit. It binds the comparison the
reviewer saw.

Format history of ``ReviewRecord.schema_version``:
  1 — first release.
  2 — ``signature`` (HMAC of record_sha256, or None without a key); version 1 still reads.
  3 — ``overrode_rule``, left out while None (so versions 1 and 2 still hash and read).
  4 — ``signature`` may be an Ed25519 signature ``{keyid, sig}`` of record_sha256.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from faceoff.artifact import Artifact, first_error
from faceoff.canonical import content_sha256
from faceoff.credentials import NOBODY, Credentials
from faceoff.errors import FaceoffError
from faceoff.files import JsonlAppender, read_jsonl
from faceoff.formats.bundle.comparison import CampaignStatus, ReviewRef
from faceoff.record_signature import RecordSignature
from faceoff.signing import SIGNING_KEY_ENV
from matrix.fields import omitted_at

REVIEWS_FILE = "reviews.jsonl"
GENESIS = "0" * 64


class Decision(StrEnum):  # what a reviewer decides: ``faceoff review --decision``
    PROMOTE = "promote"
    NO_PROMOTION = "no_promotion"
    RERUN_CELLS = "rerun_cells"


class ReviewRecord(Artifact):
    schema_version: Literal[1, 2, 3, 4] = Field(
        default=4, description="Review record format version."
    )
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id.")
    reviewer: str = Field(min_length=1, description="Who decided.")
    decision: Decision = Field(description="promote | no_promotion | rerun_cells.")
    note: str = Field(min_length=1, description="Why, in the reviewer's words.")
    cells: list[str] = Field(description="cell/arm runs to rerun (rerun_cells only).")
    campaign_status: CampaignStatus = Field(description="Coverage status when reviewed.")
    forced_reason: str | None = Field(
        description="Why the decision overrode a non-complete status or the declared rule."
    )
    overrode_rule: str | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The declared rule's outcome this forced decision contradicted.",
    )
    comparison_sha256: str = Field(description="sha256 of comparison.json as reviewed.")
    previous_sha256: str = Field(description="record_sha256 of the record before; zeros first.")
    recorded_at: datetime = Field(description="When it was recorded (UTC).")
    record_sha256: str = Field(
        default="", description="sha256 of the content without it and the signature."
    )
    signature: RecordSignature | str | None = Field(
        default=None,
        description="The operator's signature of record_sha256: Ed25519 {keyid, sig}, or the "
        f"hex HMAC-SHA256 under {SIGNING_KEY_ENV} of older records; None without a key.",
    )

    def content_hash(self) -> str:
        content = self.model_dump(mode="json")
        content.pop("record_sha256")
        content.pop("signature")  # so a version 1 record hashes as it did
        return content_sha256(content)

    def sealed(self) -> ReviewRecord:
        return self.model_copy(update={"record_sha256": self.content_hash()})

    def ref(self) -> ReviewRef:
        return ReviewRef(
            decision=self.decision.value,
            reviewer=self.reviewer,
            note=self.note,
            at=self.recorded_at,
            forced_reason=self.forced_reason,
            overrode_rule=self.overrode_rule,
            record_sha256=self.record_sha256,
            cells=list(self.cells),
            superseded_by=[],  # the comparison fills these in from the attempts
            outstanding=[],
        )


def read_reviews(campaign_dir: Path) -> list[ReviewRecord]:
    """Every record, verified: own hash, chain, and a file ending in a newline."""
    path = Path(campaign_dir) / REVIEWS_FILE
    raw = read_jsonl(path)
    if raw.torn_tail is not None or raw.bad_lines:
        raise FaceoffError(
            "a line is torn or not JSON", where=str(path), fix="restore it from the bundle copy"
        )
    records, previous = [], GENESIS
    for number, line in enumerate(raw.records, start=1):
        record = _verified(line, previous, f"{path}:{number}")
        records.append(record)
        previous = record.record_sha256
    return records


def _verified(line: dict[str, object], previous: str, where: str) -> ReviewRecord:
    try:
        record = ReviewRecord.model_validate(line)
    except ValidationError as exc:
        raise FaceoffError(f"not a review record: {first_error(exc)}", where=where) from exc
    if record.content_hash() != record.record_sha256:
        raise FaceoffError(
            f"record_sha256: content hashes to {record.content_hash()[:12]}…",
            where=where,
            fix="the record was edited after it was written",
        )
    if record.previous_sha256 != previous:
        raise FaceoffError(
            "previous_sha256 does not name the record before it",
            where=where,
            fix="a record was removed or reordered",
        )
    return record


def append_review(
    campaign_dir: Path, record: ReviewRecord, *, credentials: Credentials = NOBODY
) -> ReviewRecord:
    """Chain, seal, sign with ``credentials`` and append (flush + fsync) one record."""
    existing = read_reviews(campaign_dir)
    previous = existing[-1].record_sha256 if existing else GENESIS
    sealed = record.model_copy(update={"previous_sha256": previous}).sealed()
    signature = credentials.sign_record(sealed.record_sha256)
    sealed = sealed.model_copy(update={"signature": signature})
    with JsonlAppender(Path(campaign_dir) / REVIEWS_FILE, durable=True) as out:
        out.append(sealed)
    return sealed
