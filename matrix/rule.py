"""The declared decision rule: what the evidence must show for a candidate to be promoted.

Declared in the matrix (``[rule]``) and frozen with it, so the rule a bundle was judged
by is the one written before anything was measured. Each criterion names a metric and
either a *non-inferiority* margin ("candidate TTFT no worse than 5 %") or a
*superiority* target ("decode at least 10 % better"); the direction that is better
comes from the metric itself (``workload.metrics.higher_is_better``), never from the
rule. ``evidence.comparison.ruling`` evaluates it against the ratio intervals of the comparison.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from faceoff.artifact import Spec

# Metrics whose candidate/incumbent ratio carries a bootstrap interval (a test keeps these
# equal to evidence.comparison.cells.RATIO_METRICS), and the goodput figures, compared as
# point ratios.
INTERVAL_METRICS = ("effective_prefill_tps", "ttfo_s", "ttft_s", "decode_tps", "e2e_s", "tpot_s")
GOODPUT_METRICS = ("goodput_rps", "goodput_tps", "slo_attainment")
RULE_METRICS = (*INTERVAL_METRICS, *GOODPUT_METRICS)


class NotAccepted(StrEnum):
    """What a counted cell that is not accepted on the incumbent or the candidate means."""

    NO_DECISION = "no_decision"  # the rule cannot be applied: the reviewer decides
    DO_NOT_PROMOTE = "do_not_promote"  # a candidate that failed a cell is not promoted
    IGNORE = "ignore"  # judge the accepted cells alone


class Criterion(Spec):
    metric: str = Field(description=f"One of {', '.join(RULE_METRICS)}.")
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
        "one replicate's); default every counted cell.",
    )

    @model_validator(mode="after")
    def _one_test(self) -> Criterion:
        if self.metric not in RULE_METRICS:
            raise ValueError(
                f"rule metric {self.metric!r} is not judged; use one of {', '.join(RULE_METRICS)}"
            )
        if self.on_goodput and self.statistic != "p50":
            raise ValueError(
                f"rule metric {self.metric} is a cell figure with no percentiles; drop statistic"
            )
        if (self.non_inferiority is None) == (self.superiority is None):
            raise ValueError(
                f"rule criterion on {self.metric} needs exactly one of non_inferiority "
                "(a margin) or superiority (a target); declare two criteria for both"
            )
        return self

    @property
    def on_goodput(self) -> bool:
        return self.metric in GOODPUT_METRICS


class Rule(Spec):
    criteria: list[Criterion] = Field(min_length=1, description="Every one must be met.")
    cells: list[str] | None = Field(
        default=None, min_length=1, description="Cell ids that count; default every cell."
    )
    not_accepted: NotAccepted = Field(
        default=NotAccepted.NO_DECISION,
        description="A counted cell failed, blocked or never run on the incumbent or the "
        "candidate: no_decision (default), do_not_promote, or ignore (judge the others).",
    )

    def check_against(self, cell_ids: Collection[str], kinds: Collection[str]) -> None:
        """Every cell id and kind the rule names exists in the matrix (``cell_ids``: its cells'
        ids, and the ids replicated cells were written under; ``kinds``: every workload kind)."""
        _known("rule.cells", self.cells, cell_ids)
        for criterion in self.criteria:
            where = f"rule criterion on {criterion.metric}"
            _known(f"{where}: cells", criterion.cells, cell_ids)
            _known(f"{where}: kinds", criterion.kinds, kinds)

    def tail_metrics(self, statistic: str = "p95") -> list[str]:
        """The metrics some criterion judges at ``statistic`` (a tail: their ratios of that
        percentile are computed for it)."""
        return sorted({c.metric for c in self.criteria if c.statistic == statistic})

    def counts_cell(self, names: Collection[str]) -> bool:
        """Whether a cell known by ``names`` (its id, and the id it was written under when it
        is a replicate) counts at all."""
        return self.cells is None or not set(names).isdisjoint(self.cells)

    def counts(self, names: Collection[str], kind: str, criterion: Criterion) -> bool:
        """Whether the criterion judges a cell known by ``names`` of workload ``kind``."""
        return (
            self.counts_cell(names)
            and (criterion.cells is None or not set(names).isdisjoint(criterion.cells))
            and (criterion.kinds is None or kind in criterion.kinds)
        )


def _known(what: str, names: list[str] | None, known: Collection[str]) -> None:
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise ValueError(f"{what} names unknown {unknown}; known: {', '.join(sorted(known))}")
