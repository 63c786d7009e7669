"""Presence rules: one pure function per registry family, over a cell's artifacts.
The same concept at another layer: ``matrix.families``.

Each rule answers present, missing (with why, and the values it judged) or not applicable,
always as one ``Found``. A helper that finds the cell lacks what the family is judged over
raises ``Unjudgeable`` with its answer, which the registry's wrapper returns: no rule
branches on what a helper returned. Not applicable is answered only where the cell's own
frozen spec makes the family impossible by design; campaign-wide declarations (a host
without GPUs) come from the frozen matrix's registry (``guards.metric_guard``). Each
family's rule: docs/guards.md, "Presence rules".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.formats.attempt.telemetry import EngineSummary, FamilyCoverage, TelemetrySummary
from faceoff.formats.attempt.verdict import Evidence, EvidenceValue, Presence
from guards.artifacts import CellArtifacts, asks_for_decode
from matrix.thresholds import Thresholds
from workload import metrics
from workload.metrics import Measured

MAX_LISTED = 10  # indices listed in evidence; the count says how many in all


@dataclass(frozen=True)
class Found:
    presence: Presence
    why: str | None = None
    evidence: Evidence = field(default_factory=dict)


PresenceRule = Callable[[CellArtifacts, Thresholds], Found]


class Unjudgeable(Exception):
    """The cell lacks what a family is judged over; ``found`` is the rule's answer."""

    def __init__(self, found: Found) -> None:
        super().__init__(found.why)
        self.found = found


def _answering(rule: PresenceRule) -> PresenceRule:
    """``rule``, answering an ``Unjudgeable`` raised inside it with its ``found``."""

    def answered(art: CellArtifacts, t: Thresholds) -> Found:
        try:
            return rule(art, t)
        except Unjudgeable as exc:
            return exc.found

    return answered


def present(**evidence: EvidenceValue) -> Found:
    return Found(Presence.PRESENT, None, dict(evidence))


def missing(why: str, **evidence: int | float | str | bool | list[int] | None) -> Found:
    return Found(Presence.MISSING, why, dict(evidence))


# --- journal families -------------------------------------------------------------------

RequestCheck = Callable[[RequestOutcome], Measured]


def _usage(field_name: str) -> RequestCheck:
    def check(r: RequestOutcome) -> Measured:
        if r.usage is None:
            return Measured.undefined("the server reported no usage")
        value = getattr(r.usage, field_name)
        return Measured(value) if value > 0 else Measured.undefined(f"usage.{field_name} is 0")

    return check


def _metric(name: str) -> RequestCheck:
    """A request metric (``workload.metrics.REQUEST_METRICS``), as the line measured it."""
    return lambda r: metrics.metric_of(r, name)


NO_DECODE_BY_DESIGN = (
    "every scored request asks for max_tokens = 1 (a prefill probe): its one token may be "
    "reasoning and there is no interval between tokens, by design of the cell"
)


SEARCH_NO_DECODE = (
    "a needle search's probes answer with a marker of a few tokens, which may arrive in one "
    "chunk: they are no decode samples, by design of the cell"
)
SEARCH_NOT_THROUGHPUT = (
    "a needle search sends one probe at a time, each of another length: its probes are no "
    "throughput samples, by design of the cell"
)


def _searches(art: CellArtifacts) -> bool:
    """Whether the attempt is a needle search's (its plan says so)."""
    return art.plan is not None and art.plan.cell.search is not None


def per_request(
    check: RequestCheck, *, needs_decode: bool = False, decode_sample: bool = False
) -> PresenceRule:
    """Present when the metric is defined for every scored ok request it applies to;
    ``decode_sample``: a decode metric, which a needle search's probes do not sample."""

    def rule(art: CellArtifacts, _: Thresholds) -> Found:
        ok = art.scored_ok
        if needs_decode and art.scored and not any(asks_for_decode(r) for r in art.scored):
            return Found(Presence.NOT_APPLICABLE, NO_DECODE_BY_DESIGN)
        if decode_sample and _searches(art):
            return Found(Presence.NOT_APPLICABLE, SEARCH_NO_DECODE)
        if not ok:
            return missing(f"no scored request ended ok (0 of {len(art.scored)})", requests=0)
        judged = art.scored_ok_decoding if needs_decode else ok
        undefined = [(r.index, m.reason) for r in judged if (m := check(r)).value is None]
        if undefined:
            first_index, first_why = undefined[0]
            return missing(
                f"undefined for {len(undefined)} of {len(judged)} scored ok requests "
                f"(request {first_index}: {first_why})",
                requests=len(judged),
                undefined=[i for i, _ in undefined[:MAX_LISTED]],
            )
        return present(requests=len(judged))

    return rule


