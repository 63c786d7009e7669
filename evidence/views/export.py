"""``faceoff export``: a campaign's figures as rows for spreadsheets and notebooks.
The same concept at another layer: ``flows.cli.export``.

One row per cell, arm and figure, read from ``comparison.json`` (it computes nothing): each
request metric's distribution (``n``, ``mean``, ``min``, ``max``, ``p50``, ``p95``, and
``p99`` where the summary keeps that tail), and the cell run's own figures (aggregate output
throughput, goodput, energy per output token) with their value in ``mean``. CSV with a header
row, or JSON (``ExportRows``, versioned), whose ``criteria`` also carry the declared rule's
figures per candidate and criterion (the ruling's, as the card and the run's end summary show
them). Parquet would need pyarrow, which faceoff does not depend on.
"""

from __future__ import annotations

import csv
import io
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.formats.attempt.summary import Stats
from faceoff.formats.bundle.comparison import (
    ArmCell,
    CellEntry,
    Comparison,
    CriterionLine,
    CriterionStatus,
)

FORMATS = ("csv", "json")


class ExportRow(Spec):
    campaign: str = Field(description="Campaign name.")
    cell: str = Field(description="Cell id.")
    kind: str = Field(description="Workload kind.")
    concurrency: int = Field(description="Client streams in flight.")
    arm: str = Field(description="Arm name.")
    role: str = Field(description="incumbent or candidate.")
    disposition: str = Field(description="The cell run's standing disposition.")
    reason_code: str | None = Field(description="Its reason code, for failed or blocked.")
    metric: str = Field(description="Request metric, or a cell run figure (value in mean).")
    n: int | None = Field(description="Requests with a value; None for a cell run figure.")
    mean: float | None = Field(description="Mean, or the cell run figure's value.")
    min: float | None = Field(description="Smallest value.")
    max: float | None = Field(description="Largest value.")
    p50: float | None = Field(description="Median.")
    p95: float | None = Field(description="95th percentile.")
    p99: float | None = Field(description="99th percentile, where the summary keeps it.")


class ExportCriterion(Spec):
    candidate: str = Field(description="Candidate arm.")
    metric: str = Field(description="Metric the criterion judges.")
    bound: float = Field(description="The ratio bound its interval must clear.")
    status: CriterionStatus = Field(description="met, not_met, inconclusive or missing.")
    cell: str | None = Field(description="The cell whose figure decided it.")
    ratio: float | None = Field(description="That cell's candidate / incumbent ratio.")
    low: float | None = Field(description="Its interval's low end.")
    high: float | None = Field(description="Its interval's high end.")
    sentence: str = Field(description="The criterion's line on the card ('descriptive only' "
                          "where its interval may not decide).")  # fmt: skip


# Format history: 1 rows; 2 adds criteria (the declared rule's figures). Nothing of faceoff
# reads an export back, so no upgrade step is kept.
class ExportRows(Artifact):
    schema_version: Literal[2] = Field(default=2, description="Export format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id.")
    rows: list[ExportRow] = Field(description="One per cell, arm and figure.")
    criteria: list[ExportCriterion] = Field(
        description="Per candidate, each declared rule criterion's deciding figure; empty "
        "without a rule."
    )


def export_rows(comparison: Comparison) -> ExportRows:
    roles = {a.name: a.role for a in comparison.arms}
    rows = [
        row
        for cell in comparison.cells
        for arm in cell.arms
        for row in _arm_rows(comparison.campaign, cell, arm, roles.get(arm.arm, ""))
    ]
    return ExportRows(campaign=comparison.campaign, matrix_id=comparison.matrix_id, rows=rows,
                      criteria=_criteria(comparison))  # fmt: skip


def _criteria(comparison: Comparison) -> list[ExportCriterion]:
    """The ruling's criterion lines, each with its deciding cell's figure."""
    ruling = comparison.ruling
    candidates = ruling.candidates if ruling else []
    return [_criterion(c.candidate, line) for c in candidates for line in c.criteria]


def _criterion(candidate: str, line: CriterionLine) -> ExportCriterion:
    cell = next((c for c in line.cells if c.cell == line.deciding_cell), None)
    return ExportCriterion(
        candidate=candidate,
        metric=line.metric,
        bound=line.bound,
        status=line.status,
        cell=line.deciding_cell,
        ratio=cell.ratio if cell else None,
        low=cell.low if cell else None,
        high=cell.high if cell else None,
        sentence=line.sentence,
    )


def _arm_rows(campaign: str, cell: CellEntry, arm: ArmCell, role: str) -> list[ExportRow]:
    where = {"campaign": campaign, "cell": cell.id, "kind": cell.kind,
             "concurrency": cell.concurrency, "arm": arm.arm, "role": role,
             "disposition": str(arm.disposition), "reason_code": arm.reason_code}  # fmt: skip
    rows = [_stats_row(where, metric, stats, arm) for metric, stats in arm.metrics.items()]
    for metric, value in _figures(arm).items():
        if value is not None:
            figure = {"metric": metric, "n": None, "mean": value, "min": None, "max": None,
                      "p50": None, "p95": None, "p99": None}  # fmt: skip
            rows.append(ExportRow.model_validate(where | figure))
    return rows


def _stats_row(where: dict[str, object], metric: str, stats: Stats, arm: ArmCell) -> ExportRow:
    tail = arm.tails.get(metric)
    figures = {"metric": metric, "n": stats.n, "mean": stats.mean, "min": stats.min,
               "max": stats.max, "p50": stats.p50, "p95": stats.p95,
               "p99": tail.p99 if tail is not None else None}  # fmt: skip
    return ExportRow.model_validate(where | figures)


def _figures(arm: ArmCell) -> dict[str, float | None]:
    goodput = arm.goodput
    return {
        "aggregate_output_tps": arm.aggregate_output_tps,
        "goodput_rps": goodput.requests_per_s if goodput else None,
        "energy_per_token_j": arm.energy.energy_per_token_j if arm.energy else None,
    }


def as_csv(exported: ExportRows) -> str:
    """A header row, then one line per row; an absent value is an empty field."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(ExportRow.model_fields), lineterminator="\n")
    writer.writeheader()
    for row in exported.rows:
        writer.writerow({k: "" if v is None else v for k, v in row.model_dump().items()})
    return out.getvalue()
