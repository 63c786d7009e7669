"""``faceoff review``: a reviewer's decision, in the bundle and in the ledger.

The decision is appended to the sealed bundle's ``reviews.jsonl``
(``evidence.review_recording``), its ledger row written in the same session, and
then the bundle's views and SHA256SUMS are rebuilt.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from evidence.bundle import refresh_views
from evidence.layout import CampaignFolder
from evidence.review_log import ReviewRecord
from evidence.review_recording import ReviewRequest, append_decision
from faceoff.ports import Clock
from ledger.campaigns import require_campaign
from ledger.db import session_scope
from ledger.tables import ReviewRow


def record_review(
    engine: Engine,
    campaign: str,
    request: ReviewRequest,
    *,
    now: Clock,
    key: bytes | None = None,
) -> ReviewRecord:
    """Append the decision (signed under ``key`` when given), row it, rebuild the views."""
    with session_scope(engine) as session:
        row = require_campaign(session, campaign)
        assert row.id is not None  # a campaign read from the ledger has its key
        folder = CampaignFolder.at(Path(row.evidence_dir))
        record = append_decision(folder, request, row.status, now=now, key=key)
        session.add(
            ReviewRow(
                campaign_id=row.id,
                reviewer=record.reviewer,
                decision=record.decision.value,
                note=record.note,
                cells=json.dumps(record.cells) if record.cells else None,
                forced_reason=record.forced_reason,
                created_at=record.recorded_at,
                record_sha256=record.record_sha256,
            )
        )
    refresh_views(folder, key)
    return record
