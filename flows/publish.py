"""Prefect artifacts for review in the UI: the disposition table and the result card.

Both display what the ledger and the bundle already hold; nothing is computed
here. Keys are per campaign, so the UI shows each campaign's latest version: the
campaign flow publishes them when it closes, and ``faceoff review`` publishes them
again after each recorded decision, so the card in the UI never says "pending human
review" once a decision is recorded.
"""

from __future__ import annotations

import re
from pathlib import Path

from prefect.artifacts import create_markdown_artifact, create_table_artifact
from sqlalchemy import Engine

from evidence.comparison import Comparison
from evidence.layout import COMPARISON_FILE, RESULT_FILE
from flows.closing import CampaignResult
from flows.console import disposition_label
from flows.scope import CampaignScope
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import session_scope


def artifact_key(campaign: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{campaign}-{what}".lower()).strip("-")


def disposition_rows(engine: Engine, campaign: str) -> list[dict[str, str | int]]:
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, campaign))
    return [
        {
            "cell": run.cell_id,
            "arm": run.arm,
            "attempt": run.attempt,
            "disposition": disposition_label(run),
            "reason": run.reason_code or "",
            "sentence": run.reason or "",
        }
        for run in runs
    ]


def publish(scope: CampaignScope, result: CampaignResult) -> None:
    publish_campaign(scope.engine, scope.name, result.bundle)


def publish_campaign(engine: Engine, campaign: str, bundle: Path) -> None:
    """Both artifacts, from the ledger's attempts and the bundle as it is now."""
    coverage = Comparison.read(bundle / COMPARISON_FILE).coverage
    create_table_artifact(
        disposition_rows(engine, campaign),
        key=artifact_key(campaign, "dispositions"),
        description=f"{campaign}: {coverage.sentence}",
    )
    create_markdown_artifact(
        (bundle / RESULT_FILE).read_text(encoding="utf-8"),
        key=artifact_key(campaign, "result-card"),
        description=f"{campaign}: RESULT.md of the bundle at {bundle}",
    )