def aggregate_throughput(art: CellArtifacts, _: Thresholds) -> Found:
    if _searches(art):
        return Found(Presence.NOT_APPLICABLE, SEARCH_NOT_THROUGHPUT)
    measured = metrics.aggregate_output_throughput(art.scored)
    if measured.value is None:
        return missing(measured.reason or "undefined")
    return present(tokens_per_s=round(measured.value, 3))


# --- engine families --------------------------------------------------------------------


def _telemetry(art: CellArtifacts) -> TelemetrySummary:
    if art.telemetry is None:
        why = "cell.json has no window (no request was sent): nothing to judge over"
        raise Unjudgeable(missing(why))
    return art.telemetry


def _engine(art: CellArtifacts) -> EngineSummary:
    return _telemetry(art).engine


def histogram(name: str, *, needs_sum: bool) -> PresenceRule:
    """Exact sum/count deltas over the cell, with observations in it."""

    def rule(art: CellArtifacts, _: Thresholds) -> Found:
        delta = _engine(art).histograms.get(name)
        if delta is None:
            return missing(f"{name} is absent from the engine samples")
        values = {"sum_delta": delta.sum_delta, "count_delta": delta.count_delta}
        if not delta.exact:
            return missing(f"{name} deltas are inexact: {delta.why_inexact}", **values)
        if delta.count_delta <= 0 or (needs_sum and delta.sum_delta <= 0):
            return missing(f"{name} observed nothing in the cell", **values)
        return present(**values)

    return rule


def _require_cadence(period_s: float, required_s: float, source: str) -> None:
    if period_s > required_s:
        raise Unjudgeable(
            missing(
                f"{source} samples were taken every {period_s} s; "
                f"the matrix requires {required_s} s",
                period_s=period_s,
                required_period_s=required_s,
            )
        )


def covered(cov: FamilyCoverage | None, what: str, t: Thresholds) -> Found:
    """Coverage and longest gap against the matrix's thresholds."""
    if cov is None:
        return missing(f"{what} was never expected by the collectors")
    values = {
        "coverage": round(cov.coverage, 4),
        "carried": cov.carried,
        "max_consecutive_misses": cov.max_consecutive_misses,
        "min_coverage": t.min_coverage,
        "max_allowed_misses": t.max_consecutive_misses,
        "late": cov.late,
        "max_lateness_ms": round(cov.max_lateness_ns / 1e6, 3),
    }
    if cov.coverage < t.min_coverage or cov.max_consecutive_misses > t.max_consecutive_misses:
        return missing(
            f"{what} carried in {cov.coverage:.0%} of the cell's ticks with up to "
            f"{cov.max_consecutive_misses} never taken, failed or without it in a row (the "
            f"matrix requires ≥ {t.min_coverage:.0%} and ≤ {t.max_consecutive_misses}; "
            f"{cov.late} late sample(s) counted)",
            **values,
        )
    return present(**values)


def engine_gauge(canonical: str) -> PresenceRule:
    def rule(art: CellArtifacts, t: Thresholds) -> Found:
        engine = _engine(art)
        _require_cadence(art.record.collector_settings.engine_period_s, t.engine_period_s, "engine")
        found = covered(engine.families.get(canonical), canonical, t)
        wire = engine.aliased.get(canonical)
        return _with(found, read_as=wire) if wire else found

    return rule


def _with(found: Found, **extra: str) -> Found:
    return Found(found.presence, found.why, {**found.evidence, **extra})


