"""``RESULT.md``, the result card: a renderer of ``comparison.json`` that computes nothing.

It opens with the declared decision rule's outcome and its criteria, when the matrix
declares one. Its sections follow an operator's write-up: decision, scope, the headline card,
ratios, recipes and workload, full measurements, coverage, failures and tickets,
restoration, caveats, definitions, reviews, and numbered sources naming the
comparison key and the bundle files behind every figure.
"""

from __future__ import annotations

from evidence import card_tables as tables
from evidence.comparison import Comparison, Ratio, Ruling
from evidence.format import join_words
from evidence.markdown import Sources, table

DECISIONS = {
    "promote": "promote the candidate",
    "no_promotion": "no promotion",
    "rerun_cells": "rerun cells before deciding",
}


def render_card(comparison: Comparison) -> str:
    sources = Sources()
    parts = [
        _title(comparison),
        *([_ruling(comparison.ruling)] if comparison.ruling else []),
        _decision(comparison),
        _scope(comparison),
        *([comparison.aa.sentence] if comparison.aa else []),
        "## Result card\n\n" + tables.headline(comparison, sources),
        "## What the measurements establish\n\n" + _established(comparison),
        "## Candidate / incumbent ratios\n\n" + tables.ratios(comparison, sources),
        *([_replicated(comparison)] if comparison.replicated else []),
        "## Recipes and workload\n\n" + tables.recipes(comparison) + "\n\n" + _workload(comparison),
        "## Full measurements\n\n" + tables.measurements(comparison, sources),
        "## Coverage and dispositions\n\n" + tables.dispositions(comparison),
        "## Failures and their evidence\n\n" + _failures(comparison),
        "## Restoration\n\n" + _restoration(comparison),
        "## Caveats\n\n" + "\n".join(f"- {c.text}" for c in comparison.caveats),
        _definitions(comparison),
        "## Reviews\n\n" + _reviews(comparison),
        "## Sources\n\nEvery figure above is read from `comparison.json`, which was computed "
        "from the native artifacts named here.\n\n" + sources.render(),
    ]
    return "\n\n".join(parts) + "\n"


def _title(c: Comparison) -> str:
    names = [a.name for a in c.arms]
    return f"# {c.campaign}: {names[0]} versus {join_words(names[1:], 'and')}"


def _ruling(ruling: Ruling) -> str:
    """The declared rule's outcome per candidate and its criteria: the card's first lines."""
    return "\n\n".join(
        "\n".join([c.headline, *(f"- {line.sentence}" for line in c.criteria)])
        for c in ruling.candidates
    )


def _decision(c: Comparison) -> str:
    observed = c.observed_from.date().isoformat() if c.observed_from else "not recorded"
    if c.reviews:
        last = c.reviews[-1]
        decision = f"{DECISIONS.get(last.decision, last.decision)} (recorded by {last.reviewer})"
    else:
        decision = "pending human review"
    incumbent = c.arms[0].name
    tail = f"incumbent {incumbent} restored" if c.restoration.proven else "restoration not proven"
    line = f"Observed: {observed}. Decision: {decision}; {tail}."
    return f"{line}\n\n{c.description}" if c.description else line


def _scope(c: Comparison) -> str:
    cov = c.coverage
    per_arm = join_words([f"{a.scored_ok} on {a.arm}" for a in cov.arms], "and")
    return (
        f"The accepted scope contains {cov.matched_pairs} comparable matched pair(s) and "
        f"successful scored requests {per_arm}. The plan is {cov.sentence}. "
        f"Matrix `{c.matrix_id}`."
    )


def _established(c: Comparison) -> str:
    """Per cell, the ratios whose interval excludes 1, and those it cannot separate from 1."""
    lines = []
    for cell in c.cells:
        for pair in cell.pairs:
            if not pair.comparable:
                lines.append(f"- {cell.id}: not compared ({pair.sentence}).")
                continue
            ratios = [r for r in cell.ratios if r.candidate == pair.candidate]
            clear = [r for r in ratios if r.low > 1 or r.high < 1]
            unclear = [tables.RATIO_LABELS[r.metric] for r in ratios if r not in clear]
            said = join_words([_ratio_words(r) for r in clear], "and") or "no ratio"
            tail = (
                f"; the intervals of {join_words(unclear, 'and')} include 1 at this n"
                if unclear
                else ""
            )
            lines.append(f"- {cell.id} (C{cell.concurrency}), {pair.candidate}: {said}{tail}.")
    return "\n".join(lines) or "No pair was planned."


