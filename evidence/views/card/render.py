"""``RESULT.md``, the result card: a renderer of ``comparison.json`` that computes nothing.

It opens with the declared decision rule's outcome and its criteria, when the matrix
declares one. Its sections follow an operator's write-up: decision, scope, the verdict per cell,
the headline card, ratios, recipes and workload, full measurements, coverage and
attempts, failures and tickets, restoration, caveats and reviews; then the appendix:
definitions, and numbered sources naming the comparison key and the bundle files
behind every figure (as links relative to the bundle's root).
"""

from __future__ import annotations

from dataclasses import dataclass

from evidence.views.card import energy as card_energy
from evidence.views.card import fidelity as card_fidelity
from evidence.views.card import posture as card_posture
from evidence.views.card import probe_cells, result_tables
from evidence.views.card import quality as card_quality
from evidence.views.card import reuse as card_reuse
from evidence.views.card import sequential as card_sequential
from evidence.views.card import speculation as card_speculation
from evidence.views.card import tails as card_tails
from evidence.views.card.before_night import before_night, before_night_lead
from evidence.views.card.carried import carried_lead, carried_section
from evidence.views.card.markdown import Sources, link, links, table
from evidence.views.card.recipe_diff import recipe_diffs
from faceoff.format import join_words
from faceoff.formats.bundle.comparison import (
    RATIO_LABELS,
    CellEntry,
    Comparison,
    PairEntry,
    Ratio,
    ReviewRef,
    Ruling,
    metric_label,
)

DECISIONS = {
    "promote": "promote the candidate",
    "no_promotion": "no promotion",
    "rerun_cells": "rerun cells before deciding",
}


@dataclass(frozen=True)
class CardParts:
    """The card's sections, so that report.html can lay them out around its plots."""

    title: str  # "campaign: incumbent versus candidates"
    lead: list[str]  # the declared rule's outcome, decision line, scope, the A/A verdict
    verdicts: str  # the verdict per cell
    body: list[str]  # the headline card to the reviews
    appendix: list[str]  # definitions and the numbered sources: the footnotes

    def markdown(self) -> str:
        parts = [f"# {self.title}", *self.lead, self.verdicts, *self.body, *self.appendix]
        return "\n\n".join(parts) + "\n"


def render_card(comparison: Comparison) -> str:
    return card_parts(comparison).markdown()


def card_parts(comparison: Comparison) -> CardParts:
    c = comparison
    sources = Sources()
    body = [
        "## Result card\n\n" + result_tables.headline(c, sources),
        "## Quality evidence\n\n" + card_quality.quality(c, sources),
        *(["## Fidelity\n\n" + card_fidelity.section(c, sources)] if c.fidelity else []),
        "## Candidate / incumbent ratios\n\n" + result_tables.ratios(c, sources),
        *([_replicated(c)] if c.replicated else []),
        *([card_sequential.section(c.sequential)] if c.sequential else []),
        f"## {PROBES}\n\n" + probe_cells.probes(c, sources),
        "## Energy\n\n" + card_energy.section(c, sources),
        "## Speculative decoding\n\n" + card_speculation.section(c, sources),
        "## Tails\n\n" + card_tails.section(c, sources),
        "## Recipes and workload\n\n" + result_tables.recipes(c) + "\n\n" + _workload(c),
        *card_reuse.sections(c, sources),
        "## What each pair of arms changes\n\n" + recipe_diffs(c),
        "## Host posture\n\n" + card_posture.posture(c, sources),
        "## GPU posture\n\n" + card_posture.gpu_posture(c, sources),
        "## Before the night\n\n" + before_night(c, sources),
        "## Full measurements\n\n" + result_tables.measurements(c, sources),
        "## Coverage and attempts\n\n" + result_tables.dispositions(c),
        *([carried_section(c.carried)] if c.carried else []),
        "## Failures and their evidence\n\n" + _failures(c),
        "## Restoration\n\n" + _restoration(c),
        "## Caveats\n\n" + "\n".join(f"- {x.text}" for x in c.caveats),
        "## Reviews\n\n" + _reviews(c),
    ]
    return CardParts(
        title=_title(c),
        lead=[
            *([_ruling(c.ruling)] if c.ruling else []),
            _decision(c),
            _scope(c),
            *([carried_lead(c.carried)] if c.carried else []),
            *before_night_lead(c),
            *([c.aa.sentence] if c.aa else []),
        ],
        verdicts="## Verdict per cell\n\n" + verdicts(c),
        body=body,
        appendix=[
            "## Appendix: definitions\n\n" + _definitions(c),
            "## Appendix: sources\n\nEvery figure above is read from `comparison.json`, "
            "which was computed from the native artifacts named here.\n\n" + sources.render(),
        ],
    )


