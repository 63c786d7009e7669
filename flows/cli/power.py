"""The power table of a matrix, with the variances the ledger's earlier nights give: what
``faceoff validate --power`` prints and its ``--json`` carries; the preflight's power check
(``flows.campaign.preflight.power``) judges the same table.
The same concept at another layer: ``evidence.stats.power``, ``flows.campaign.preflight.power``.

The statistics are ``evidence.comparison.power_table`` (pure) and ``evidence.history.variance``
(the nights); this module is their I/O edge: the ledger's closed campaigns and their bundles.
A workdir without a ledger plans with the conservative default.
"""

from __future__ import annotations

import os
from pathlib import Path

from rich.table import Table

from evidence.comparison.figures import CELL_FIGURE_LABELS
from evidence.comparison.power_table import PowerTable, wanted_variances
from evidence.history.variance import EarlierNight, read_earlier
from evidence.stats.known_variance import KnownVariance
from faceoff.formats.bundle.comparison import RATIO_LABELS
from faceoff.formats.frozen_matrix import FrozenMatrix
from flows.campaign.preflight.power import planned_table
from flows.cli.ledger_open import existing_ledger
from ledger.db import DB_URL_ENV
from ledger.history import closed_campaigns
from workload.metrics import higher_is_better

LABELS = {**RATIO_LABELS, **CELL_FIGURE_LABELS}


def planned_power(frozen: FrozenMatrix, workdir: Path, db: str | None) -> PowerTable:
    """The rule's power table, each cell's variance learned from the ledger where it can be."""
    earlier = earlier_nights(workdir, db) if wanted_variances(frozen.matrix) else []
    return planned_table(frozen, earlier)


def earlier_nights(workdir: Path, db: str | None) -> list[EarlierNight]:
    """Every closed campaign's night in the ledger (none without a ledger, or without the
    workdir a ledger would be in: a plan made before any campaign ran)."""
    if db is None and DB_URL_ENV not in os.environ and not Path(workdir).is_dir():
        return []
    engine = existing_ledger(db, workdir)
    if engine is None:
        return []
    try:
        with engine.connect() as conn:
            rows = closed_campaigns(conn)
    finally:
        engine.dispose()
    return read_earlier((Path(r.evidence_dir), r.created_at.date()) for r in rows)


def _basis(known: KnownVariance) -> str:
    """What the variance rests on: its source, nights, degrees of freedom, requests, and
    whether the variance between the nights' windows was included."""
    if known.source == "default":
        return "default"
    df = f", df {known.df}" if known.df is not None else ""
    requests = f", {known.requests:,} requests/arm" if known.requests else ""
    between = ", τ² between nights included" if known.between else ""
    return f"{known.source}, {known.nights} night{'s' * (known.nights != 1)}{df}{requests}{between}"


def power_view(table: PowerTable) -> Table:
    """The table ``validate --power`` prints, one row per criterion and counted cell."""
    view = Table(title="What the plan can decide (80 % power, 95 % confidence)")
    for column in ("cell", "criterion", "plan", "s (from)", "±1 pass", "detects", "needs"):
        view.add_column(column)
    for row in table.rows:
        plan = f"{row.passes}×{row.requests}" if row.passes > 1 else str(row.requests)
        plan += " seq" if row.sequential else ""
        known = row.variance
        sign = "≥" if higher_is_better(row.metric) else "≤"
        view.add_row(
            row.cell,
            f"{LABELS.get(row.metric, row.metric)} {row.statistic} {sign} {row.bound:.2f}",
            plan,
            f"{known.log_ratio**0.5:.3f} ({_basis(known)})" if known else "window figure",
            f"{row.half_width:.0%}" if row.half_width is not None else "-",
            f"{row.detectable:.1%}" if row.detectable is not None else "-",
            f"{row.needed:,}" if row.needed is not None else "-",
        )
    return view
