"""Closing a campaign run: the guard's closure, the ledger's counts, the evidence bundle.

The closure is computed by ``guards.dispositions.close_campaign`` over the latest
attempt of every planned cell run; the bundle (summaries, tickets,
comparison.json, RESULT.md, report.html, MANIFEST.json, SHA256SUMS) by
``evidence.bundle.write_bundle`` from the campaign folder alone. Both run after
restoration, so the card and the sums include the receipt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evidence.bundle import BundleIndex, write_bundle
from evidence.host import PynvmlInventory, collect_host, collect_source
from evidence.layout import RESULT_FILE
from evidence.posture import END_FILE, collect_posture, docker_runtime, write_posture
from faceoff.signing import signing_key
from flows.restore import RestoreOutcome
from flows.scope import CampaignScope
from guards.dispositions import Closure, close_campaign
from guards.reasons import Disposition
from ledger.campaigns import require_campaign
from ledger.cells import latest_attempts, set_campaign_state
from ledger.db import session_scope
from matrix.plan import CellRunKey, plan

CHECKOUT = Path(__file__).resolve().parents[1]  # faceoff's own source, for the manifest's sha


@dataclass(frozen=True)
class CampaignResult:
    """What ``faceoff run`` reports at the end."""

    campaign: str
    closure: Closure
    bundle: Path
    card: str  # RESULT.md as written
    # Every restoration this run did, in order: a resume's pending one first, then the one
    # after its cells. Empty when this run never had to bring the incumbent back.
    restorations: tuple[RestoreOutcome, ...] = ()

    @property
    def complete(self) -> bool:
        return self.closure.status.value == "complete"

    @property
    def restoration(self) -> RestoreOutcome | None:
        """The last restoration: whether the incumbent serves now."""
        return self.restorations[-1] if self.restorations else None

    @property
    def restored(self) -> bool:
        return self.restoration is None or self.restoration.ok


def closure_of(scope: CampaignScope) -> Closure:
    with session_scope(scope.engine) as session:
        latest = latest_attempts(session, require_campaign(session, scope.name))
    dispositions = {
        CellRunKey(cell_id, arm): Disposition(row.disposition)
        for (cell_id, arm), row in latest.items()
    }
    return close_campaign(plan(scope.frozen.matrix).cell_runs, dispositions)


def record_closure(scope: CampaignScope, closure: Closure) -> None:
    counts = {
        "accepted": closure.accepted,
        "failed": closure.failed,
        "blocked": closure.blocked,
        "pending": closure.pending,
    }
    with session_scope(scope.engine) as session:
        campaign = require_campaign(session, scope.name)
        set_campaign_state(
            session, campaign, status=closure.status.value, counts=counts, now=scope.tools.now
        )


def bundle(scope: CampaignScope) -> BundleIndex:
    runtime = docker_runtime(scope.tools.docker) if scope.docker is not None else None
    write_posture(scope.campaign_dir, END_FILE, collect_posture(scope.tools.now, runtime=runtime))
    return write_bundle(
        scope.campaign_dir,
        now=scope.tools.now,
        host=collect_host(PynvmlInventory(), scope.tools.docker),
        source=collect_source(CHECKOUT),
        key=signing_key(scope.tools.environ),
    )


def close(scope: CampaignScope, restorations: Sequence[RestoreOutcome]) -> CampaignResult:
    closure = closure_of(scope)
    record_closure(scope, closure)
    index = bundle(scope)
    card = (index.root / RESULT_FILE).read_text(encoding="utf-8")
    return CampaignResult(scope.name, closure, index.root, card, tuple(restorations))
