"""Per-cell entries of the comparison: each arm's figures and the pair ratios. Pure.
The same concept at another layer: ``ledger.cells``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from collectors.speculation import spec_acceptance
from evidence.attempt.window_blocks import arm_window
from evidence.comparison import probe_answers
from evidence.comparison.attempts import attempt_history
from evidence.comparison.energy import figure_ratios
from evidence.comparison.read import AttemptInputs, PastAttempt
from evidence.comparison.reuse import prefix_reuse
from evidence.comparison.standing import NOT_RUN
from evidence.folder.layout import AttemptDir
from evidence.stats.block_length import independent
from evidence.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    RatioInterval,
    Sample,
    Statistic,
    calibrated,
    median_ratio,
    p95,
    p99,
    timed_sample,
)
from evidence.stats.power import tail_floor
from evidence.stats.window import window_ratio
from faceoff.formats.attempt.cell_record import CELL_FILE
from faceoff.formats.attempt.journal import JOURNAL_NAME, RequestOutcome
from faceoff.formats.attempt.request_plan import PLAN_NAME
from faceoff.formats.attempt.stalls import ENGINE_FILE, GPU_FILE
from faceoff.formats.attempt.summary import SUMMARY_FILE
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.formats.attempt.verdict import VERDICT_FILE
from faceoff.formats.bundle.comparison import (
    ArmCell,
    CellEntry,
    EngineFacts,
    MemoryFacts,
    PairEntry,
    PairVerdict,
    Ratio,
    RatioStatistic,
    RatioVerdict,
    StallFacts,
)
from faceoff.formats.bundle.lane_facts import SpecAcceptance
from guards.dispositions import PairStatus
from matrix.arm import Arm
from matrix.cell import Cell, rate_label
from workload.metrics import higher_is_better, measures_of

STATISTICS: dict[str, Statistic] = {"p50": statistics.median, "p95": p95, "p99": p99}
# A p99 is compared only where each arm has the requests to claim one (evidence.stats.power).
P99_FLOOR = tail_floor(0.99, DEFAULT_CONFIDENCE)
RATIO_METRICS = ("effective_prefill_tps", "ttfo_s", "ttft_s", "decode_tps", "e2e_s", "tpot_s")
PREFILL_HIST = "request_prefill_time_seconds"
QUEUE_HIST = "request_queue_time_seconds"


def stratum(cell: Cell) -> str:
    """Kind, input target and load: a closed loop's concurrency, an open loop's arrival and
    rate (or sweep), so that ratios never pool requests offered different loads."""
    if not cell.open_loop:
        return f"{cell.kind.value}/{cell.input_tokens}/c{cell.concurrency}"
    return f"{cell.kind.value}/{cell.input_tokens}/{cell.arrival.value}-{rate_label(cell)}"


def cell_entry(
    cell: Cell,
    arms: Sequence[Arm],
    attempts: Mapping[tuple[str, str], AttemptInputs],
    *,
    history: Mapping[tuple[str, str], Sequence[PastAttempt]],
    pairs: Sequence[PairStatus],
    seed: int,
    root: Path,
    tail_metrics: Sequence[str] = (),
    p99_metrics: Sequence[str] = (),
    window_metrics: Sequence[str] = (),
) -> CellEntry:
    """``tail_metrics``, ``p99_metrics``: the metrics whose p95 (p99) ratio a declared rule
    judges; ``window_metrics``: the cell-window figures it judges."""
    entries = [
        arm_cell(
            cell,
            arm.name,
            attempts.get((cell.id, arm.name)),
            root,
            history.get((cell.id, arm.name), ()),
        )
        for arm in arms
    ]
    comparable = [p.candidate for p in pairs if p.comparable]

    def pair_of(metrics: Sequence[str], statistic: RatioStatistic) -> list[Ratio]:
        return [
            ratio
            for candidate in comparable
            for ratio in pair_ratios(
                cell, attempts[(cell.id, arms[0].name)], attempts[(cell.id, candidate)],
                candidate, seed, metrics=metrics, statistic=statistic,
            )
        ]  # fmt: skip

    ratios = pair_of(RATIO_METRICS, "p50")
    return CellEntry(
        id=cell.id,
        kind=cell.kind.value,
        stratum=stratum(cell),
        input_target=cell.input_tokens,
        concurrency=cell.concurrency,
        requests=cell.scored_requests,
        warmups=cell.warmups,
        sampling=cell.sampling,
        variants=cell.variants,
        arms=entries,
        pairs=[
            PairEntry(
                candidate=p.candidate,
                comparable=p.comparable,
                reason=p.reason.value if p.reason else None,
                sentence=p.sentence,
                verdict=(
                    pair_verdict([r for r in ratios if r.candidate == p.candidate])
                    if p.comparable and cell.search is None
                    else "not compared"  # a search has no latency ratio: its answer pairs it
                ),
            )
            for p in pairs
        ],
        ratios=ratios,
        answers=[
            answer
            for candidate in comparable
            for answer in probe_answers.answers(
                cell,
                _side(cell, arms[0].name, attempts, root),
                _side(cell, candidate, attempts, root),
                seed=seed,
            )
        ],
        streams=probe_answers.stream_latencies(
            cell,
            [_side(cell, a.name, attempts, root) for a in arms if _accepted(cell, a, attempts)],
        ),
        tail_ratios=pair_of(tail_metrics, "p95") + pair_of(p99_metrics, "p99"),
        reuse=prefix_reuse(cell, [(a.name, attempts.get((cell.id, a.name))) for a in arms], root),
        figure_ratios=figure_ratios(entries, comparable),
        window_ratios=[
            ratio
            for candidate in comparable
            for ratio in window_ratios(
                cell,
                attempts[(cell.id, arms[0].name)],
                attempts[(cell.id, candidate)],
                name=candidate,
                seed=seed,
                metrics=window_metrics,
            )
        ],
    )


def window_ratios(
    cell: Cell,
    incumbent: AttemptInputs,
    candidate: AttemptInputs,
    *,
    name: str,
    seed: int,
    metrics: Sequence[str],
) -> list[Ratio]:
    """Candidate/incumbent ratios of the cell-window figures ``metrics`` (a declared rule
    judges them), each with its time-block interval (``evidence.stats.window``), where both
    arms have the figure."""
    if not metrics:
        return []  # nothing to compare: the journals are not read
    outcomes = (incumbent.scored(), candidate.scored())
    found = []
    for metric in metrics:
        base, top = (arm_window(cell, side, metric) for side in outcomes)
        interval = window_ratio(base, top, seed=seed) if base and top else None
        if interval is not None:
            found.append(interval_ratio(metric, interval, name=name, statistic="p50",
                                   concurrency=cell.concurrency))  # fmt: skip
    return found


def _accepted(cell: Cell, arm: Arm, attempts: Mapping[tuple[str, str], AttemptInputs]) -> bool:
    attempt = attempts.get((cell.id, arm.name))
    return attempt is not None and attempt.standing.disposition == "accepted"


def _side(
    cell: Cell, arm: str, attempts: Mapping[tuple[str, str], AttemptInputs], root: Path
) -> probe_answers.Side:
    attempt = attempts[(cell.id, arm)]
    journal = f"{attempt.where.relative(root)}/{JOURNAL_NAME}"
    return probe_answers.side(arm, attempt, cell, journal)


def arm_cell(
    cell: Cell,
    arm: str,
    attempt: AttemptInputs | None,
    root: Path,
    history: Sequence[PastAttempt] = (),
) -> ArmCell:
    """The arm's figures in the cell; a cell run without an attempt folder is pending."""
    standing = attempt.standing if attempt else NOT_RUN
    summary = attempt.summary if attempt else None
    telemetry = attempt.telemetry if attempt else None
    return ArmCell(
        arm=arm,
        attempt=attempt.where.attempt if attempt else None,
        disposition=standing.disposition,
        reason_code=standing.reason_code,
        reason=standing.reason,
        oom=standing.oom,
        planned=cell.scored_requests,
        statuses=summary.statuses if summary else {},
        refusals=summary.refusals if summary else 0,
        input_tokens=summary.input_tokens if summary else None,
        completion_tokens=summary.completion_tokens if summary else None,
        metrics=summary.metrics if summary else {},
        roles=summary.roles if summary else {},
        length_limited=summary.length_limited if summary else 0,
        unnamed_finishes=summary.unnamed_finishes if summary else 0,
        aggregate_output_tps=summary.aggregate_output_tps if summary else None,
        engine=engine_facts(telemetry),
        memory=memory_facts(telemetry),
        host_stalls=stall_facts(telemetry),
        sources=_sources(attempt.where, root) if attempt else {},
        history=attempt_history(history),
        goodput=summary.goodput if summary else None,
        energy=summary.energy if summary else None,
        speculation=speculation(telemetry),
        tails=summary.tails if summary else {},
    )


