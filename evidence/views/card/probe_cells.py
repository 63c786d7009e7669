"""The card's probe section: what each probe cell answers, one line per question and pair.

A renderer of ``comparison.json`` like the rest of the card: it computes nothing.
Beside the answers: the per-stream time-to-first-output table of concurrent prefill probes, the
requests that stopped at ``max_tokens`` unasked (and whether the statistics count
them), those whose server never named a finish_reason, and each cell's prefix-cache hits
and lowest host-available memory.
"""

from __future__ import annotations

from collections.abc import Iterable

from evidence.views.card.markdown import Sources, table
from faceoff import format as fmt
from faceoff.formats.bundle.comparison import ArmCell, CellEntry, Comparison
from faceoff.formats.bundle.probe_figures import ProbeAnswer, Unit

NO_ANSWERS = "No probe cell has a comparable pair, so no probe question is answered."


def probes(c: Comparison, sources: Sources) -> str:
    """The section's body: answers, stream tables, length finishes, cache and host memory."""
    incumbent = c.arms[0].name
    lines = [
        answer_line(cell, a, incumbent, sources.ref(f"cells[{cell.id}].answers", a.sources))
        for cell in c.cells
        for a in cell.answers
    ]
    parts = ["\n".join(lines) if lines else NO_ANSWERS]
    parts += [_streams(cell) for cell in c.cells if cell.streams]
    parts.append(_cold_starts(c, sources))
    parts.append(_length_finishes(c))
    parts.append(unnamed_finishes((cell.id, a) for cell in c.cells for a in cell.arms))
    parts.append(_cache_and_host(c))
    return "\n\n".join(p for p in parts if p)


def answer_line(cell: CellEntry, a: ProbeAnswer, incumbent: str, ref: str) -> str:
    """``- cell (Cn): question (role, statistic): inc X, cand Y; ratio R× (interval); beside.``"""
    role = f"{a.role}, " if a.role else ""
    figures = (
        f"{incumbent} {figure(a.unit, a.incumbent_value)}, "
        f"{a.candidate} {figure(a.unit, a.candidate_value)}"
    )
    beside = "".join(
        f"; {b.role} beside: {figure(a.unit, b.incumbent)} / {figure(a.unit, b.candidate)}"
        for b in a.beside
    )
    return (
        f"- {cell.id} (C{cell.concurrency}): {a.label} ({role}{a.statistic}): {figures}; "
        f"{_ratio(a)}{beside}. {ref}"
    )


def figure(unit: Unit, value: float | None) -> str:
    if unit == "s":
        return fmt.seconds(value)
    if unit == "share":
        return fmt.percent(value)
    if unit == "tokens":
        return f"{fmt.count(value)} tokens"
    return f"{fmt.rate(value)} tok/s"


def _ratio(a: ProbeAnswer) -> str:
    if a.ratio is None:
        return a.interval_note or "no ratio"
    if a.low is None or a.high is None or a.confidence is None:
        return f"ratio {a.ratio:.2f}× ({a.interval_note})"
    return (
        f"ratio {a.ratio:.2f}× ({a.confidence:.0%} interval {a.low:.2f}–{a.high:.2f}, "
        f"n={a.n_incumbent}/{a.n_candidate})"
    )


def _streams(cell: CellEntry) -> str:
    width = max(len(s.ttfo_s) for s in cell.streams)
    rows = [[s.arm, *(fmt.seconds(v) for v in s.ttfo_s)] for s in cell.streams]
    header = ["arm", *(f"stream {i} TTFO p50" for i in range(width))]
    return f"Per-stream time to first output (the probe's one token), {cell.id}:\n\n" + table(
        header, rows
    )


def _cold_starts(c: Comparison, sources: Sources) -> str:
    lines = []
    for arm in c.arms:
        cold = arm.cold_start
        if cold is None:
            lines.append(f"- {arm.name}: no warmup served a visible token, so no cold start.")
            continue
        warm = cold.warm_ttft_p50_s
        times = f" ({cold.first_ttft_s / warm:.1f}× the warm)" if warm else ""
        ref = sources.ref(f"arms[{arm.name}].cold_start", [cold.source])
        lines.append(
            f"- {arm.name}: first request after the start (JIT) TTFT "
            f"{fmt.seconds(cold.first_ttft_s)}, warm median {fmt.seconds(warm)} over "
            f"{cold.warm_n} later warmup(s){times}. {ref}"
        )
    return "Cold start, from each arm's warmups after its first start:\n\n" + "\n".join(lines)


def _length_finishes(c: Comparison) -> str:
    found = [
        f"{cell.id} / {a.arm}: {a.length_limited}"
        for cell in c.cells
        for a in cell.arms
        if a.length_limited
    ]
    if not found:
        return "No scored request stopped at max_tokens unasked."
    return (
        "Scored requests that stopped at max_tokens unasked (finish `length`; counted in the "
        "statistics only where the cell's `length_finishes` is `include`): "
        + fmt.join_words(found, "and")
        + "."
    )


def unnamed_finishes(arms: Iterable[tuple[str, ArmCell]]) -> str:
    """Each (cell, arm) whose server ended streams without naming why; said only where one
    did (vLLM always names it)."""
    found = [f"{cell} / {a.arm}: {a.unnamed_finishes}" for cell, a in arms if a.unnamed_finishes]
    if not found:
        return ""
    return (
        "Scored requests whose server never named a finish_reason (usage and [DONE] only; "
        "counted ok, or as errors where the matrix sets `require_finish_reason`): "
        + fmt.join_words(found, "and")
        + "."
    )


def _cache_and_host(c: Comparison) -> str:
    rows = [
        [
            cell.id,
            a.arm,
            fmt.count(a.engine.prefix_cache_hits if a.engine else None),
            fmt.gib(a.memory.host_available_min_bytes if a.memory else None),
        ]
        for cell in c.cells
        for a in cell.arms
        if a.disposition == "accepted"
    ]
    header = ["cell", "arm", "prefix-cache hits (tokens)", "host available min"]
    return table(header, rows) if rows else ""