def kv_pool(art: CellArtifacts, _: Thresholds) -> Found:
    engine = _engine(art)
    if engine.kv_pool_tokens is None:
        return missing(
            "cache_config_info gave no block_size × num_gpu_blocks",
            block_size=engine.block_size,
            num_gpu_blocks=engine.num_gpu_blocks,
        )
    return present(
        kv_pool_tokens=engine.kv_pool_tokens,
        block_size=engine.block_size,
        num_gpu_blocks=engine.num_gpu_blocks,
    )


def counters(*names: str) -> PresenceRule:
    """Counters with exact deltas over the cell (a name ending in '{' matches its labels)."""

    def rule(art: CellArtifacts, _: Thresholds) -> Found:
        engine = _engine(art)
        values: dict[str, float] = {}
        for name in names:
            keys = [k for k in engine.counters if k == name or k.startswith(name + "{")]
            if not keys:
                return missing(f"counter {name} is absent from the engine samples")
            inexact = [engine.counters[k] for k in keys if not engine.counters[k].exact]
            if inexact:
                return missing(f"counter {name} delta is inexact: {inexact[0].why_inexact}")
            values[name] = sum(engine.counters[k].delta for k in keys)
        return present(**values)

    return rule


# --- GPU and host families --------------------------------------------------------------


def gpu_memory(art: CellArtifacts, t: Thresholds) -> Found:
    telemetry = _telemetry(art)
    if telemetry.gpu is None:
        return missing(
            "no GPU samples: the arm has no GPU ids (on a host without GPUs, declare "
            "gpu_memory under [families.not_applicable] in the matrix)"
        )
    return _memory_covered(art, t, "GPU", telemetry.gpu.families.get("gpu_memory"), "GPU memory")


def host_family(key: str, what: str) -> PresenceRule:
    def rule(art: CellArtifacts, t: Thresholds) -> Found:
        host = _telemetry(art).host
        return _memory_covered(art, t, "host", host.families.get(key), what)

    return rule


def _memory_covered(
    art: CellArtifacts, t: Thresholds, source: str, cov: FamilyCoverage | None, what: str
) -> Found:
    """Sampled at the matrix's memory cadence or faster, and covering the cell."""
    _require_cadence(art.record.collector_settings.memory_period_s, t.memory_period_s, source)
    return covered(cov, what, t)


_RULES: Mapping[str, PresenceRule] = {
    "prompt_tokens": per_request(_usage("prompt_tokens")),
    "completion_tokens": per_request(_usage("completion_tokens")),
    "ttfo": per_request(_metric("ttfo_s")),
    "ttft": per_request(_metric("ttft_s"), needs_decode=True),
    "effective_prefill": per_request(_metric("effective_prefill_tps")),
    "decode_rate": per_request(_metric("decode_tps"), needs_decode=True, decode_sample=True),
    "e2e": per_request(_metric("e2e_s")),
    "tpot": per_request(_metric("tpot_s"), needs_decode=True, decode_sample=True),
    "aggregate_output_throughput": aggregate_throughput,
    "engine_prefill_time": histogram("request_prefill_time_seconds", needs_sum=True),
    "engine_queue_time": histogram("request_queue_time_seconds", needs_sum=False),
    "engine_running": engine_gauge("num_requests_running"),
    "engine_waiting": engine_gauge("num_requests_waiting"),
    "kv_cache_usage": engine_gauge("kv_cache_usage_perc"),
    "kv_pool_tokens": kv_pool,
    "gpu_memory": gpu_memory,
    "lane_cgroup_memory": host_family("lane_memory", "lane memory"),
    "host_available_memory": host_family("host_available_memory", "host available memory"),
    "preemptions": counters("num_preemptions"),
    "prefix_cache_hits": counters("prefix_cache_hits", "prefix_cache_queries"),
    "engine_counter_reconciliation": counters(
        "prompt_tokens", "generation_tokens", "request_success"
    ),
}
PRESENCE_RULES: Mapping[str, PresenceRule] = MappingProxyType(
    {name: _answering(rule) for name, rule in _RULES.items()}
)
