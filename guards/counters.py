"""Validity rules over the engine's counters: restarts, preemptions, cold cache, reconciliation.

Reconciliation compares the engine's deltas between the baseline and the final sample with
the journal's usage sums over every request the lane served between them, warmups included.
A request the engine may have counted in part (one overlapping a boundary sample, or ended
without usage) widens the expected range instead of being guessed. The rules in full:
docs/guards.md, "Validity rules".
"""

from __future__ import annotations

from dataclasses import dataclass

from faceoff.formats.attempt.collector_samples import EngineSample
from faceoff.formats.attempt.journal import RequestOutcome, Status
from faceoff.formats.attempt.telemetry import CounterDelta, EngineSummary
from faceoff.formats.attempt.verdict import RuleResult
from faceoff.formats.reasons import Reason
from faceoff.result import Maybe
from guards.artifacts import CellArtifacts
from guards.outcomes import failed, judged, not_applicable, not_evaluated, passed
from matrix.cell import Cell
from matrix.thresholds import Thresholds

FINISHED = ("stop", "length")  # request_success labels of a request that ran to its end
SUCCESS_KEYS = tuple(f'request_success{{finished_reason="{r}"}}' for r in FINISHED)
NO_WINDOW = "cell.json has no window (no request was sent)"


def _engine(art: CellArtifacts) -> EngineSummary | None:
    return None if art.telemetry is None else art.telemetry.engine


def _exact(engine: EngineSummary, name: str) -> Maybe[CounterDelta]:
    """The counter's delta, or why it cannot be used."""
    delta = engine.counters.get(name)
    if delta is None:
        return Maybe.lacking(f"{name} is not in the engine samples")
    if not delta.exact:
        return Maybe.lacking(f"{name} delta is inexact ({delta.why_inexact})")
    return Maybe.of(delta)


def engine_restarted(art: CellArtifacts, _: Cell, __: Thresholds) -> RuleResult:
    code = Reason.ENGINE_RESTARTED
    engine = _engine(art)
    if engine is None:
        return not_evaluated(code, NO_WINDOW)
    if engine.resets == 0:
        return passed(code, "no counter reset between the baseline and final samples", resets=0)
    return failed(
        code,
        f"the engine's counters reset {engine.resets} time(s) during the cell (the lane "
        f"restarted; increments before the restart are lost): {'; '.join(engine.delta_notes)}",
        resets=engine.resets,
    )


