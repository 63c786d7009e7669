"""Plots for report.html as inline SVG (matplotlib, no pyplot state, deterministic output).

They draw what the bundle holds: the ratio intervals and p50/p95 from
comparison.json, the raw engine, GPU and host samples of each cell attempt
against seconds since the attempt's first sample, and a sweep's per-step TTFT
p50/p95 from its summaries. Nothing is smoothed or derived. Every quantity axis
starts at 0, so that sampling noise on a flat line is not drawn as a trend.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faceoff.formats.attempt.collector_samples import EngineSample, GpuSample, HostSample
from faceoff.formats.attempt.summary import LoadSummary
from faceoff.formats.bundle.comparison import Comparison, Ratio, RatioVerdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

GIB = 1024**3
NS = 1e9
RC: dict[Any, Any] = {
    "svg.hashsalt": "faceoff",
    "svg.fonttype": "none",  # text as text: searchable, half the page, a tenth faster to draw
    "font.size": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


@dataclass(frozen=True)
class CellSeries:
    """The samples of one cell attempt on one arm."""

    arm: str
    engine: Sequence[EngineSample]
    gpu: Sequence[GpuSample] | None
    host: Sequence[HostSample]


@contextmanager
def styled() -> Iterator[None]:
    """These plots' matplotlib settings. matplotlib is loaded by the first drawing, not by
    this module: a page whose figures are only named by their data (the audit's) never
    loads it."""
    import matplotlib  # noqa: PLC0415

    with matplotlib.rc_context(RC):
        yield


def load() -> None:
    """Load matplotlib now: the workers that draw, forked after it, then share it rather
    than each loading it (most of a second each)."""
    import matplotlib.figure  # noqa: PLC0415, F401


def _svg(fig: Figure) -> str:
    """The figure as SVG, cropped to what it drew unless its layout is fixed."""
    buffer = io.StringIO()
    crop = "tight" if fig.get_layout_engine() is not None else None
    with styled():
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches=crop)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(rows: int, width: float = 9.0, height: float = 2.4) -> Figure:
    """A figure laid out to fit whatever its axes hold (long tick labels, legends)."""
    from matplotlib.figure import Figure  # noqa: PLC0415  (see styled)

    with styled():
        return Figure(figsize=(width, height * rows), layout="constrained")


# Margins of a timeline, in inches: its tick labels are short numbers and its legend is
# inside the axes, so they are known before drawing. Laying the figure out to fit and
# cropping it drew it three times; a report draws two timelines per cell.
TIMELINE_MARGINS = {"left": 0.65, "right": 0.12, "top": 0.3, "bottom": 0.45, "between": 0.55}


def _timeline_figure(rows: int, width: float = 9.0, height: float = 2.4) -> Figure:
    from matplotlib.figure import Figure  # noqa: PLC0415  (see styled)

    m = TIMELINE_MARGINS
    tall = height * rows
    axes_tall = (tall - m["top"] - m["bottom"] - (rows - 1) * m["between"]) / rows
    with styled():
        fig = Figure(figsize=(width, tall))
        fig.subplots_adjust(
            left=m["left"] / width,
            right=1 - m["right"] / width,
            top=1 - m["top"] / tall,
            bottom=m["bottom"] / tall,
            hspace=m["between"] / axes_tall,
        )
    return fig


def percentile_bars(comparison: Comparison, metric: str, label: str) -> str:
    """p50 bars with p95 markers for each cell (stratum and concurrency) and arm."""
    names = [a.name for a in comparison.arms]
    cells = [c for c in comparison.cells if any(a.metrics.get(metric) for a in c.arms)]
    fig = _figure(1, width=max(6.0, 0.9 * len(cells) + 2))
    with styled():
        ax = fig.add_subplot()
        width = 0.8 / max(1, len(names))
        for i, name in enumerate(names):
            p50: list[float] = []
            p95: list[float] = []
            xs: list[float] = []
            for x, cell in enumerate(cells):
                entry = next((a for a in cell.arms if a.arm == name), None)
                stats = entry.metrics.get(metric) if entry else None
                if stats is not None and stats.p50 is not None and stats.p95 is not None:
                    xs.append(x + i * width)
                    p50.append(stats.p50)
                    p95.append(stats.p95)
            ax.bar(xs, p50, width=width, label=f"{name} p50")
            ax.scatter(xs, p95, marker="_", s=120, color="black", zorder=3)
        ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(cells))])
        ax.set_xticklabels([c.id for c in cells], rotation=30, ha="right")
        ax.set_ylabel(label)
        ax.set_title(f"{label} per cell (bars p50, black marks p95)")
        ax.legend()
    return _svg(fig)


def kld_distribution(comparison: Comparison) -> str:
    """Each fidelity entry's per-position KLD as a distribution (share of positions below)."""
    fig = _figure(1, width=7.0, height=3.0)
    with styled():
        ax = fig.add_subplot()
        shares = [q / 20 for q in range(21)]
        for e in comparison.fidelity:
            if e.figures is not None:
                label = f"{e.cell}: {e.arm} vs {e.reference}"
                ax.plot(e.figures.kld_quantiles, shares, marker=".", label=label)
            if e.figures is not None and e.floor is not None:
                ax.axvline(e.floor.value, color="#57606a", linestyle=":", linewidth=1)
        ax.set_xlabel("KLD at a position (nats; dotted: the noise floor's mean)")
        ax.set_ylabel("share of positions at or below")
        ax.set_title("Per-position KLD against the reference")
        ax.legend()
    return _svg(fig)


VERDICT_COLOURS: dict[RatioVerdict, str] = {
    "better": "#1a7f37",
    "worse": "#cf222e",
    "no difference": "#57606a",
    "descriptive": "#afb8c1",  # too few requests for a calibrated interval: no verdict
}
FINE_TICKS = (0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2)  # for intervals close to 1
COARSE_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)


