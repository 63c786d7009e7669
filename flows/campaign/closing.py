"""Closing a campaign run: the guard's closure, the ledger's counts, the evidence bundle.

The closure is computed by ``guards.dispositions.close_campaign`` over the latest
attempt of every planned cell run; the bundle (summaries, tickets,
comparison.json, RESULT.md, report.html, MANIFEST.json, SHA256SUMS) by
``evidence.bundle.write.write_bundle`` from the campaign folder alone. Both run after
restoration, so the card and the sums include the receipt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from collectors.inventory import PynvmlInventory, collect_host, collect_source
from evidence.bundle.write import BundleIndex, write_bundle
from evidence.folder.layout import RESULT_FILE, CampaignFolder
from faceoff.formats.gpu_posture import GPU_END_FILE
from faceoff.formats.host_posture import END_FILE, collect_posture, docker_runtime, write_posture
from faceoff.formats.passes import read_passes, unplanned
from faceoff.formats.reasons import Disposition
from flows.campaign.context import CampaignContext
from flows.campaign.gpu_posture import hardware_gpu_ids, record_campaign_gpus
from flows.campaign.restore import RestoreOutcome
from flows.campaign.seal_record import keep_current_seal
from guards.dispositions import Closure, close_campaign
from ledger.campaigns import SEALING, require_campaign
from ledger.cells import latest_attempts, set_campaign_state
from ledger.db import session_scope
from ledger.restoration import RESTORED, find_restoration
from matrix.campaign_plan import CellRunKey, plan

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
    # When this run did none: what an earlier run did to the incumbent (None: no run did)
    earlier: str | None = None

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


def closure_of(context: CampaignContext) -> Closure:
    with session_scope(context.engine) as session:
        latest = latest_attempts(session, require_campaign(session, context.name))
    dispositions = {
        CellRunKey(cell_id, arm): Disposition(row.disposition)
        for (cell_id, arm), row in latest.items()
    }
    matrix = context.frozen.matrix
    # a sequential cell's passes that never ran are not part of the plan (passes.json)
    planned = plan(matrix).without(unplanned(read_passes(context.campaign_dir), matrix.cells))
    return close_campaign(planned.cell_runs, dispositions)


def record_closure(context: CampaignContext, closure: Closure, status: str | None = None) -> None:
    """The closure's counts, and its status (``status``: ``sealing`` while the bundle is)."""
    counts = {
        "accepted": closure.accepted,
        "failed": closure.failed,
        "blocked": closure.blocked,
        "pending": closure.pending,
    }
    with session_scope(context.engine) as session:
        campaign = require_campaign(session, context.name)
        set_campaign_state(
            session,
            campaign,
            status=status or closure.status.value,
            counts=counts,
            now=context.tools.now,
        )


def bundle(context: CampaignContext) -> BundleIndex:
    runtime = docker_runtime(context.tools.docker) if context.docker is not None else None
    posture = collect_posture(context.tools.now, runtime=runtime)
    write_posture(context.campaign_dir, END_FILE, posture)
    ids = hardware_gpu_ids(context.frozen.matrix)
    record_campaign_gpus(context.campaign_dir, ids, GPU_END_FILE, context.tools.now)
    return write_bundle(
        context.campaign_dir,
        now=context.tools.now,
        host=collect_host(PynvmlInventory(), context.tools.docker),
        source=collect_source(CHECKOUT),
        credentials=context.tools.credentials,
    )


def close(context: CampaignContext, restorations: Sequence[RestoreOutcome]) -> CampaignResult:
    """The closure in the ledger, ``sealing`` until the bundle is sealed, then its status:
    a run killed while sealing is not shown closed over an unsealed bundle."""
    closure = closure_of(context)
    record_closure(context, closure, SEALING)
    index = bundle(context)
    keep_current_seal(context.engine, context.name, CampaignFolder(index.root))
    record_closure(context, closure)
    card = (index.root / RESULT_FILE).read_text(encoding="utf-8")
    earlier = None if restorations else earlier_restoration(context)
    return CampaignResult(context.name, closure, index.root, card, tuple(restorations), earlier)


def earlier_restoration(context: CampaignContext) -> str | None:
    """What the ledger says of the incumbent when this run never touched it: restored by
    an earlier run, or left down by one; None when no run ever touched it."""
    with session_scope(context.engine) as session:
        restoration = find_restoration(session, require_campaign(session, context.name))
        if restoration is None:
            return None
        head = "this run did not touch the incumbent; an earlier run"
        if restoration.state != RESTORED:
            return f"{head} left it {restoration.state}"
        done = restoration.completed_at
        when = f"{done:%Y-%m-%d %H:%M:%S} UTC" if done else "(time not recorded)"
        return f"{head} restored it at {when} (receipt {(restoration.receipt_sha256 or '')[:12]})"
