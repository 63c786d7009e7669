"""Prefect artifacts for review in the UI: the disposition table and the result card.

Both display what the ledger and the bundle already hold; nothing is computed
here. Keys are per campaign, so the UI shows each campaign's latest run.
"""

from __future__ import annotations

import re

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.closing import CampaignResult
from flows.console import disposition_label
from flows.scope import CampaignScope
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import session_scope


def artifact_key(campaign: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{campaign}-{what}".lower()).strip("-")


def disposition_rows(scope: CampaignScope) -> list[dict[str, str | int]]:
    with session_scope(scope.engine) as session:
        runs = cell_runs(session, require_campaign(session, scope.name))
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
    create_table_artifact(
        disposition_rows(scope),
        key=artifact_key(scope.name, "dispositions"),
        description=f"{scope.name}: {result.closure.sentence}",
    )
    create_markdown_artifact(
        result.card,
        key=artifact_key(scope.name, "result-card"),
        description=f"{scope.name}: RESULT.md of the bundle at {result.bundle}",
    )
