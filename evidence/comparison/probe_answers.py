"""The answer of each probe cell to its question, per comparable pair. Pure.

A figure over requests gets the paired ratio of medians with its block-bootstrap
interval (``evidence.stats.bootstrap``); a figure of the whole cell (an aggregate, a share, a
counter ratio) is one value per arm, so its ratio has no interval, and says so. Each probe
kind's question and figure: docs/evidence.md, "Probe answers".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from evidence.attempt.roles import by_stream
from evidence.comparison.read import AttemptInputs
from evidence.comparison.reuse import hit_ratio
from evidence.stats.bootstrap import Sample, describe, median_ratio, timed_sample
from faceoff.formats.attempt.journal import JOURNAL_NAME, RequestOutcome, RequestRole, turn_role
from faceoff.formats.attempt.summary import SearchSummary
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.formats.bundle.probe_figures import ProbeAnswer, RoleFigure, StreamLatency, Unit
from matrix.cell import Cell, WorkloadKind
from workload.metrics import NS_PER_S, metric_of

TURN_2_LABELS = {
    "back_to_back": "turn-2 TTFT (prefix cached by turn 1)",
    "after_another": "turn-2 TTFT (returning after another session)",
}
ONE_FIGURE = "one figure per arm over the whole cell: no interval"
NO_RATIO = "no ratio: a side has no value"
Value = Callable[[RequestOutcome], float | None]
Keep = Callable[[Sequence[RequestOutcome]], list[RequestOutcome]]


@dataclass(frozen=True)
class Side:
    """One arm's counted scored requests in the cell, and its telemetry."""

    arm: str
    requests: tuple[RequestOutcome, ...]
    telemetry: TelemetrySummary | None
    journal: str  # the journal, relative to the bundle
    search: SearchSummary | None = None  # a needle search's probes and bounds


def side(arm: str, attempt: AttemptInputs, cell: Cell, journal: str) -> Side:
    summary = attempt.summary
    search = summary.needle_search if summary is not None else None
    requests = tuple(attempt.counted(cell.length_finishes))
    return Side(arm, requests, attempt.telemetry, journal, search)


def answers(cell: Cell, incumbent: Side, candidate: Side, *, seed: int) -> list[ProbeAnswer]:
    """Every answer the cell's kind gives for this pair; none for a kind that asks nothing."""
    pair = _Pair(cell, incumbent, candidate, seed)
    kind = cell.kind
    if kind is WorkloadKind.PREFILL_PROBE:
        found = [pair.metric("effective_prefill", "effective prefill", "effective_prefill_tps")]
        if cell.concurrency > 1:
            found.append(pair.whole("aggregate_prefill", "aggregate prefill throughput",
                                    "tok/s", aggregate_prefill))  # fmt: skip
        return found
    if kind in (WorkloadKind.DECODE_STRUCTURED, WorkloadKind.DECODE_PROSE):
        return [pair.metric("decode", f"{kind.value.split('_')[1]} decode", "decode_tps")]
    if kind is WorkloadKind.NEEDLE:
        return [pair.whole("needle_recall", "needle marker recalled verbatim", "share", recall)]
    if kind is WorkloadKind.HEAD_OF_LINE:
        return [
            pair.metric("short_ttft", "short-request TTFT behind the long prefill", "ttft_s",
                        role=RequestRole.SHORT, keep=behind_long),
            pair.values("decode_stall", "longest decode stall during the long prefill", "max",
                        decode_stalls),
        ]  # fmt: skip
    if kind is WorkloadKind.SESSION_REUSE:
        return [
            pair.metric("turn2_ttft", TURN_2_LABELS[cell.session_order], "ttft_s",
                        role=RequestRole.TURN_2),
            pair.counters("prefix_hit_ratio", "prefix-cache hit ratio over the cell"),
        ]  # fmt: skip
    return _search_or_turns(pair, cell)


def _search_or_turns(pair: _Pair, cell: Cell) -> list[ProbeAnswer]:
    """A needle search's verified length; an agentic cell's TTFT turn by turn."""
    if cell.kind is WorkloadKind.NEEDLE_SEARCH:
        return [pair.search("needle_search", "longest verified needle retrieval")]
    shape = cell.agentic if cell.kind is WorkloadKind.AGENTIC else None
    if shape is None:
        return []
    return [
        pair.metric(f"agentic_turn{k}_ttft", agentic_label(k, shape.tool_result_tokens), "ttft_s",
                    role=turn_role(k), beside=False)
        for k in range(1, shape.turns + 1)
    ]  # fmt: skip