@dataclass(frozen=True)
class ForestRow:
    """One ratio interval of the forest plot, labelled with its cell, candidate and metric."""

    label: str
    ratio: Ratio


def forest_figure(rows: Sequence[ForestRow]) -> Figure:
    """Every ratio interval on one log-scale axis with a line at 1, coloured by its verdict."""
    fig = _figure(1, width=9.0, height=0.8 + 0.26 * max(1, len(rows)))
    with styled():
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.axvline(1, color="black", linewidth=1)
        # one collection of intervals and one of points, not two lines per row: a
        # campaign's forest has hundreds of rows
        ys = range(len(rows))
        colours = [VERDICT_COLOURS[row.ratio.verdict] for row in rows]
        ax.hlines(ys, [row.ratio.low for row in rows], [row.ratio.high for row in rows],
                  colors=colours, linewidth=2.2, capstyle="butt")  # fmt: skip
        ax.scatter([row.ratio.ratio for row in rows], ys, color=colours, s=16, zorder=3)
        ax.set_yticks(range(len(rows)), [row.label for row in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
        bounds = [x for row in rows for x in (row.ratio.low, row.ratio.high)] + [1.0]
        low, high = min(bounds) / 1.15, max(bounds) * 1.15
        ax.set_xlim(low, high)
        marks = FINE_TICKS if high / low < 4 else COARSE_TICKS
        ticks = [t for t in marks if low <= t <= high]
        ax.set_xticks(ticks, [f"{t:g}×" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(
            "candidate p50 / incumbent p50 (log scale); green better, red worse, "
            "grey no difference for the candidate"
        )
    return fig


def forest_plot(rows: Sequence[ForestRow]) -> str:
    return _svg(forest_figure(rows))


def _seconds(samples: Sequence[EngineSample | GpuSample | HostSample]) -> list[float]:
    start = samples[0].actual_ns if samples else 0
    return [(s.actual_ns - start) / NS for s in samples]


def engine_timeline(cell_id: str, series: Sequence[CellSeries]) -> str:
    return _svg(engine_figure(cell_id, series))


def engine_figure(cell_id: str, series: Sequence[CellSeries]) -> Figure:
    """Engine running and waiting requests, and KV usage, over time for each arm, from 0."""
    fig = _timeline_figure(2)
    with styled():
        queue_ax, kv_ax = fig.subplots(2, 1, sharex=False)
        for s in series:
            ok = [e for e in s.engine if e.ok and e.metrics is not None]
            t = _seconds(ok)
            gauges = [e.metrics.gauges if e.metrics else {} for e in ok]
            queue_ax.plot(
                t, [g.get("num_requests_running") for g in gauges], label=f"{s.arm} running"
            )
            queue_ax.plot(
                t, [g.get("num_requests_waiting") for g in gauges], "--", label=f"{s.arm} waiting"
            )
            kv_ax.plot(t, [100 * (g.get("kv_cache_usage_perc") or 0) for g in gauges], label=s.arm)
        queue_ax.set_title(f"{cell_id}: engine requests running / waiting")
        kv_ax.set_title(f"{cell_id}: KV cache usage (%)")
        kv_ax.set_xlabel("seconds since the attempt's first engine sample")
        for ax in (queue_ax, kv_ax):
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=7)
    return fig


def _gpu_lines(gpu: Sequence[GpuSample]) -> dict[int, tuple[list[float], list[float]]]:
    """Per device index: (seconds, GiB used) of the samples that read its memory."""
    start = gpu[0].actual_ns if gpu else 0
    lines: dict[int, tuple[list[float], list[float]]] = {}
    for sample in gpu:
        for device in sample.devices:
            if device.used_bytes is not None:
                t, used = lines.setdefault(device.index, ([], []))
                t.append((sample.actual_ns - start) / NS)
                used.append(device.used_bytes / GIB)
    return lines


def memory_figure(cell_id: str, series: Sequence[CellSeries]) -> Figure:
    """Lane (cgroup) memory and, where sampled, each GPU's used memory over time, from 0 GiB."""
    has_gpu = any(s.gpu for s in series)
    fig = _timeline_figure(2 if has_gpu else 1)
    with styled():
        axes = fig.subplots(2 if has_gpu else 1, 1, squeeze=False)[:, 0]
        for s in series:
            lanes = [h for h in s.host if h.lane is not None]
            lane_gib = [h.lane.usage_bytes / GIB for h in lanes if h.lane]
            axes[0].plot(_seconds(lanes), lane_gib, label=s.arm)
            for index, (t, used) in _gpu_lines(s.gpu or []).items():
                axes[-1].plot(t, used, label=f"{s.arm} GPU {index}")
        axes[0].set_title(f"{cell_id}: lane memory (GiB; cgroups include page cache)")
        if has_gpu:
            axes[1].set_title(f"{cell_id}: GPU memory used per device (GiB)")
        for ax in axes:
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=7)
        axes[-1].set_xlabel("seconds since the attempt's first sample")
    return fig


def memory_timeline(cell_id: str, series: Sequence[CellSeries]) -> str:
    return _svg(memory_figure(cell_id, series))


def rate_latency(cell_id: str, sweeps: Sequence[tuple[str, LoadSummary]]) -> str:
    """Visible TTFT p50 and p95 against each step's offered rate, per arm, in rate order;
    a dotted line marks each arm's highest rate within SLO."""
    fig = _figure(1, width=7.0, height=3.2)
    with styled():
        ax = fig.add_subplot()
        for arm, load in sweeps:
            points = sorted(
                (s.rate_rps, s.ttft_p50_s, s.ttft_p95_s)
                for s in load.steps
                if s.rate_rps is not None and s.ttft_p50_s is not None and s.ttft_p95_s is not None
            )
            rates = [rate for rate, _, _ in points]
            (line,) = ax.plot(rates, [p50 for _, p50, _ in points], "o-", label=f"{arm} p50")
            ax.plot(rates, [p95 for _, _, p95 in points], "s--", color=line.get_color(),
                    label=f"{arm} p95")  # fmt: skip
            within = load.sweep.max_rate_within_slo if load.sweep else None
            if within is not None:
                ax.axvline(within, color=line.get_color(), linestyle=":", linewidth=1)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("offered rate (requests/s)")
        ax.set_ylabel("visible TTFT (s)")
        ax.set_title(f"{cell_id}: TTFT against offered rate (dotted: highest rate within SLO)")
        ax.legend(fontsize=7)
    return _svg(fig)
