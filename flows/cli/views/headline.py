"""The run summary's headline figures: per arm of one cell, what ``vllm bench serve`` ends
with (TTFT, TPOT and E2E medians and tails with their n, output throughput, goodput, energy
per output token), read from ``faceoff export``'s rows, so the summary, the export and the
card show one set of numbers; it computes nothing.

The cell is the one the declared rule's first criterion was decided on, else the first cell
every arm ran to acceptance: one cell, so its arms are a matched pair. A tail is the p99
where the summary keeps one (enough independent requests to claim it), else the p95, and
the header says which.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from evidence.views.export import ExportRow, export_rows
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.reasons import Disposition

LATENCIES = (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "E2E"))
FIGURES = (
    ("aggregate_output_tps", "out tok/s", "{:.1f}"),
    ("goodput_rps", "goodput/s", "{:.2f}"),
    ("energy_per_token_j", "J/token", "{:.3g}"),
)


def headline_cell(comparison: Comparison) -> str | None:
    """The cell the summary's figures come from (None: no cell every arm ran)."""
    ids = [c.id for c in comparison.cells]
    ruling = comparison.ruling
    decided = [
        line.deciding_cell
        for candidate in (ruling.candidates if ruling else [])
        for line in candidate.criteria
        if line.deciding_cell in ids
    ]
    accepted = [
        c.id for c in comparison.cells
        if c.arms and all(a.disposition == Disposition.ACCEPTED for a in c.arms)
    ]  # fmt: skip
    return next(iter([*decided, *accepted]), None)


def headline_table(comparison: Comparison) -> tuple[str, Table] | None:
    """The block's title line and its table, one row per arm; None without a cell."""
    cell = headline_cell(comparison)
    if cell is None:
        return None
    rows = [r for r in export_rows(comparison).rows if r.cell == cell]
    arms = list(dict.fromkeys(r.arm for r in rows))
    tail = "p99" if all(_tail_kept(rows, metric) for metric, _ in LATENCIES) else "p95"
    table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False)
    for header in ("arm", "n", *(f"{label} p50/{tail} ms" for _, label in LATENCIES)):
        table.add_column(header, no_wrap=True, overflow="ellipsis")
    for _, header, _ in FIGURES:
        table.add_column(header, no_wrap=True, overflow="ellipsis")
    for arm in arms:
        table.add_row(*arm_cells(arm, [r for r in rows if r.arm == arm], tail))
    return f"headline figures, cell {cell} (one matched pair; every cell in RESULT.md):", table


def arm_cells(arm: str, rows: Sequence[ExportRow], tail: str) -> list[str]:
    """One arm's row: its name, the requests behind its TTFT, each latency's median and
    tail in ms, then its cell run figures ("-" where the run has none)."""
    by_metric = {r.metric: r for r in rows}
    ttft = by_metric.get("ttft_s")
    latencies = [_latency(by_metric.get(metric), tail) for metric, _ in LATENCIES]
    figures = [_figure(by_metric.get(metric), shape) for metric, _, shape in FIGURES]
    return [arm, str(ttft.n) if ttft and ttft.n is not None else "-", *latencies, *figures]


def _tail_kept(rows: Sequence[ExportRow], metric: str) -> bool:
    return all(r.p99 is not None for r in rows if r.metric == metric)


def _latency(row: ExportRow | None, tail: str) -> str:
    if row is None or row.p50 is None:
        return "-"
    high = row.p99 if tail == "p99" else row.p95
    return f"{row.p50 * 1000:.1f}/{high * 1000:.1f}" if high is not None else "-"


def _figure(row: ExportRow | None, shape: str) -> str:
    return shape.format(row.mean) if row is not None and row.mean is not None else "-"
