"""The campaign's own state on this host: no other run of it in progress, and its folder
holding this matrix or nothing yet, its dataset and trace files as they were frozen. What
``faceoff run`` refuses before the take-over (the run lock, the open's frozen-file checks),
asked here so that a passing preflight means the run starts. The ledger's row of the
campaign is the ``ledger`` check's."""

from __future__ import annotations

from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import CheckResult
from flows.campaign.lock import refuse_if_running
from flows.campaign.opening import refuse_changed_sources, refuse_other_matrix
from flows.campaign.preflight.catalog import fail, ok


def campaign_check(frozen: FrozenMatrix, campaign_dir: Path) -> CheckResult:
    subject = f"campaign {frozen.matrix.campaign.name}"
    try:
        refuse_if_running(campaign_dir)
        refuse_changed_sources(frozen, campaign_dir)  # the open's order: the file named first
        refuse_other_matrix(frozen, campaign_dir)
    except FaceoffError as exc:
        where = f"{exc.where}: " if exc.where else ""
        return fail("campaign", subject, where + exc.what, exc.fix or "")
    found = "resumes under the matrix it was frozen with" if campaign_dir.is_dir() else "is new"
    return ok("campaign", subject, f"{campaign_dir} {found}")