def preemptions(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    code = Reason.PREEMPTIONS
    engine = _engine(art)
    if engine is None:
        return not_evaluated(code, NO_WINDOW)
    found = _exact(engine, "num_preemptions")
    if found.value is None:
        return not_evaluated(code, f"preemptions cannot be counted: {found.reason}")
    count = int(found.value.delta)
    return judged(
        code,
        count <= t.max_preemptions,
        f"{count} engine preemption(s) during the cell (the matrix allows {t.max_preemptions})",
        preemptions=count,
        max_preemptions=t.max_preemptions,
    )


def warm_cache(art: CellArtifacts, cell: Cell, t: Thresholds) -> RuleResult:
    code = Reason.WARM_CACHE
    if not cell.cold:
        return not_applicable(code, f"a {cell.kind.value} cell reuses its prefix cache by design")
    engine = _engine(art)
    if engine is None:
        return not_evaluated(code, NO_WINDOW)
    found_hits = _exact(engine, "prefix_cache_hits")
    found_queries = _exact(engine, "prefix_cache_queries")
    hits, queries = found_hits.value, found_queries.value
    if hits is None or queries is None:
        why = found_hits.reason or found_queries.reason
        return not_evaluated(code, f"prefix-cache hits cannot be counted: {why}")
    template = template_hits(art, engine)
    beyond = max(0.0, hits.delta - template)
    ratio = beyond / queries.delta if queries.delta > 0 else 0.0
    evidence = {
        "hits": int(hits.delta),
        "queries": int(queries.delta),
        "template_hits_allowed": template,
        "hit_ratio": round(ratio, 6),
        "max_hit_ratio": t.cold_cache_max_hit_ratio,
    }
    shared = f", {template} of them allowed for the template's shared prefix" if template else ""
    sentence = (
        f"{int(hits.delta)} of {int(queries.delta)} queried prompt tokens hit the prefix cache"
        f"{shared} ({ratio:.1%} beyond it) in a cold cell (the matrix allows "
        f"{t.cold_cache_max_hit_ratio:.1%})"
    )
    preempted = _exact(engine, "num_preemptions").value
    if ratio > t.cold_cache_max_hit_ratio and preempted is not None and preempted.delta:
        # A preempted request is recomputed and re-reads its own blocks: those count as hits.
        return not_evaluated(
            code,
            f"{sentence}, but {int(preempted.delta)} preemption(s) make a request's re-read of "
            "its own blocks indistinguishable from warm-cache contamination",
            **evidence,
        )
    return judged(code, ratio <= t.cold_cache_max_hit_ratio, sentence, **evidence)


def template_hits(art: CellArtifacts, engine: EngineSummary) -> int:
    """Hits a cold cell cannot avoid: the whole KV blocks of the prompt prefix every request
    shares (the chat template's preamble before the nonce), once per request sent."""
    shared = art.plan.shared_prefix_tokens if art.plan else None
    if not shared:
        return 0
    block = engine.block_size or 1
    sent = sum(1 for o in art.own_lines if o.send_ns is not None)
    return (shared // block) * block * sent


@dataclass
class Expected:
    """What the journal says the engine must have counted: exact part plus a slack range."""

    prompt: int = 0
    generation: int = 0
    finished: int = 0
    prompt_slack: int = 0
    generation_slack: int = 0
    finished_slack: int = 0
    served: int = 0  # requests wholly inside the span
    uncertain: int = 0  # overlapping a boundary sample, or inside without usage

    def add(self, outcome: RequestOutcome, *, inside: bool) -> None:
        usage = outcome.usage
        if inside and usage is not None:
            self.served += 1
            self.prompt += usage.prompt_tokens
            self.generation += usage.completion_tokens
            self.finished += outcome.finish_reason in FINISHED
            return
        self.uncertain += 1
        self.prompt_slack += usage.prompt_tokens if usage else outcome.input_tokens
        self.generation_slack += usage.completion_tokens if usage else outcome.max_tokens
        self.finished_slack += 1


@dataclass(frozen=True)
class Span:
    """When the baseline and final samples were read (each read takes its latency)."""

    baseline_from_ns: int
    baseline_done_ns: int
    final_from_ns: int
    final_done_ns: int

    @classmethod
    def of(cls, baseline: EngineSample, final: EngineSample) -> Span:
        return cls(
            baseline.actual_ns,
            baseline.actual_ns + baseline.latency_ns,
            final.actual_ns,
            final.actual_ns + final.latency_ns,
        )

    def outside(self, outcome: RequestOutcome) -> bool:
        assert outcome.send_ns is not None
        return outcome.end_ns <= self.baseline_from_ns or outcome.send_ns >= self.final_done_ns

    def inside(self, outcome: RequestOutcome) -> bool:
        assert outcome.send_ns is not None
        return outcome.send_ns >= self.baseline_done_ns and outcome.end_ns <= self.final_from_ns


def expected(outcomes: list[RequestOutcome], span: Span) -> Expected:
    """Sum the journal over the span; requests wholly before or after it do not count."""
    totals = Expected()
    for outcome in outcomes:
        if outcome.send_ns is None or outcome.status is Status.HTTP_ERROR:
            continue  # never reached the engine
        if not span.outside(outcome):
            totals.add(outcome, inside=span.inside(outcome))
    return totals


def _within(engine_value: int, low: int, slack: int, tolerance: int) -> bool:
    return low - tolerance <= engine_value <= low + slack + tolerance


def _drained(final: EngineSample) -> bool:
    busy = final.metrics.requests_in_engine if final.metrics else 0.0
    return final.final and busy == 0


def counter_reconciliation(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    code = Reason.COUNTER_MISMATCH
    engine = _engine(art)
    if engine is None:
        return not_evaluated(code, NO_WINDOW)
    deltas = {n: _exact(engine, n) for n in ("prompt_tokens", "generation_tokens")}
    unusable = [d.reason for d in deltas.values() if d.reason is not None]
    baseline, final = art.sample(engine.baseline_seq), art.sample(engine.final_seq)
    if unusable or baseline is None or final is None:
        why = unusable[0] if unusable else "the baseline or final engine sample is missing"
        return not_evaluated(code, f"engine counters cannot be reconciled: {why}")
    want = expected(art.outcomes, Span.of(baseline, final))
    got = _engine_totals(engine)
    return _compare(code, got, want, t.counter_tolerance_tokens, drained=_drained(final))


def _engine_totals(engine: EngineSummary) -> tuple[int, int, int]:
    prompt = int(engine.counters["prompt_tokens"].delta)
    generation = int(engine.counters["generation_tokens"].delta)
    finished = sum(int(engine.counters[k].delta) for k in SUCCESS_KEYS if k in engine.counters)
    return prompt, generation, finished


def _compare(
    code: Reason, got: tuple[int, int, int], want: Expected, tolerance: int, *, drained: bool
) -> RuleResult:
    prompt, generation, finished = got
    checks = [
        ("prompt tokens", prompt, want.prompt, want.prompt_slack, tolerance),
        ("generation tokens", generation, want.generation, want.generation_slack, tolerance),
        ("finished requests", finished, want.finished, want.finished_slack, 0),
    ]
    off = [c for c in checks if not _within(*c[1:])]
    evidence = {
        "engine_prompt_tokens": prompt,
        "journal_prompt_tokens": want.prompt,
        "engine_generation_tokens": generation,
        "journal_generation_tokens": want.generation,
        "engine_finished": finished,
        "journal_finished": want.finished,
        "requests_served": want.served,
        "requests_uncertain": want.uncertain,
        "tolerance_tokens": tolerance,
        "drained": drained,
    }
    scope = f"over {want.served} request(s) the lane served in the cell"
    if want.uncertain:
        scope += f" and {want.uncertain} it may have counted in part"
    if not off:
        return passed(code, f"engine counters equal the journal's usage sums {scope}", **evidence)
    return failed(code, _mismatch_sentence(off, scope, drained), **evidence)


def _mismatch_sentence(off: list[tuple[str, int, int, int, int]], scope: str, drained: bool) -> str:
    parts = []
    for what, engine_value, low, slack, tolerance in off:
        expected_text = f"{low}" if not slack else f"{low}..{low + slack}"
        parts.append(
            f"engine {what} {engine_value} vs journal {expected_text} "
            f"(off by {engine_value - low:+d}; tolerance {tolerance})"
        )
    tail = "" if drained else "; the engine had not drained at the final sample"
    return f"{'; '.join(parts)} {scope}{tail}"
