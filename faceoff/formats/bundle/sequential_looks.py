"""What ``comparison.json`` says of sequential cells: each look, the spending, and why each
cell stopped (``evidence.comparison.sequential`` builds it)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec

LookStanding = Literal["met", "not_met", "inconclusive", "missing"]


class LookEntry(Spec):
    look: int = Field(description="Passes combined at this look (1 = the first pass alone).")
    ratio: float | None = Field(description="Combined candidate/incumbent ratio; None if none.")
    low: float | None = Field(description="Low end of the look's interval.")
    high: float | None = Field(description="High end of the look's interval.")
    confidence: float = Field(description="The look's nominal two-sided confidence (spending).")
    status: LookStanding = Field(description="How the look's interval stands to the bound.")
    descriptive: str | None = Field(
        default=None,
        description="Why the look may not decide (a pass's interval below the requests its "
        "method is calibrated at, a zero-width interval, a single point ratio); None: it may.",
    )


class SequentialCriterion(Spec):
    candidate: str = Field(description="Candidate arm.")
    metric: str = Field(description="Metric judged.")
    statistic: str = Field(description="p50, p95 or p99.")
    bound: float = Field(description="The ratio bound (evidence.comparison.ruling.bound_of).")
    looks: list[LookEntry] = Field(description="Every look taken, in order.")
    decided_at: int | None = Field(description="The look whose interval cleared the bound.")
    futile_at: int | None = Field(
        default=None,
        description="The first undecided look whose interval at the futility level still held "
        "the bound (evidence.stats.futility): no decision was plausible in the passes left.",
    )
    status: LookStanding = Field(description="Its standing: the deciding look's, else the last.")


class SequentialCell(Spec):
    cell: str = Field(description="The cell as written (its passes are <cell>-r1 …).")
    max_passes: int = Field(description="Passes planned at most (max_passes): the design's looks.")
    passes_run: list[str] = Field(description="Replicate cell ids that ran, in pass order.")
    boundaries: list[float] = Field(description="The design's z boundary at each look.")
    spent: list[float] = Field(description="Error spent by each look, per side, cumulative.")
    levels: list[float] = Field(description="Each look's nominal two-sided confidence.")
    futility: list[float] = Field(
        default_factory=list,
        description="Each look's futility wedge on the z scale (0: no futility stop there).",
    )
    criteria: list[SequentialCriterion] = Field(description="Per candidate and criterion.")
    stopped: str = Field(description="Why no further pass of the cell ran, in words.")


class BudgetView(Spec):
    budget_end: datetime | None = Field(description="When the campaign had to be over.")
    restore_reserve_s: float | None = Field(description="Seconds kept for the restoration.")
    passes: int = Field(description="Passes run.")
    stop: str | None = Field(description="Why no further pass ran.")


class SequentialView(Spec):
    spending: str = Field(description="The spending function.")
    futility: str | None = Field(
        default=None, description="The futility stop's beta spending (None: no futility stop)."
    )
    confidence: float = Field(description="The declared confidence each side's error keeps.")
    cells: list[SequentialCell] = Field(description="Every sequential cell, in matrix order.")
    budget: BudgetView | None = Field(description="The passes record (passes.json), if any.")
    method: str = Field(description="How each look is judged.")
