"""Request and cell metrics, exactly as ARCHITECTURE §3 defines them.

Pure functions over journal lines. A metric that a request cannot define (a
one-token output has no decode interval) is ``None`` with the reason, never a
division error and never a made-up number.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

from faceoff.formats.attempt.journal import MEASURES_KEPT, Phase, RequestOutcome, Usage

NS_PER_S = 1_000_000_000

DEFINITIONS = """\
## Metric definitions

All request times are `time.perf_counter_ns()` readings of the client process
(CLOCK_MONOTONIC), taken when bytes were handed to or returned by the socket; one
UTC wall-clock anchor read together with a monotonic anchor dates them.
Token counts come from the API's `usage`, never from words or chunks.

- **TTFO** (time to first output) = t(first non-empty reasoning *or* visible content
  chunk) − t(send). A role-only chunk with empty content is not output.
- **TTFT** (visible) = t(first non-empty visible `content` chunk) − t(send). Undefined
  for a reasoning-only answer.
- **Effective prefill** = usage.prompt_tokens / TTFO, in tok/s. It includes queueing,
  scheduling, cache effects and the first output step: it is an end-to-end rate, not a
  kernel rate.
- **Decode** = (usage.completion_tokens − 1) / (t(last token chunk) − t(first output)),
  in tok/s, reasoning tokens included, stalls included. Undefined for fewer than two
  completion tokens or when all output arrived in one chunk.
- **TPOT** = (E2E − TTFO) / (usage.completion_tokens − 1), per request, unweighted; a
  per-request aggregate, not a token-arrival distribution.
- **E2E** = t(last token chunk) − t(send).
- **Client schedule delay** = t(send) − t(due), where a closed-loop request is due when
  its stream's previous request ended and a stream's first request at the cell's
  aligned start (plus its planned offset); an open-loop request is due at its step's
  start plus its seeded arrival divided by the step's rate (its schedule lag).
- **Aggregate output throughput** (cell) = Σ usage.completion_tokens / (last end −
  first send), over the cell's scored requests that reported usage.
- **Engine prefill and queue time** (cell) = exact histogram sum/count deltas of
  `vllm:request_prefill_time_seconds` and `vllm:request_queue_time_seconds` over the
  cell's window.

Warmup and diagnostic requests are journaled and flagged, and never enter these
statistics.
"""


class TimedRequest(Protocol):
    """The journal-line fields the metrics read (``RequestOutcome`` has them)."""

    @property
    def phase(self) -> Phase: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def due_ns(self) -> int | None: ...
    @property
    def send_ns(self) -> int | None: ...
    @property
    def first_output_ns(self) -> int | None: ...
    @property
    def first_content_ns(self) -> int | None: ...
    @property
    def last_token_ns(self) -> int | None: ...
    @property
    def end_ns(self) -> int: ...


class Timing(NamedTuple):
    """Only the fields the metrics read, copied out of a journal line: a reader that keeps
    these instead of whole lines (chunk offsets, excerpts) holds a long journal in little
    memory."""

    phase: Phase
    usage: Usage | None
    due_ns: int | None
    send_ns: int | None
    first_output_ns: int | None
    first_content_ns: int | None
    last_token_ns: int | None
    end_ns: int

    @classmethod
    def of(cls, r: TimedRequest) -> Timing:
        return cls(
            r.phase,
            r.usage,
            r.due_ns,
            r.send_ns,
            r.first_output_ns,
            r.first_content_ns,
            r.last_token_ns,
            r.end_ns,
        )


class Measured(NamedTuple):
    """A metric's value, or ``None`` and the reason it is undefined (a tuple: a million
    requests make seven each, which a frozen dataclass's ``__init__`` makes slowly)."""

    value: float | None
    reason: str | None = None

    @classmethod
    def undefined(cls, reason: str) -> Measured:
        return cls(None, reason)


def _seconds(start: int | None, stop: int | None, what: str) -> Measured:
    if start is None:
        return Measured.undefined("the request was never sent")
    if stop is None:
        return Measured.undefined(f"no {what} was received")
    return Measured((stop - start) / NS_PER_S)


def ttfo(r: TimedRequest) -> Measured:
    return _seconds(r.send_ns, r.first_output_ns, "reasoning or content chunk")


def ttft(r: TimedRequest) -> Measured:
    return _seconds(r.send_ns, r.first_content_ns, "visible content chunk")


def e2e(r: TimedRequest) -> Measured:
    return _seconds(r.send_ns, r.last_token_ns, "token chunk")


def schedule_delay(r: TimedRequest) -> Measured:
    if r.send_ns is None or r.due_ns is None:
        return Measured.undefined("the request was never sent")
    return Measured((r.send_ns - r.due_ns) / NS_PER_S)


