"""Terminal views. They display data computed elsewhere; they compute nothing new."""

from __future__ import annotations

from collections.abc import Collection

from rich.console import Console
from rich.table import Table

from flows.opening import RUNNING
from ledger.tables import CampaignRow, CellRunRow
from matrix.freeze import FrozenMatrix
from matrix.plan import plan


def plan_table(frozen: FrozenMatrix) -> Table:
    the_plan = plan(frozen.matrix)
    table = Table(title=f"{frozen.matrix.campaign.name} — matrix {frozen.matrix_id}")
    for column in ("arm", "role", "lane", "image", "cells", "scored requests", "warmups"):
        table.add_column(column)
    for arm_plan in the_plan.arms:
        arm = arm_plan.arm
        table.add_row(
            arm.name,
            arm.role.value,
            arm.lane.value,
            _short_image(arm.image),
            str(len(arm_plan.cells)),
            str(arm_plan.scored_requests),
            str(arm_plan.warmup_requests),
        )
    table.caption = (
        f"{len(the_plan.cell_runs)} cell runs, {len(the_plan.pairs)} matched pairs, "
        f"{len(frozen.matrix.cells)} cells"
    )
    return table


def _short_image(image: str | None) -> str:
    if image is None:
        return "-"
    repo, digest = image.split("@", 1)
    return f"{repo}@{digest[:19]}…"


INTERRUPTED = "interrupted"  # shown, never stored: the ledger still says running


def status_label(row: CampaignRow, running: Collection[str]) -> str:
    """The campaign's status; ``interrupted`` when the ledger says running but no live run
    holds it (``running``: the names of campaigns whose run lock is held)."""
    return INTERRUPTED if row.status == RUNNING and row.name not in running else row.status


def campaigns_table(rows: list[CampaignRow], running: Collection[str] = ()) -> Table:
    table = Table(title="campaigns")
    for column in ("name", "matrix", "status", "accepted", "failed", "blocked", "pending"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row.name,
            row.matrix_id[:12],
            status_label(row, running),
            *(str(n) for n in (row.accepted, row.failed, row.blocked, row.pending)),
        )
    return table


def disposition_label(run: CellRunRow) -> str:
    """The attempt's disposition as every view shows it: a killed attempt says so."""
    return run.disposition + (" (interrupted)" if run.interrupted else "")


def dispositions_table(
    campaign: CampaignRow, runs: list[CellRunRow], running: Collection[str] = ()
) -> Table:
    table = Table(title=f"{campaign.name} — {status_label(campaign, running)}")
    for column in ("cell", "arm", "attempt", "disposition", "reason"):
        table.add_column(column)
    for run in runs:
        table.add_row(
            run.cell_id,
            run.arm,
            str(run.attempt),
            disposition_label(run),
            run.reason or "",
        )
    return table


def make_console() -> Console:
    return Console(highlight=False)
