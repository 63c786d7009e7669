"""The declared decision rule: what the evidence must show for a candidate to be promoted.

Declared in the matrix (``[rule]``) and frozen with it, so the rule a bundle was judged
by is the one written before anything was measured. Each criterion names a metric and
either a *non-inferiority* margin ("candidate TTFT no worse than 5 %") or a
*superiority* target ("decode at least 10 % better"); the direction that is better
comes from the metric itself (``workload.metrics.higher_is_better``), never from the
rule. ``evidence.comparison.ruling`` evaluates it against the ratio intervals of the comparison.

A rule may be scoped to some candidates (``candidates = [...]``, on the rule or on a
criterion): an arm the rule does not judge is measured and shown, never ruled on (the
control arm of an effort A/B, ``matrix/examples/sim-effort.toml``). The cells a rule counts
(whose failure makes it ``not_accepted``) are ``cells = [...]`` when given, else the cells
its criteria judge.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from faceoff.artifact import Spec
from matrix.fidelity import FidelityCriterion
from matrix.fields import FieldError, omitted_at

# Metrics whose candidate/incumbent ratio carries a bootstrap interval (a test keeps these
# equal to evidence.comparison.cells.RATIO_METRICS); the goodput figures; the energy figures
# (the arm's GPUs over the scored window: joules per output token, lower is better, and
# good requests per joule); and the cell figures (one value per arm and cell: goodput, the
# aggregate output throughput and energy), which compare as point ratios, or by their
# between-replicate interval in a replicated cell.
INTERVAL_METRICS = ("effective_prefill_tps", "ttfo_s", "ttft_s", "decode_tps", "e2e_s", "tpot_s")
GOODPUT_METRICS = ("goodput_rps", "goodput_tps", "slo_attainment")
ENERGY_METRICS = ("energy_per_token_j", "goodput_per_joule")
CELL_FIGURE_METRICS = (*GOODPUT_METRICS, "output_tps", *ENERGY_METRICS)
RULE_METRICS = (*INTERVAL_METRICS, *CELL_FIGURE_METRICS)


class NotAccepted(StrEnum):
    """What a counted cell that is not accepted on the incumbent or the candidate means."""

    NO_DECISION = "no_decision"  # the rule cannot be applied: the reviewer decides
    DO_NOT_PROMOTE = "do_not_promote"  # a candidate that failed a cell is not promoted
    IGNORE = "ignore"  # judge the accepted cells alone


class Criterion(Spec):
    metric: str = Field(
        description=f"One of {', '.join(RULE_METRICS)}.",
        json_schema_extra={"enum": list(RULE_METRICS)},  # for editors' completion
    )
    statistic: Literal["p50", "p95", "p99"] = Field(
        default="p50",
        description="The percentile of a request metric whose ratio is judged (goodput: p50); "
        "a p99 only in cells with enough requests to claim it (evidence.stats.power).",
    )
    non_inferiority: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="Margin: the candidate may be at most this much worse (0.05 = 5 %).",
    )
    superiority: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Target: the candidate must be at least this much better (0.10 = 10 %).",
    )
    kinds: list[str] | None = Field(
        default=None, min_length=1, description="Workload kinds it judges; default every kind."
    )
    cells: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Cell ids it judges (a replicated cell by the id it was written under, or "
        "one replicate's); default the rule's cells, else every cell.",
    )
    candidates: list[str] | None = Field(
        default=None,
        min_length=1,
        exclude_if=omitted_at(None),
        description="Candidate arms it judges; default every candidate the rule judges.",
    )

    @model_validator(mode="after")
    def _one_test(self) -> Criterion:
        if self.metric not in RULE_METRICS:
            raise FieldError(
                ("metric",),
                f"rule metric {self.metric!r} is not judged; use one of {', '.join(RULE_METRICS)}",
            )
        if self.on_cell_figure and self.statistic != "p50":
            raise FieldError(
                ("statistic",),
                f"rule metric {self.metric} is a cell figure with no percentiles; drop statistic",
            )
        if (self.non_inferiority is None) == (self.superiority is None):
            raise FieldError(
                ("non_inferiority",),
                f"rule criterion on {self.metric} needs exactly one of non_inferiority "
                "(a margin) or superiority (a target); declare two criteria for both",
            )
        return self

    @property
    def on_goodput(self) -> bool:
        """Judges a goodput figure, which needs the cells' SLO."""
        return self.metric in (*GOODPUT_METRICS, "goodput_per_joule")

    @property
    def on_energy(self) -> bool:
        """Judges an energy figure, which needs the arms' GPUs."""
        return self.metric in ENERGY_METRICS

    @property
    def on_cell_figure(self) -> bool:
        """Judges one figure per arm and cell (no percentiles, no interval within a cell)."""
        return self.metric in CELL_FIGURE_METRICS