SOURCE_FILES = {  # ArmCell.sources key -> file of the attempt folder
    "summary": SUMMARY_FILE,
    "telemetry": TELEMETRY_FILE,
    "verdict": VERDICT_FILE,
    "cell": CELL_FILE,
    "journal": JOURNAL_NAME,
    "plan": PLAN_NAME,
    "engine": ENGINE_FILE,
    "gpu": GPU_FILE,
}


def _sources(where: AttemptDir, root: Path) -> dict[str, str]:
    """The attempt's native and summary files that exist, relative to the bundle."""
    return {
        name: f"{where.relative(root)}/{file}"
        for name, file in SOURCE_FILES.items()
        if (where.path / file).is_file()
    }


def engine_facts(telemetry: TelemetrySummary | None) -> EngineFacts | None:
    if telemetry is None:
        return None
    engine = telemetry.engine
    prefill, queue = engine.histograms.get(PREFILL_HIST), engine.histograms.get(QUEUE_HIST)
    preempt, hits = engine.counters.get("num_preemptions"), engine.counters.get("prefix_cache_hits")
    return EngineFacts(
        prefill_mean_s=prefill.mean if prefill else None,
        queue_mean_s=queue.mean if queue else None,
        max_running=engine.max_running,
        max_waiting=engine.max_waiting,
        max_kv_usage_perc=engine.max_kv_usage_perc,
        kv_pool_tokens=engine.kv_pool_tokens,
        preemptions=preempt.delta if preempt else None,
        prefix_cache_hits=hits.delta if hits else None,
    )


