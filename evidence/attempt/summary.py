"""The request summary of one cell attempt (``summary.json``), a pure function of its journal.
The same concept at another layer: ``faceoff.formats.attempt.summary`` (its model).

Per-request metrics come from ``workload.metrics`` (the definitions written into every
bundle); this module only counts and describes them, pooled and role by role, over the
requests a statistic counts (``evidence.attempt.roles.counted``). ``faceoff audit``
recomputes it from ``journal.jsonl`` and ``requests.json`` and compares field by field.
What is counted: docs/evidence.md, "Statistics".
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from collectors.telemetry import read_samples
from evidence.attempt.energy import energy_figures
from evidence.attempt.goodput import GoodputCount
from evidence.attempt.needle_search import search_summary
from evidence.attempt.open_loop import load_summary
from evidence.attempt.roles import counted_statuses
from evidence.attempt.tails import ITL, TAIL_METRICS, chunk_gaps, tail_of
from evidence.stats.bootstrap import PERCENTILE_METHOD, describe
from faceoff.formats.attempt.collector_samples import GpuSample
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, RequestOutcome, RequestRole, Status
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.stalls import GPU_FILE
from faceoff.formats.attempt.summary import (
    EnergyFigures,
    JournalHealth,
    RequestSummary,
    Stats,
    TailStats,
)
from matrix.cell import LengthRule
from matrix.model import Matrix
from matrix.slo import Slo
from workload.journal import JournalContents, JournalScan
from workload.metrics import (
    REQUEST_METRICS,
    Measured,
    TimedRequest,
    Timing,
    aggregate_output_throughput,
    cell_window,
    measures_of,
)


def stats_of(values: Sequence[float], undefined: dict[str, int] | None = None) -> Stats:
    dist = describe(values)
    if dist is None:
        return Stats(
            n=0, mean=None, min=None, max=None, p50=None, p95=None, undefined=undefined or {}
        )
    return Stats(**asdict(dist), undefined=undefined or {})


class _MetricValues:
    """Each request metric's values (floats only) and undefined reasons, request by request."""

    def __init__(self) -> None:
        self.values: dict[str, array[float]] = {name: array("d") for name in REQUEST_METRICS}
        self.undefined: dict[str, Counter[str]] = {name: Counter() for name in REQUEST_METRICS}

    def add(self, outcome: TimedRequest) -> None:
        self.record(measure(outcome))

    def record(self, measured: Sequence[tuple[str, Measured]]) -> None:
        """Values already measured (``measure``): a request counted in its role too is
        measured once."""
        for name, found in measured:
            if found.value is None:
                self.undefined[name][found.reason or "undefined"] += 1
            else:
                self.values[name].append(found.value)

    def stats(self) -> dict[str, Stats]:
        return {
            name: stats_of(self.values[name], dict(sorted(self.undefined[name].items())))
            for name in REQUEST_METRICS
        }


def measure(outcome: TimedRequest) -> list[tuple[str, Measured]]:
    return list(measures_of(outcome).items())


def metric_stats(outcomes: Sequence[TimedRequest]) -> dict[str, Stats]:
    """Each request metric's distribution over these requests."""
    values = _MetricValues()
    for outcome in outcomes:
        values.add(outcome)
    return values.stats()


class _Tally:
    """One pass over an attempt's journal lines: counts, and floats where a distribution
    needs every value; no line is kept whole."""

    def __init__(self, plan: RequestPlan, arm: str, attempt: int, slo: Slo | None) -> None:
        self.plan_hash, self.cell_id, self.arm, self.attempt = (
            plan.sha256(),
            plan.cell.id,
            arm,
            attempt,
        )
        self.length_rule: LengthRule = plan.cell.length_finishes
        self.counts = counted_statuses(self.length_rule)
        self.lines = self.ours = self.warmups = self.diagnostics = 0
        self.refusals = self.contract_violations = self.markers_missed = 0
        self.length_limited = self.unnamed_finishes = self.output_tokens = 0
        self.itl: array[float] = array("d")
        self.indices: set[int] = set()
        self.statuses: Counter[Status] = Counter()
        self.targets: set[int] = set()
        self.scored: list[Timing] = []
        self.input_tokens: array[float] = array("d")
        self.completion_tokens: array[float] = array("d")
        self.metrics = _MetricValues()
        self.roles: dict[RequestRole, _MetricValues] = {}
        # an open-loop plan's step summary reads whole scored lines: kept only for those
        self.open_loop: list[RequestOutcome] | None = [] if plan.load is not None else None
        self.goodput = GoodputCount(slo) if slo is not None else None
        self.probes: list[RequestOutcome] = []  # a needle search's: a few lines, kept whole

    def add(self, o: RequestOutcome) -> None:
        self.lines += 1
        if not o.of_attempt(self.cell_id, self.arm, self.attempt, self.plan_hash):
            return
        self.ours += 1
        self.warmups += o.phase is Phase.WARMUP
        self.diagnostics += o.phase is Phase.DIAGNOSTIC
        if o.phase is Phase.PROBE:
            self.probes.append(o)
        if o.phase is not Phase.SCORED:
            return
        if self.goodput is not None:
            self.goodput.add(o)
        self.scored.append(Timing.of(o))
        if self.open_loop is not None:
            self.open_loop.append(o)
        self.indices.add(o.index)
        self.statuses[o.status] += 1
        self.refusals += o.refusal
        self.contract_violations += o.overran_contract
        self.markers_missed += o.marker_found is False
        self.targets.add(o.target_input_tokens)
        self.length_limited += o.status is Status.LENGTH_LIMIT
        self.unnamed_finishes += o.unnamed_finish
        if o.usage is not None and o.send_ns is not None:  # the aggregate throughput's tokens
            self.output_tokens += o.usage.completion_tokens
        if o.status in self.counts:
            if o.usage:
                self.input_tokens.append(o.usage.prompt_tokens)
                self.completion_tokens.append(o.usage.completion_tokens)
            self.itl.extend(chunk_gaps(o))
            measured = measure(o)
            self.metrics.record(measured)
            if o.role not in self.roles:  # not setdefault: its default would be built every time
                self.roles[o.role] = _MetricValues()
            self.roles[o.role].record(measured)

    def tails(self) -> dict[str, TailStats]:
        found = {name: tail_of(self.metrics.values[name]) for name in TAIL_METRICS}
        return found | {ITL: tail_of(self.itl)}

    def energy(
        self, gpu: Sequence[GpuSample] | None, window: tuple[int, int] | None
    ) -> EnergyFigures | None:
        if gpu is None or window is None:
            return None
        count = self.goodput
        good = (count.good, count.tokens) if count is not None else None
        return energy_figures(gpu, window, self.output_tokens, good)

    def role_stats(self) -> dict[str, dict[str, Stats]]:
        """The counted requests' metrics role by role, roles in their enum order (as
        ``evidence.attempt.roles.by_role`` groups them); empty when there is one role."""
        if len(self.roles) < 2:
            return {}
        return {role.value: self.roles[role].stats() for role in RequestRole if role in self.roles}