def agentic_label(turn: int, tool_result_tokens: int) -> str:
    if turn == 1:
        return "agentic turn 1 TTFT (system prompt, tool schema and task)"
    return (
        f"agentic turn {turn} TTFT (after {turn - 1} tool result(s) of {tool_result_tokens} tokens)"
    )


def stream_latencies(cell: Cell, sides: Sequence[Side]) -> list[StreamLatency]:
    """The per-stream TTFO table of a concurrent prefill probe; empty for other cells."""
    if cell.kind is not WorkloadKind.PREFILL_PROBE or cell.concurrency < 2:
        return []
    rows = []
    for s in sides:
        streams = by_stream(s.requests)
        p50s = []
        for stream in range(cell.concurrency):
            dist = describe(_defined(streams.get(stream, []), _metric("ttfo_s")))
            p50s.append(dist.p50 if dist else None)
        rows.append(StreamLatency(arm=s.arm, ttfo_s=p50s))
    return rows


def aggregate_prefill(requests: Sequence[RequestOutcome]) -> float | None:
    """Σ prompt tokens / (last first output − first send) over requests with both."""
    timed = [
        (o.usage.prompt_tokens, o.send_ns, o.first_output_ns)
        for o in requests
        if o.usage is not None and o.send_ns is not None and o.first_output_ns is not None
    ]
    if not timed:
        return None
    span = max(f for _, _, f in timed) - min(s for _, s, _ in timed)
    return sum(t for t, _, _ in timed) / (span / NS_PER_S) if span > 0 else None


def recall(requests: Sequence[RequestOutcome]) -> float | None:
    """Share of the needle requests that answered with the marker verbatim."""
    answered = [o.marker_found for o in requests if o.marker_found is not None]
    return sum(answered) / len(answered) if answered else None


def behind_long(requests: Sequence[RequestOutcome]) -> list[RequestOutcome]:
    """The requests sent at or after the long prefill (all but it, when it was never sent)."""
    sent = _long_send(requests)
    return [o for o in requests if sent is None or (o.send_ns or 0) >= sent]


def decode_stalls(requests: Sequence[RequestOutcome]) -> list[float]:
    """Per short request already sent when the long prefill landed, its longest
    inter-chunk gap that overlaps the long prefill (its send to its first output)."""
    long = next((o for o in requests if o.role is RequestRole.LONG_PREFILL), None)
    if long is None or long.send_ns is None or long.first_output_ns is None:
        return []
    window = (long.send_ns, long.first_output_ns)
    decoding = (
        o for o in requests if o.role is RequestRole.SHORT and (o.send_ns or 0) < long.send_ns
    )
    return [s for s in (_stall(o, window) for o in decoding) if s is not None]


def _long_send(requests: Sequence[RequestOutcome]) -> int | None:
    return next((o.send_ns for o in requests if o.role is RequestRole.LONG_PREFILL), None)


def _stall(outcome: RequestOutcome, window: tuple[int, int]) -> float | None:
    """The longest gap between consecutive chunks of ``outcome`` that overlaps ``window``."""
    if outcome.send_ns is None or len(outcome.chunk_offsets_us) < 2:
        return None
    times = [outcome.send_ns + us * 1000 for us in outcome.chunk_offsets_us]
    gaps = [(b - a) / NS_PER_S for a, b in pairwise(times) if a < window[1] and b > window[0]]
    return max(gaps) if gaps else None


def _metric(name: str) -> Value:
    return lambda o: metric_of(o, name).value


def _defined(requests: Sequence[RequestOutcome], value: Value) -> list[float]:
    return [v for v in (value(o) for o in requests) if v is not None]


@dataclass(frozen=True)
class _Question:
    code: str
    label: str
    statistic: str
    unit: Unit
    role: RequestRole | None = None