def speculation(telemetry: TelemetrySummary | None) -> SpecAcceptance | None:
    """Draft acceptance over the cell from the engine's counter deltas, where it speculates."""
    return None if telemetry is None else spec_acceptance(telemetry.engine.counters)


def stall_facts(telemetry: TelemetrySummary | None) -> StallFacts | None:
    stalls = telemetry.host_stalls if telemetry else None
    if stalls is None:
        return None
    return StallFacts(
        stalls=stalls.stalls,
        stalled_share=stalls.stalled_share,
        longest_ms=stalls.longest_ns / 1e6,
        client_wait_share=stalls.client_wait_share,
    )


def memory_facts(telemetry: TelemetrySummary | None) -> MemoryFacts | None:
    if telemetry is None:
        return None
    gpu, host = telemetry.gpu, telemetry.host
    return MemoryFacts(
        worst_gpu_index=gpu.worst_device if gpu else None,
        worst_gpu_used_bytes=gpu.worst_used_bytes if gpu else None,
        min_gpu_free_bytes=gpu.min_free_bytes if gpu else None,
        lane_peak_bytes=host.lane_peak_bytes,
        lane_source=host.lane_sources[0] if host.lane_sources else None,
        host_available_min_bytes=host.host_available_min_bytes,
    )


Timed = tuple[int, float, tuple[int, str]]  # send_ns, value, (request index, prompt hash)


def _timed_values(
    requests: Sequence[RequestOutcome], metrics: Sequence[str]
) -> dict[str, list[Timed]]:
    """Per metric, (send_ns, value, request key) over scored ok requests where it is defined:
    one pass over the requests for all the metrics (a cell's two journals hold thousands
    each)."""
    timed: dict[str, list[Timed]] = {metric: [] for metric in metrics}
    for r in requests:
        sent, kept, key = r.send_ns or 0, measures_of(r), (r.index, r.prompt_sha256)
        for metric, found in timed.items():
            value = kept[metric].value
            if value is not None:
                found.append((sent, value, key))
    return timed