def summarize_journal(
    contents: JournalContents | JournalScan,
    plan: RequestPlan,
    *,
    arm: str,
    attempt: int,
    slo: Slo | None,
    gpu: Sequence[GpuSample] | None = None,
) -> RequestSummary:
    """The summary of one attempt from its journal lines and the plan that was run, with
    goodput under ``slo`` (the cell's, as the frozen matrix resolves it) and the energy of
    the arm's GPUs from their samples ``gpu`` (None: the arm has no gpu.jsonl).

    A ``JournalScan`` streams: the journal is read once, line by line.
    """
    tally = _Tally(plan, arm, attempt, slo)
    for outcome in contents:
        tally.add(outcome)
    planned = {r.index for r in plan.phase(Phase.SCORED)}
    window = cell_window(tally.scored)
    throughput = aggregate_output_throughput(tally.scored)
    return RequestSummary(
        cell_id=plan.cell.id,
        arm=arm,
        attempt=attempt,
        plan_sha256=tally.plan_hash,
        quantile_method=PERCENTILE_METHOD,
        planned_scored=len(planned),
        journaled_scored=len(tally.indices),
        missing_scored=sorted(planned - tally.indices),
        foreign_lines=tally.lines - tally.ours,
        statuses={status.value: n for status, n in sorted(tally.statuses.items())},
        warmups=tally.warmups,
        diagnostics=tally.diagnostics,
        refusals=tally.refusals,
        contract_violations=tally.contract_violations,
        markers_missed=tally.markers_missed,
        target_input_tokens=sorted(tally.targets),
        input_tokens=stats_of(tally.input_tokens),
        completion_tokens=stats_of(tally.completion_tokens),
        metrics=tally.metrics.stats(),
        roles=tally.role_stats(),
        length_limited=tally.length_limited,
        length_rule=tally.length_rule,
        unnamed_finishes=tally.unnamed_finishes,
        aggregate_output_tps=throughput.value,
        first_send_ns=window[0] if window else None,
        last_end_ns=window[1] if window else None,
        journal=JournalHealth(
            torn_tail=contents.torn_tail is not None,
            bad_lines=contents.bad_lines,
            invalid=contents.invalid,
        ),
        goodput=tally.goodput.result(window) if tally.goodput else None,
        open_loop=load_summary(plan, tally.open_loop or []),
        needle_search=search_summary(tally.probes) if plan.cell.search is not None else None,
        energy=tally.energy(gpu, window),
        tails=tally.tails(),
    )


def cell_slo(matrix: Matrix, cell_id: str) -> Slo | None:
    """The SLO the frozen matrix gives a cell; None for a cell it does not plan."""
    cell = next((c for c in matrix.cells if c.id == cell_id), None)
    return matrix.slo_of(cell) if cell else None


def summarize_attempt(
    folder: Path,
    *,
    arm: str,
    attempt: int,
    slo: Slo | None,
    journal: JournalContents | None = None,
) -> RequestSummary:
    """Recompute an attempt's summary from ``journal.jsonl`` (streamed, unless ``journal``
    holds it already), ``requests.json`` and, where the arm has GPUs, ``gpu.jsonl``."""
    folder = Path(folder)
    plan = RequestPlan.read(folder / PLAN_NAME)
    lines = journal if journal is not None else JournalScan(folder / JOURNAL_NAME)
    gpu = read_samples(folder / GPU_FILE, GpuSample)[0] if (folder / GPU_FILE).is_file() else None
    return summarize_journal(lines, plan, arm=arm, attempt=attempt, slo=slo, gpu=gpu)
