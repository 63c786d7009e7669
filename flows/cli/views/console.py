"""Terminal views. They display data computed elsewhere; they compute nothing new.
The same concept at another layer: ``evidence.views.terminal.console``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from rich.console import Console
from rich.table import Table

from faceoff.formats.reasons import disposition_label
from flows.cli.views.durations import clock
from flows.cli.views.plain_table import PlainTable

if TYPE_CHECKING:  # loaded only by the commands that show them
    from faceoff.formats.frozen_matrix import FrozenMatrix
    from flows.cli.status_report import CampaignFacts


def plan_table(frozen: FrozenMatrix) -> Table:
    from matrix.campaign_plan import plan  # noqa: PLC0415  (the campaign list needs no matrix)

    the_plan = plan(frozen.matrix)
    table = Table(title=f"{frozen.matrix.campaign.name} — matrix {frozen.matrix_id}")
    for column in ("arm", "role", "lane", "image", "cells", "scored requests", "warmups"):
        table.add_column(column)
    for arm in frozen.matrix.reference_arms:  # walked first; it serves fidelity cells only
        fidelity = len(frozen.matrix.fidelity)
        row = (arm.name, arm.role.value, arm.lane.value, _short_image(arm.image))
        table.add_row(*row, f"{fidelity} fidelity only", "0", "0")
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


def campaigns_table(campaigns: Sequence[CampaignFacts], *, title: str) -> PlainTable:
    columns = ("name", "host", "matrix", "status", "started", "duration", "accepted", "failed",
               "blocked", "pending", "decision")  # fmt: skip
    table = PlainTable(title, columns)  # a year of nights from every host: rich's table is slow
    for c in campaigns:
        table.add_row(
            c.name,
            c.host or "—",
            c.matrix_id[:12],
            c.status,
            f"{c.started_at:%Y-%m-%d %H:%M}Z",
            clock(c.duration_s),
            *(str(n) for n in (c.accepted, c.failed, c.blocked, c.pending)),
            c.decision.decision if c.decision else "pending",
        )
    return table


def campaign_lines(c: CampaignFacts) -> list[str]:
    """One campaign's times, decision, restoration and incumbent, above its attempts."""
    ended = f"{c.ended_at:%Y-%m-%dT%H:%M:%SZ}" if c.ended_at else "not closed"
    lines = [
        f"{c.name} — {c.status}; matrix {c.matrix_id[:12]}; evidence {c.evidence_dir} "
        f"on {c.host or 'a host not recorded'}",
        f"started {c.started_at:%Y-%m-%dT%H:%M:%SZ}, ended {ended}, took {clock(c.duration_s)}",
    ]
    if c.decision is not None:
        d = c.decision
        lines.append(f"decision: {d.decision} by {d.reviewer} at {d.at:%Y-%m-%dT%H:%M}Z ({d.note})")
    else:
        lines.append("decision: pending human review")
    restoration = c.restoration or "never required (the incumbent was not touched)"
    if c.receipt:
        restoration += f"; receipt {c.receipt} ({'valid' if c.receipt_valid else 'NOT valid'})"
    lines.append(f"restoration: {restoration}")
    if c.incumbent is not None:
        i = c.incumbent
        said = "answering" if i.answering else "not answering"
        valid = "receipt valid, " if c.receipt_valid and not i.answering else ""
        lines.append(f"incumbent {i.arm} at {i.url}: {valid}{said} ({i.detail})")
    return lines


class AttemptView(Protocol):
    """A cell run's attempt, as the ledger row or ``flows.cli.status_report.CellRun`` gives it."""

    @property
    def cell_id(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def disposition(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def interrupted(self) -> bool: ...


def dispositions_table(title: str, runs: Sequence[AttemptView]) -> Table:
    table = Table(title=title)
    for column in ("cell", "arm", "attempt", "disposition", "reason"):
        table.add_column(column)
    for run in runs:
        table.add_row(
            run.cell_id,
            run.arm,
            str(run.attempt),
            disposition_label(run.disposition, run.interrupted),
            run.reason or "",
        )
    return table


# A redirected output's width: a log a scheduler keeps (cron, systemd, tee) is cut nowhere.
LOG_WIDTH = 10_000


def make_console() -> Console:
    """The terminal as it is; redirected, plain (no colour) and full width, each line whole,
    however long: no 80-column cut, no table cell shortened. ``COLUMNS``, when set, rules."""
    console = Console(highlight=False)
    if console.is_terminal or "COLUMNS" in os.environ:
        return console
    return Console(highlight=False, width=LOG_WIDTH, no_color=True, soft_wrap=True)
