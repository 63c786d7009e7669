"""``report.html``: one self-contained page (inline CSS and SVG) readable without a server.

Decision first (the decision and restoration badges, a line per cell and metric, the forest
plot), then the card's sections, the plots and the appendix. The text is the card's
(``card_parts``, converted from its Markdown), so the page and RESULT.md can never
disagree; every bundle file is a link relative to the bundle's root. The plots are drawn
from comparison.json, the attempts' samples and a sweep's summaries, each named by the
sha256 of its data (``evidence.views.html.report_figures``) so the audit need not draw them again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from collectors.telemetry import load_cell_samples
from evidence.comparison.read import AttemptInputs
from evidence.views.card.render import card_parts, decision_words, standing_review
from evidence.views.html import plots
from evidence.views.html.report_figures import Figures
from faceoff.format import ratio as ratio_text
from faceoff.formats.attempt.summary import LoadSummary
from faceoff.formats.bundle.comparison import RATIO_LABELS, Comparison

TEMPLATES = Path(__file__).with_name("templates")
COVERAGE = {"complete": "complete", "closed_partial": "closed partial"}
DECISION_TONES = {"promote": "good", "no_promotion": "bad", "rerun_cells": "warn"}


@dataclass(frozen=True)
class Badge:
    text: str
    tone: str  # good, warn, bad or none: the badge's colour


@dataclass(frozen=True)
class VerdictRow:
    """One line of the verdict table: a cell's ratio for one metric, or a pair not compared."""

    cell: str
    candidate: str
    metric: str
    verdict: str
    interval: str
    n: str


def render_report(
    comparison: Comparison,
    attempts: Mapping[tuple[str, str], AttemptInputs],
    figures: Figures | None = None,
) -> str:
    """The page; ``figures``: drawn (the default), or only named by their data's hash."""
    figures = Figures() if figures is None else figures
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    parts = card_parts(comparison)
    html = _markdown()
    forest = _forest_rows(comparison)
    page = env.get_template("report.html.j2").render(
        title=parts.title,
        decision=decision_badge(comparison),
        restoration=restoration_badge(comparison),
        coverage=f"coverage {COVERAGE[comparison.coverage.status]}: "
        f"{comparison.coverage.accepted} of {comparison.coverage.planned} cell runs accepted",
        lead=html.render("\n\n".join(parts.lead)),
        verdicts=verdict_rows(comparison),
        forest=figures(plots.forest_plot, forest, element_id="forest") if forest else None,
        body=[html.render(section) for section in parts.body],
        appendix=html.render("\n\n".join(parts.appendix)),
        ttft_plot=figures(plots.percentile_bars, comparison, "ttft_s", "visible TTFT (s)"),
        decode_plot=figures(plots.percentile_bars, comparison, "decode_tps", "decode (tok/s)"),
        fidelity_plot=(
            figures(plots.kld_distribution, comparison)
            if any(e.figures for e in comparison.fidelity)
            else None
        ),
        cells=[_cell_plots(cell.id, comparison, attempts, figures) for cell in comparison.cells],
        sweeps=_sweeps(comparison, attempts, figures),
    )
    if figures.pending:
        plots.load()
    return figures.drawn(page)


def decision_badge(c: Comparison) -> Badge:
    """The standing human decision, as the card words it."""
    last = standing_review(c)
    tone = DECISION_TONES.get(last.decision, "none") if last else "none"
    return Badge(f"Decision: {decision_words(c)}", tone)


def restoration_badge(c: Comparison) -> Badge:
    r = c.restoration
    incumbent = c.arms[0].name
    if r.proven:
        return Badge(f"Restoration: incumbent {incumbent} restored", "good")
    if r.verified:
        return Badge(f"Restoration: {r.outcome} ({incumbent})", "warn")
    return Badge(f"Restoration not proven: {r.problem}", "bad")


