"""Prefect artifacts for review in the UI: the disposition table and the result card.

Both display what the ledger and the bundle already hold; nothing is computed
here. Keys are per campaign, so the UI shows each campaign's latest version: the
campaign flow publishes them when it closes, and ``faceoff review`` publishes them
again after each recorded decision, so the card in the UI never says "pending human
review" once a decision is recorded. When Prefect's API does not answer (its server died
and could not be started again) the flow publishes nothing and says so: each artifact
call would retry for about a minute, three times, for copies of what the bundle holds.
"""

from __future__ import annotations

import re
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.settings import PREFECT_API_URL
from sqlalchemy import Engine

from evidence.folder.layout import RESULT_FILE
from faceoff.formats.bundle.comparison import COMPARISON_FILE, Comparison
from faceoff.formats.reasons import disposition_label
from flows.campaign.closing import CampaignResult
from flows.campaign.context import CampaignContext
from lanes.http import UrllibHttp
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import session_scope

HEALTH_TIMEOUT_S = 30.0  # a loaded host answers slowly; a dead server refuses at once


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
            "disposition": disposition_label(run.disposition, run.interrupted),
            "reason": run.reason_code or "",
            "sentence": run.reason or "",
        }
        for run in runs
    ]


def publish(context: CampaignContext, result: CampaignResult) -> None:
    if not api_answers():
        get_run_logger().warning(
            "Prefect's API does not answer: the disposition table and the result card are not "
            "published (the bundle at %s holds both)",
            result.bundle,
        )
        return
    publish_campaign(context.engine, context.name, result.bundle)


def api_answers() -> bool:
    """Whether Prefect's API answers its health check (no API URL: Prefect runs its own)."""
    url = PREFECT_API_URL.value()
    return not url or UrllibHttp().get(f"{url}/health", timeout=HEALTH_TIMEOUT_S).ok


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