def metric_samples(
    cell: Cell, requests: Sequence[RequestOutcome], metrics: Sequence[str]
) -> dict[str, Sample]:
    """Each metric's values over scored ok requests (``evidence.comparison.read.scored_ok``), with
    their blocks (``evidence.stats.bootstrap.timed_sample``) and request keys."""
    found = _timed_values(requests, metrics).items()
    return {metric: timed_sample(stratum(cell), timed, cell.concurrency) for metric, timed in found}


def metric_sample(cell: Cell, requests: Sequence[RequestOutcome], metric: str) -> Sample:
    """The metric's values over scored ok requests, with their blocks (``metric_samples``)."""
    return metric_samples(cell, requests, (metric,))[metric]


def pair_ratios(
    cell: Cell,
    incumbent: AttemptInputs,
    candidate: AttemptInputs,
    name: str,
    seed: int,
    *,
    metrics: Sequence[str] = RATIO_METRICS,
    statistic: RatioStatistic = "p50",
) -> list[Ratio]:
    """Candidate/incumbent ratios of one comparable pair, metric by metric (none for a
    bisection sweep: it offers each arm the rates its own results chose; its comparison is
    each arm's highest rate within SLO)."""
    if not metrics or (cell.sweep is not None and cell.sweep.rates is None):
        return []  # nothing to compare: the journals are not read
    # Read here, one pair at a time, so that a campaign's journals are never all in memory.
    samples = (
        metric_samples(cell, incumbent.scored_ok(), metrics),
        metric_samples(cell, candidate.scored_ok(), metrics),
    )
    pairs = ((metric, (samples[0][metric], samples[1][metric])) for metric in metrics)
    found = (
        _ratio(m, pair, name=name, seed=seed, statistic=statistic, concurrency=cell.concurrency)
        for m, pair in pairs
    )
    return [r for r in found if r is not None]


def _ratio(
    metric: str,
    samples: tuple[Sample, Sample],
    *,
    name: str,
    seed: int,
    statistic: RatioStatistic,
    concurrency: int,
) -> Ratio | None:
    if statistic == "p99" and min(independent(s.values) for s in samples) < P99_FLOOR:
        return None  # too few independent blocks to claim a p99: the rule finds it missing
    found = median_ratio(*samples, seed=seed, statistic=STATISTICS[statistic])
    if found is None:
        return None
    return interval_ratio(metric, found, name=name, statistic=statistic, concurrency=concurrency)


def interval_ratio(
    metric: str, found: RatioInterval, *, name: str, statistic: RatioStatistic, concurrency: int
) -> Ratio:
    """The comparison's ``Ratio`` of an interval, with its verdict (descriptive where the
    interval is not calibrated at ``concurrency``)."""
    better = higher_is_better(metric)
    verdict = ratio_verdict(found.low, found.high, higher_is_better=better)
    n = min(found.n_incumbent, found.n_candidate)
    if found.low >= found.high or not calibrated(n, concurrency):
        verdict = "descriptive"  # an interval that is not calibrated gives no verdict
    return Ratio(
        metric=metric,
        candidate=name,
        statistic=statistic,
        **asdict(found),
        higher_is_better=better,
        verdict=verdict,
    )


def ratio_verdict(low: float, high: float, *, higher_is_better: bool) -> RatioVerdict:
    """Better or worse for the candidate when the interval excludes 1, else no difference."""
    if low <= 1 <= high:
        return "no difference"
    return "better" if (low > 1) == higher_is_better else "worse"


def pair_verdict(ratios: Sequence[Ratio]) -> PairVerdict:
    """One word for a comparable pair: what every ratio that differs from 1 says, or mixed;
    descriptive when no ratio gives a verdict."""
    if ratios and all(r.verdict == "descriptive" for r in ratios):
        return "descriptive"
    said = {r.verdict for r in ratios} - {"no difference", "descriptive"}
    if not said:
        return "no difference"
    return "mixed" if len(said) > 1 else next(iter(said))