def verdict_rows(c: Comparison) -> list[VerdictRow]:
    rows = []
    for cell in c.cells:
        for pair in cell.pairs:
            if not pair.comparable:
                rows.append(VerdictRow(cell.id, pair.candidate, "all", "not compared",
                                       pair.sentence, ""))  # fmt: skip
                continue
            rows += [
                VerdictRow(
                    cell=cell.id,
                    candidate=r.candidate,
                    metric=RATIO_LABELS[r.metric] + (" ↑" if r.higher_is_better else " ↓"),
                    verdict=r.verdict,
                    interval=ratio_text(r.ratio, r.low, r.high),
                    n=f"{r.n_incumbent} / {r.n_candidate}",
                )
                for r in cell.ratios
                if r.candidate == pair.candidate
            ]
    return rows


def _forest_rows(c: Comparison) -> list[plots.ForestRow]:
    several = len(c.arms) > 2  # name the candidate only where there is more than one
    return [
        plots.ForestRow(
            f"{cell.id} · {r.candidate + ' · ' if several else ''}{RATIO_LABELS[r.metric]}", r
        )
        for cell in c.cells
        for r in cell.ratios
    ]


SOURCE_REF = re.compile(r"\[(\d+)\]")  # a table cell's numbered source reference


def _markdown() -> MarkdownIt:
    """CommonMark with tables, each table inside its own horizontally scrolling box; a
    table cell's source reference ``[n]`` links to item n of the appendix's source list,
    whose items carry the ids ``source-n``."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def table_open(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        return '<div class="table-scroll"><table>\n'

    def table_close(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        return "</table></div>\n"

    def text(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        found = SOURCE_REF.fullmatch(tokens[idx].content)
        if found is None:
            return escapeHtml(tokens[idx].content)
        return f'<a href="#source-{found[1]}">[{found[1]}]</a>'

    def list_item_open(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        if tokens[idx].info:  # an ordered list's item number: the card's only one is the sources
            tokens[idx].attrSet("id", f"source-{tokens[idx].info}")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)
    md.add_render_rule("text", text)
    md.add_render_rule("list_item_open", list_item_open)
    return md


def _sweeps(
    comparison: Comparison, attempts: Mapping[tuple[str, str], AttemptInputs], figures: Figures
) -> list[dict[str, str]]:
    """Per sweep cell: the rate-latency plot and each arm's highest rate within SLO."""
    shown = []
    for cell in comparison.cells:
        arms = []
        for arm in comparison.arms:
            attempt = attempts.get((cell.id, arm.name))
            load = attempt.summary.open_loop if attempt and attempt.summary else None
            if load is not None and load.sweep is not None:
                arms.append((arm.name, load))
        if arms:
            shown.append(
                {
                    "id": cell.id,
                    "plot": figures(plots.rate_latency, cell.id, arms),
                    "result": "; ".join(_within(name, load) for name, load in arms),
                }
            )
    return shown


def _within(arm: str, load: LoadSummary) -> str:
    assert load.sweep is not None
    found, breaks = load.sweep.max_rate_within_slo, load.sweep.breaks_at_rate
    within = "no step within SLO" if found is None else f"within SLO up to {found:g} req/s"
    upper = "no step broke it" if breaks is None else f"broken at {breaks:g} req/s"
    return f"{arm}: {within}, {upper}"


def _cell_plots(
    cell_id: str,
    comparison: Comparison,
    attempts: Mapping[tuple[str, str], AttemptInputs],
    figures: Figures,
) -> dict[str, str]:
    series = []
    for arm in comparison.arms:
        attempt = attempts.get((cell_id, arm.name))
        if attempt is None:
            continue
        samples = load_cell_samples(attempt.where.path)
        series.append(plots.CellSeries(arm.name, samples.engine, samples.gpu, samples.host))
    return {
        "id": cell_id,
        "engine": figures(plots.engine_timeline, cell_id, series),
        "memory": figures(plots.memory_timeline, cell_id, series),
    }