def _title(c: Comparison) -> str:
    names = [a.name for a in c.arms]
    return f"{c.campaign}: {names[0]} versus {join_words(names[1:], 'and')}"


def standing_review(c: Comparison) -> ReviewRef | None:
    """The last review, unless an attempt begun after it superseded it; a rerun_cells
    decision stands while a run it named is still to rerun."""
    last = c.reviews[-1] if c.reviews else None
    if last is None or (last.superseded_by and not last.outstanding):
        return None
    return last


def decision_words(c: Comparison) -> str:
    """The standing human decision, or why there is none."""
    last = standing_review(c)
    if last is None and c.reviews:
        old = c.reviews[-1]
        return (
            f"pending human review (the {old.decision} recorded by {old.reviewer} was "
            f"superseded by {len(old.superseded_by)} later attempt(s))"
        )
    if last is None:
        return "pending human review"
    by = f"recorded by {last.reviewer}"
    if last.decision == "rerun_cells":
        return f"rerun {join_words(last.outstanding, 'and')} before deciding ({by})"
    return f"{DECISIONS.get(last.decision, last.decision)} ({by})"


def _ruling(ruling: Ruling) -> str:
    """The declared rule's outcome per candidate and its criteria: the card's first lines."""
    said = [
        "\n".join([c.headline, *(f"- {line.sentence}" for line in c.criteria)])
        for c in ruling.candidates
    ]
    return "\n\n".join([*said, *([ruling.error_control] if ruling.error_control else [])])


def _decision(c: Comparison) -> str:
    observed = c.observed_from.date().isoformat() if c.observed_from else "not recorded"
    incumbent = c.arms[0].name
    tail = f"incumbent {incumbent} restored" if c.restoration.proven else "restoration not proven"
    line = f"Observed: {observed}. Decision: {decision_words(c)}; {tail}."
    faithful = [
        f"{a.name} {w}" for a in c.arms[1:] if (w := card_fidelity.decision_words(c, a.name))
    ]
    if faithful:
        line += f" Fidelity: {join_words(faithful, 'and')}."
    return f"{line}\n\n{c.description}" if c.description else line


def _scope(c: Comparison) -> str:
    cov = c.coverage
    per_arm = join_words([f"{a.scored_ok} on {a.arm}" for a in cov.arms], "and")
    return (
        f"The accepted scope contains {cov.matched_pairs} comparable matched pair(s) and "
        f"successful scored requests {per_arm}. The plan is {cov.sentence}. "
        f"Matrix `{c.matrix_id}`."
    )


PROBES = "What each probe answers"
VERDICT_NOTE = (
    "For the candidate against the incumbent, cell by cell: better or worse where a ratio's "
    "interval excludes 1, read in each metric's direction (rates are better higher, times "
    "lower); no difference where it includes 1 at this n; descriptive only (no verdict) "
    "where the interval rests on fewer requests than it is calibrated at."
)
VERDICT_WORDS = {"no difference": "no difference", "descriptive": "descriptive only"}


def verdicts(c: Comparison) -> str:
    """One line per cell and candidate: the pair's verdict and the ratios behind it."""
    lines = [_verdict_line(cell, pair) for cell in c.cells for pair in cell.pairs]
    if not lines:
        return "No pair was planned."
    return VERDICT_NOTE + "\n\n" + "\n".join(lines)


def _verdict_line(cell: CellEntry, pair: PairEntry) -> str:
    head = f"- {cell.id} (C{cell.concurrency}), {pair.candidate}"
    if not pair.comparable:
        return f"{head}: not compared ({pair.sentence.rstrip('.')})."
    if pair.verdict == "not compared":
        return f"{head}: no latency ratio; a needle search pairs its verified lengths ({PROBES})."
    ratios = [r for r in cell.ratios if r.candidate == pair.candidate]
    said = [
        f"{verdict} on {join_words([_ratio_words(r) for r in found], 'and')}"
        for verdict in ("better", "worse")
        if (found := [r for r in ratios if r.verdict == verdict])
    ]
    for verdict in ("no difference", "descriptive"):
        labels = [RATIO_LABELS[r.metric] for r in ratios if r.verdict == verdict]
        if labels:
            said.append(f"{VERDICT_WORDS[verdict]} on {join_words(labels, 'and')}")
    return f"{head}: **{pair.verdict}** — {'; '.join(said) or 'no ratio'}."


