"""``report.html``: one self-contained page (inline CSS and SVG) readable without a server.

The tables are the result card's, converted from its Markdown, so the page and
RESULT.md can never disagree; the plots are drawn from comparison.json, the
cell attempts' sample files and, for a sweep, its attempts' summaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jinja2
from markdown_it import MarkdownIt

from collectors.summary import load_cell_samples
from evidence import plots
from evidence.comparison import Comparison
from evidence.inputs import AttemptInputs
from evidence.load import LoadSummary

TEMPLATES = Path(__file__).with_name("templates")
STATUS = {
    "complete": ("complete", "#1a7f37"),
    "closed_partial": ("closed partial", "#bf8700"),
}


def render_report(
    comparison: Comparison, card_markdown: str, attempts: Mapping[tuple[str, str], AttemptInputs]
) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    status, colour = STATUS[comparison.coverage.status]
    return env.get_template("report.html.j2").render(
        title=f"faceoff — {comparison.campaign}",
        campaign=comparison.campaign,
        matrix_id=comparison.matrix_id,
        status=status,
        status_colour=colour,
        card=MarkdownIt("commonmark", {"html": False}).enable("table").render(card_markdown),
        ttft_plot=plots.percentile_bars(comparison, "ttft_s", "visible TTFT (s)"),
        decode_plot=plots.percentile_bars(comparison, "decode_tps", "decode (tok/s)"),
        cells=[_cell_plots(cell.id, comparison, attempts) for cell in comparison.cells],
        sweeps=_sweeps(comparison, attempts),
    )


def _sweeps(
    comparison: Comparison, attempts: Mapping[tuple[str, str], AttemptInputs]
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
                    "plot": plots.rate_latency(cell.id, arms),
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
    cell_id: str, comparison: Comparison, attempts: Mapping[tuple[str, str], AttemptInputs]
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
        "engine": plots.engine_timeline(cell_id, series),
        "memory": plots.memory_timeline(cell_id, series),
    }
