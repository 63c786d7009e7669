"""Exact per-cell deltas of engine counters and histogram sum/count (pure).

The baseline is the last successful sample that finished before the cell's
first request; the final one is the first successful sample taken after its
last request ended (the drain). Between them every sample is walked: a value
that goes down, or a changed API-server start time, is a counter reset (a lane
restart): the delta then adds the post-reset value, never a negative step, and
the result is marked inexact because increments between the last sample before
the restart and the restart itself are lost. A histogram's ``_sum`` is not
monotonic (observations may be negative), so only counters and ``_count``
series can reveal a reset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from faceoff.formats.attempt.collector_samples import EngineSample
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.telemetry import CounterDelta, HistogramDelta

START_TIME = "process_start_time_seconds"


@dataclass
class EngineDeltas:
    counters: dict[str, CounterDelta] = field(default_factory=dict)
    histograms: dict[str, HistogramDelta] = field(default_factory=dict)
    resets: int = 0
    baseline_seq: int | None = None
    final_seq: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class _Walk:
    delta: float = 0.0
    resets: int = 0
    first: float | None = None
    last: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class _Span:
    """The successful samples from baseline to final, with their series precomputed."""

    samples: list[EngineSample]
    values: list[dict[str, float]]
    resets: list[bool]
    notes: list[str]


def engine_deltas(samples: Sequence[EngineSample], window: CellWindow) -> EngineDeltas:
    ok = sorted((s for s in samples if s.ok), key=lambda s: s.actual_ns)
    if not ok:
        return EngineDeltas(notes=["no successful engine sample"])
    span = _span(ok, window)
    deltas = EngineDeltas(
        resets=sum(span.resets),
        baseline_seq=span.samples[0].seq,
        final_seq=span.samples[-1].seq,
        notes=span.notes,
    )
    for key in sorted({key for values in span.values for key in values}):
        name, _, part = key.partition(":")
        if not part:
            deltas.counters[key] = _counter_delta(span, key)
        elif part == "count":
            deltas.histograms[name] = _histogram_delta(span, name)
    return deltas


def _span(ok: list[EngineSample], window: CellWindow) -> _Span:
    first, first_note = _baseline(ok, window)
    last, last_note = _final(ok, window)
    samples = ok[first : last + 1]
    values = [_values(s) for s in samples]
    resets = reset_flags(samples, values)
    notes = [n for n in (first_note, last_note) if n]
    if any(resets):
        notes.append("counters reset during the cell (lane restart); increments before it lost")
    return _Span(samples, values, resets, notes)


def _baseline(ok: list[EngineSample], window: CellWindow) -> tuple[int, str | None]:
    before = [i for i, s in enumerate(ok) if s.actual_ns + s.latency_ns <= window.start_ns]
    if before:
        return before[-1], None
    return 0, "no engine sample finished before the cell started; deltas start at the first one"


def _final(ok: list[EngineSample], window: CellWindow) -> tuple[int, str | None]:
    after = [i for i, s in enumerate(ok) if s.actual_ns >= window.end_ns]
    if after:
        return after[0], None
    return len(ok) - 1, "no engine sample after the cell ended; deltas end at the last one"


def _values(sample: EngineSample) -> dict[str, float]:
    """Every cumulative series of a sample: counters, and histogram sums and counts."""
    assert sample.metrics is not None
    values = dict(sample.metrics.counters)
    for name, point in sample.metrics.histograms.items():
        values[f"{name}:sum"] = point.sum
        values[f"{name}:count"] = point.count
    return values


def reset_flags(samples: Sequence[EngineSample], values: Sequence[dict[str, float]]) -> list[bool]:
    """flags[i]: a reset happened between samples[i-1] and samples[i] (flags[0] is False)."""
    flags = [False]
    for i in range(1, len(samples)):
        flags.append(_restarted(samples[i - 1], samples[i], values[i - 1], values[i]))
    return flags


def _restarted(
    before: EngineSample, after: EngineSample, old: dict[str, float], new: dict[str, float]
) -> bool:
    assert before.metrics is not None and after.metrics is not None
    started = before.metrics.gauges.get(START_TIME), after.metrics.gauges.get(START_TIME)
    if None not in started and started[0] != started[1]:
        return True
    return any(new[key] < old[key] for key in old.keys() & new.keys() if _monotonic(key))


def _monotonic(key: str) -> bool:
    return not key.endswith(":sum")


def _family(key: str) -> str:
    return key.split("{", 1)[0].split(":", 1)[0]


def walk(span: _Span, key: str) -> _Walk:
    """Accumulate one series across the span, treating resets as restarts from zero."""
    result = _Walk()
    pending_reset = False
    for i, values in enumerate(span.values):
        pending_reset = pending_reset or span.resets[i]
        value = values.get(key)
        if value is None:
            continue
        if result.last is None:
            _first_sighting(result, span, i, key, value)
        elif pending_reset or (value < result.last and _monotonic(key)):
            result.delta += value
            result.resets += 1
        else:
            result.delta += value - result.last
        result.last, pending_reset = value, False
    return result


def _first_sighting(result: _Walk, span: _Span, i: int, key: str, value: float) -> None:
    if i == 0:
        result.first = value
        return
    family = _family(key)
    baseline = span.samples[0].metrics
    if baseline is not None and baseline.carries(family):
        result.delta += value  # a labelled series created during the cell started at zero
    else:
        result.notes.append(f"{family} absent from the baseline sample")


def _final_note(span: _Span, key: str) -> list[str]:
    if key in span.values[-1]:
        return []
    return [f"{_family(key)} absent from the final sample"]


def _counter_delta(span: _Span, key: str) -> CounterDelta:
    result = walk(span, key)
    why = [*span.notes, *result.notes, *_final_note(span, key)]
    return CounterDelta(
        delta=result.delta,
        baseline=result.first,
        final=span.values[-1].get(key),
        resets=result.resets,
        exact=not why,
        why_inexact="; ".join(why) or None,
    )


def _histogram_delta(span: _Span, name: str) -> HistogramDelta:
    total = walk(span, f"{name}:sum")
    count = walk(span, f"{name}:count")
    notes = [*span.notes, *total.notes, *count.notes, *_final_note(span, f"{name}:count")]
    why = list(dict.fromkeys(notes))
    return HistogramDelta(
        sum_delta=total.delta,
        count_delta=count.delta,
        mean=total.delta / count.delta if count.delta > 0 else None,
        resets=max(total.resets, count.resets),
        exact=not why,
        why_inexact="; ".join(why) or None,
    )