def _ratio_words(r: Ratio) -> str:
    return (
        f"{RATIO_LABELS[r.metric]} ({r.ratio:.2f}× the incumbent's p50, "
        f"{r.confidence:.0%} interval {r.low:.2f}–{r.high:.2f}, n={r.n_incumbent}/{r.n_candidate})"
    )


def _replicated(c: Comparison) -> str:
    """Replicated cells: the interval that sees the variance between windows."""
    lines = []
    for r in c.replicated:
        label = metric_label(r.metric) + (" p50" if r.metric in RATIO_LABELS else "")
        each = ", ".join(f"{x:.2f}" for x in r.ratios)
        if r.low is None or r.high is None or r.ratio is None:
            lines.append(f"- {r.cell}, {r.candidate}, {label}: no interval ({r.reason}).")
            continue
        lines.append(
            f"- {r.cell}, {r.candidate}, {label}: {r.ratio:.2f}× ({r.confidence:.0%} "
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
        ticket = f" Ticket {link(f'tickets/{f.ticket}.md')}." if f.ticket else ""
        files = links(f.evidence) or "no files (never ran)"
        lines.append(
            f"- **{f.cell} / {f.arm}: {f.disposition}** ({f.reason_code}). "
            f"{(f.reason or 'no reason recorded').rstrip('.')}. Evidence: {files}.{ticket}"
        )
    if c.tickets:
        lines.append("\nFollow-up tickets: " + links([t.path for t in c.tickets]) + ".")
    return "\n".join(lines)


def _restoration(c: Comparison) -> str:
    r = c.restoration
    if not r.verified:
        return f"No verified restoration receipt: {r.problem}"
    at = r.completed_at.isoformat() if r.completed_at else "an unrecorded time"
    body = "; ".join(r.lines)
    if r.protected_changed:
        changed = f"Changed or unproven protected files: {', '.join(r.protected_changed)}."
    elif r.protected_total == 0:
        changed = (
            "Warning: the matrix declared no protected operator files, so nothing shows "
            "that the operator's files were left alone (declare them in `protected_files`)."
        )
    else:
        changed = f"All {r.protected_total} protected operator files were unchanged."
    problems = f" Problems: {'; '.join(r.problems)}." if r.problems else ""
    return (
        f"At {at} the receipt ({link('receipt.json')}, self-hashed and verified) recorded outcome "
        f"**{r.outcome}**: {body}. {changed}{problems}"
    )


def _definitions(c: Comparison) -> str:
    body = c.definitions.replace("## Metric definitions", "").strip()
    ratios = f"{c.percentile_method}. Ratios: {c.ratio_method}."
    measured = any(a.goodput for cell in c.cells for a in cell.arms)
    goodput = f"Goodput: {c.goodput_method}.\n\n" if measured else ""
    rule = f"The {c.ruling.method}.\n\n" if c.ruling else ""
    return f"{ratios}\n\n{c.instrument_method}\n\n{goodput}{rule}{body}"


def _reviews(c: Comparison) -> str:
    if not c.reviews:
        return "No review recorded yet (`faceoff review` records one)."
    return "\n".join(_review_line(r) for r in c.reviews)


def _review_line(r: ReviewRef) -> str:
    cells = f" ({', '.join(r.cells)})" if r.cells else ""
    forced = f" (forced: {r.forced_reason})" if r.forced_reason else ""
    line = f"- {r.at.isoformat()} {r.reviewer}: **{r.decision}**{cells} — {r.note}{forced}"
    if r.superseded_by:
        line += f". Superseded by {join_words(r.superseded_by, 'and')}"
    if r.decision == "rerun_cells":
        line += (
            f". Still to rerun: {join_words(r.outstanding, 'and')}"
            if r.outstanding
            else (". Every run it named was rerun")
        )
    if r.overrode_rule:
        line += f". Against the declared rule: {r.overrode_rule}"
    return line
