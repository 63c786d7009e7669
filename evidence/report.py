"""``report.html``: one self-contained page (inline CSS and SVG) readable without a server.

The tables are the result card's, converted from its Markdown, so the page and
RESULT.md can never disagree; the plots are drawn from comparison.json and the
cell attempts' sample files.
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
    )


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