def effective_prefill(r: TimedRequest) -> Measured:
    first = ttfo(r)
    if first.value is None:
        return first
    if r.usage is None:
        return Measured.undefined("the server reported no usage")
    if first.value <= 0:
        return Measured.undefined("TTFO is not positive")
    return Measured(r.usage.prompt_tokens / first.value)


def _decode_interval(r: TimedRequest) -> tuple[int, float] | Measured:
    """(completion_tokens − 1, t_last − t_first_output in s), or why there is none."""
    if r.send_ns is None:
        return Measured.undefined("the request was never sent")
    if r.usage is None:
        return Measured.undefined("the server reported no usage")
    if r.usage.completion_tokens < 2:
        return Measured.undefined(
            f"{r.usage.completion_tokens} completion token(s): no interval between tokens"
        )
    if r.first_output_ns is None or r.last_token_ns is None:
        return Measured.undefined("no token chunk was received")
    if r.last_token_ns <= r.first_output_ns:
        return Measured.undefined("all output arrived in one chunk")
    return r.usage.completion_tokens - 1, (r.last_token_ns - r.first_output_ns) / NS_PER_S


def decode(r: TimedRequest) -> Measured:
    interval = _decode_interval(r)
    if isinstance(interval, Measured):
        return interval
    tokens, seconds = interval
    return Measured(tokens / seconds)


def tpot(r: TimedRequest) -> Measured:
    interval = _decode_interval(r)
    if isinstance(interval, Measured):
        return interval
    tokens, seconds = interval  # E2E − TTFO = t_last − t_first_output
    return Measured(seconds / tokens)


REQUEST_METRICS = {
    "ttfo_s": ttfo,
    "ttft_s": ttft,
    "e2e_s": e2e,
    "schedule_delay_s": schedule_delay,
    "effective_prefill_tps": effective_prefill,
    "decode_tps": decode,
    "tpot_s": tpot,
}


# Rates are better higher; every other metric is a time or a cost (energy per output token),
# better lower. The card, the
# decision rule and the report read the direction here, never from a metric's name.
HIGHER_IS_BETTER = frozenset(
    {
        *("effective_prefill_tps", "decode_tps", "aggregate_output_tps"),
        *("goodput_rps", "goodput_tps", "slo_attainment"),  # evidence.attempt.goodput's figures
        "output_tps",  # a rule's name for aggregate_output_tps (matrix/rule.py)
        *("goodput_per_joule", "output_tokens_per_j"),  # evidence.attempt.energy's figures
    }
)


def higher_is_better(metric: str) -> bool:
    return metric in HIGHER_IS_BETTER


def request_metrics(r: TimedRequest) -> dict[str, Measured]:
    return {name: fn(r) for name, fn in REQUEST_METRICS.items()}


def measures_of(r: TimedRequest) -> dict[str, Measured]:
    """``request_metrics(r)``, made once for a journal line, which keeps them of itself: its
    summary, its guard's families and its cell's ratios each ask (a copy drops them:
    ``RequestOutcome.model_copy``). Anything else is measured on each ask."""
    if not isinstance(r, RequestOutcome):
        return request_metrics(r)
    kept: dict[str, Measured] | None = r.__dict__.get(MEASURES_KEPT)
    if kept is None:
        kept = r.__dict__[MEASURES_KEPT] = request_metrics(r)
    return kept


def metric_of(r: TimedRequest, name: str) -> Measured:
    """``REQUEST_METRICS[name](r)``, read from the metrics a journal line keeps of itself."""
    if isinstance(r, RequestOutcome):
        return measures_of(r)[name]
    return REQUEST_METRICS[name](r)


def cell_window(requests: Iterable[TimedRequest]) -> tuple[int, int] | None:
    """(first send, last end) of the scored requests that were sent, in perf_counter_ns."""
    sent: list[tuple[int, int]] = [
        (r.send_ns, r.end_ns) for r in requests if r.phase is Phase.SCORED and r.send_ns is not None
    ]
    if not sent:
        return None
    return min(s for s, _ in sent), max(e for _, e in sent)


def aggregate_output_throughput(requests: Iterable[TimedRequest]) -> Measured:
    """Σ completion tokens / (last end − first send) over scored requests with usage."""
    counted = [
        (r.usage.completion_tokens, r.send_ns, r.end_ns)
        for r in requests
        if r.phase is Phase.SCORED and r.usage is not None and r.send_ns is not None
    ]
    if not counted:
        return Measured.undefined("no scored request reported usage")
    tokens = sum(c for c, _, _ in counted)
    window_ns = max(end for _, _, end in counted) - min(send for _, send, _ in counted)
    if window_ns <= 0:
        return Measured.undefined("the cell window is not positive")
    return Measured(tokens * NS_PER_S / window_ns)