class Rule(Spec):
    criteria: list[Criterion] = Field(min_length=1, description="Every one must be met.")
    cells: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Cell ids that count (their failure is not_accepted's business); default "
        "the cells its criteria judge.",
    )
    candidates: list[str] | None = Field(
        default=None,
        min_length=1,
        exclude_if=omitted_at(None),
        description="Candidate arms it judges; default every candidate. Others are measured "
        "and shown, not ruled on.",
    )
    fidelity: list[FidelityCriterion] = Field(
        default_factory=list,
        exclude_if=omitted_at([]),
        description="Bounds on each judged candidate's fidelity to the reference "
        "([[fidelity]] cells); every one must be met too.",
    )
    not_accepted: NotAccepted = Field(
        default=NotAccepted.NO_DECISION,
        description="A counted cell failed, blocked or never run on the incumbent or the "
        "candidate: no_decision (default), do_not_promote, or ignore (judge the others).",
    )

    def check_against(
        self, cell_ids: Collection[str], kinds: Collection[str], candidates: Collection[str]
    ) -> None:
        """Every cell id, kind and candidate the rule names exists in the matrix (``cell_ids``:
        its cells' ids, and the ids replicated cells were written under; ``kinds``: every
        workload kind; ``candidates``: its candidate arms); FieldError otherwise."""
        _known(("rule", "cells"), self.cells, cell_ids)
        _known(("rule", "candidates"), self.candidates, candidates)
        for index, criterion in enumerate(self.criteria):
            where = ("rule", "criteria", index)
            _known((*where, "cells"), criterion.cells, cell_ids)
            _known((*where, "kinds"), criterion.kinds, kinds)
            _known((*where, "candidates"), criterion.candidates, self.candidates or candidates)

    def criteria_for(self, candidate: str) -> list[Criterion]:
        """The criteria that judge ``candidate`` (none: the rule does not rule on it)."""
        if self.candidates is not None and candidate not in self.candidates:
            return []
        return [c for c in self.criteria if c.candidates is None or candidate in c.candidates]

    def judges(self, candidate: str) -> bool:
        return bool(self.criteria_for(candidate))

    def counted(self, names: Collection[str], kind: str, candidate: str) -> bool:
        """Whether a cell counts for ``candidate``: named in ``cells``, or, without ``cells``,
        judged by one of the candidate's criteria."""
        if self.cells is not None:
            return self.counts_cell(names)
        return any(self.counts(names, kind, c) for c in self.criteria_for(candidate))

    def tail_metrics(self, statistic: str = "p95") -> list[str]:
        """The metrics some criterion judges at ``statistic`` (a tail: their ratios of that
        percentile are computed for it)."""
        return sorted({c.metric for c in self.criteria if c.statistic == statistic})

    def counts_cell(self, names: Collection[str]) -> bool:
        """Whether a cell known by ``names`` (its id, and the id it was written under when it
        is a replicate) is within ``cells``, where given."""
        return self.cells is None or not set(names).isdisjoint(self.cells)

    def counts(self, names: Collection[str], kind: str, criterion: Criterion) -> bool:
        """Whether the criterion judges a cell known by ``names`` of workload ``kind``."""
        return (
            self.counts_cell(names)
            and (criterion.cells is None or not set(names).isdisjoint(criterion.cells))
            and (criterion.kinds is None or kind in criterion.kinds)
        )


def _known(where: tuple[str | int, ...], names: list[str] | None, known: Collection[str]) -> None:
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise FieldError(where, f"names unknown {unknown}; known: {', '.join(sorted(known))}")