@dataclass(frozen=True)
class _Pair:
    cell: Cell
    incumbent: Side
    candidate: Side
    seed: int

    def metric(
        self,
        question: str,
        label: str,
        metric: str,
        *,
        role: RequestRole | None = None,
        keep: Keep | None = None,
        beside: bool = True,
    ) -> ProbeAnswer:
        """p50 of a request metric over the role's requests (those ``keep`` keeps), the
        ratio with its interval; ``beside``: the other roles' p50s with it."""
        value = _metric(metric)
        inc, cand = (self._sample(s, value, role, keep) for s in (self.incumbent, self.candidate))
        others = [
            RoleFigure(role=r.value, incumbent=_p50(self._sample(self.incumbent, value, r)),
                       candidate=_p50(self._sample(self.candidate, value, r)))
            for r in self._roles() if beside and role is not None and r is not role
        ]  # fmt: skip
        unit: Unit = "tok/s" if metric.endswith("_tps") else "s"
        return self._paired(_Question(question, label, "p50", unit, role), inc, cand, _p50, others)

    def values(
        self,
        question: str,
        label: str,
        statistic: str,
        values: Callable[[Sequence[RequestOutcome]], list[float]],
    ) -> ProbeAnswer:
        """The largest of per-request values; the ratio of their medians with its interval."""
        inc = Sample(self._stratum, tuple(values(self.incumbent.requests)))
        cand = Sample(self._stratum, tuple(values(self.candidate.requests)))
        return self._paired(_Question(question, label, statistic, "s"), inc, cand, _max, [])

    def whole(
        self,
        question: str,
        label: str,
        unit: Unit,
        figure: Callable[[Sequence[RequestOutcome]], float | None],
    ) -> ProbeAnswer:
        """A figure of the whole cell per arm: its ratio, without an interval."""
        inc, cand = figure(self.incumbent.requests), figure(self.candidate.requests)
        asked = _Question(question, label, "over the cell", unit)
        return self._one_figure(asked, inc, cand, self._journals)

    def search(self, question: str, label: str) -> ProbeAnswer:
        """Each arm's verified length: one figure per arm, the probes it rests on counted."""
        inc, cand = self.incumbent.search, self.candidate.search
        answer = self._one_figure(
            _Question(question, label, "verified", "tokens"),
            _verified(inc),
            _verified(cand),
            self._journals,
        )
        counts = {"n_incumbent": _probes(inc), "n_candidate": _probes(cand)}
        return answer.model_copy(update=counts)

    def counters(self, question: str, label: str) -> ProbeAnswer:
        """A ratio of the engine's counter deltas over the cell, per arm."""
        inc, cand = (hit_ratio(s.telemetry) for s in (self.incumbent, self.candidate))
        telemetry = [j.replace(JOURNAL_NAME, TELEMETRY_FILE) for j in self._journals]
        asked = _Question(question, label, "hits / queries", "share")
        return self._one_figure(asked, inc, cand, telemetry)

    def _paired(
        self,
        q: _Question,
        inc: Sample,
        cand: Sample,
        figure: Callable[[Sample], float | None],
        beside: list[RoleFigure],
    ) -> ProbeAnswer:
        found = median_ratio(inc, cand, seed=self.seed)
        return ProbeAnswer(
            question=q.code, label=q.label, candidate=self.candidate.arm,
            role=q.role.value if q.role else None, statistic=q.statistic, unit=q.unit,
            incumbent_value=figure(inc), candidate_value=figure(cand),
            ratio=found.ratio if found else None, low=found.low if found else None,
            high=found.high if found else None, confidence=found.confidence if found else None,
            n_incumbent=len(inc.values), n_candidate=len(cand.values),
            interval_note=None if found else NO_RATIO, beside=beside, sources=self._journals,
        )  # fmt: skip

    def _one_figure(
        self, q: _Question, inc: float | None, cand: float | None, sources: list[str]
    ) -> ProbeAnswer:
        ratio = cand / inc if inc and cand is not None else None
        return ProbeAnswer(
            question=q.code, label=q.label, candidate=self.candidate.arm, role=None,
            statistic=q.statistic, unit=q.unit, incumbent_value=inc, candidate_value=cand,
            ratio=ratio, low=None, high=None, confidence=None,
            n_incumbent=len(self.incumbent.requests), n_candidate=len(self.candidate.requests),
            interval_note=ONE_FIGURE if ratio is not None else NO_RATIO, beside=[],
            sources=sources,
        )  # fmt: skip

    @property
    def _journals(self) -> list[str]:
        return [self.incumbent.journal, self.candidate.journal]

    @property
    def _stratum(self) -> str:
        return f"{self.cell.kind.value}/{self.cell.input_tokens}/c{self.cell.concurrency}"

    def _roles(self) -> list[RequestRole]:
        present = {o.role for s in (self.incumbent, self.candidate) for o in s.requests}
        return [r for r in RequestRole if r in present]

    def _sample(
        self, s: Side, value: Value, role: RequestRole | None, keep: Keep | None = None
    ) -> Sample:
        requests = keep(s.requests) if keep else s.requests
        timed = [
            (o.send_ns or 0, v, (o.index, o.prompt_sha256))
            for o in requests
            if role is None or o.role is role
            if (v := value(o)) is not None
        ]
        return timed_sample(self._stratum, timed, self.cell.concurrency)


def _verified(search: SearchSummary | None) -> float | None:
    return None if search is None or search.verified_tokens is None else search.verified_tokens


def _probes(search: SearchSummary | None) -> int:
    return 0 if search is None else len(search.probes)


def _max(sample: Sample) -> float | None:
    return max(sample.values, default=None)


def _p50(sample: Sample) -> float | None:
    dist = describe(sample.values)
    return dist.p50 if dist else None