def _ratio_words(r: Ratio) -> str:
    label = tables.RATIO_LABELS[r.metric]
    return (
        f"{label} p50 {r.ratio:.2f}× the incumbent's ({r.confidence:.0%} interval "
        f"{r.low:.2f}–{r.high:.2f}, n={r.n_incumbent}/{r.n_candidate} requests in "
        f"{r.blocks_incumbent}/{r.blocks_candidate} blocks)"
    )


def _replicated(c: Comparison) -> str:
    """Replicated cells: the interval that sees the variance between windows."""
    lines = []
    for r in c.replicated:
        label = tables.RATIO_LABELS[r.metric]
        each = ", ".join(f"{x:.2f}" for x in r.ratios)
        if r.low is None or r.high is None or r.ratio is None:
            lines.append(f"- {r.cell}, {r.candidate}, {label} p50: no interval ({r.reason}).")
            continue
        lines.append(
            f"- {r.cell}, {r.candidate}, {label} p50: {r.ratio:.2f}× ({r.confidence:.0%} "
            f"between-replicate interval {r.low:.2f}–{r.high:.2f}; replicates {each})."
        )
    return (
        "## Between replicates\n\nEach replicated cell ran once per pass, arms alternating, "
        "so these intervals include the host's variation between windows.\n\n" + "\n".join(lines)
    )


def _workload(c: Comparison) -> str:
    rows = [
        [
            cell.id,
            cell.kind,
            f"{cell.input_target:,}",
            f"C{cell.concurrency}",
            str(cell.requests),
            str(cell.warmups),
            f"{cell.sampling.max_tokens:,}",
            f"{cell.sampling.temperature:g} / {cell.sampling.top_p:g}",
            cell.sampling.reasoning_effort or "—",
        ]
        for cell in c.cells
    ]
    header = ["cell", "kind", "nominal input", "conc.", "requests", "warmups", "max tokens",
              "temperature / top-p", "reasoning effort"]  # fmt: skip
    return (
        "Each matched pair used the same seed, request indices, prompt namespace and prompt "
        "text; nonces open every prompt and each request carries a canary. Nominal targets "
        "label the cells; the tables give actual input tokens from API usage. Warmups are "
        "journaled and never scored.\n\n" + table(header, rows)
    )


def _failures(c: Comparison) -> str:
    if not c.failures:
        return "No cell run failed or was blocked."
    lines = []
    for f in c.failures:
        ticket = f" Ticket `tickets/{f.ticket}.md`." if f.ticket else ""
        files = ", ".join(f"`{p}`" for p in f.evidence) or "no files (never ran)"
        lines.append(
            f"- **{f.cell} / {f.arm}: {f.disposition}** ({f.reason_code}). "
            f"{(f.reason or 'no reason recorded').rstrip('.')}. Evidence: {files}.{ticket}"
        )
    if c.tickets:
        lines.append("\nFollow-up tickets: " + ", ".join(f"`{t.path}`" for t in c.tickets) + ".")
    return "\n".join(lines)


def _restoration(c: Comparison) -> str:
    r = c.restoration
    if not r.verified:
        return f"No verified restoration receipt: {r.problem}"
    at = r.completed_at.isoformat() if r.completed_at else "an unrecorded time"
    body = "; ".join(r.lines)
    changed = (
        f"Changed or unproven protected files: {', '.join(r.protected_changed)}."
        if r.protected_changed
        else f"All {r.protected_total} protected operator files were unchanged."
    )
    problems = f" Problems: {'; '.join(r.problems)}." if r.problems else ""
    return (
        f"At {at} the receipt (`receipt.json`, self-hashed and verified) recorded outcome "
        f"**{r.outcome}**: {body}. {changed}{problems}"
    )


def _definitions(c: Comparison) -> str:
    body = c.definitions.replace("## Metric definitions", "").strip()
    ratios = f"{c.percentile_method}. Ratios: {c.ratio_method}."
    measured = any(a.goodput for cell in c.cells for a in cell.arms)
    goodput = f"Goodput: {c.goodput_method}.\n\n" if measured else ""
    rule = f"The {c.ruling.method}.\n\n" if c.ruling else ""
    return f"## Definitions\n\n{ratios}\n\n{c.instrument_method}\n\n{goodput}{rule}{body}"


def _reviews(c: Comparison) -> str:
    if not c.reviews:
        return "No review recorded yet (`faceoff review` records one)."
    return "\n".join(
        f"- {r.at.isoformat()} {r.reviewer}: **{r.decision}** — {r.note}"
        + (f" (forced: {r.forced_reason})" if r.forced_reason else "")
        + (f" Against the declared rule: {r.overrode_rule}." if r.overrode_rule else "")
        for r in c.reviews
    )
