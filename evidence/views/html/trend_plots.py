"""history.html's trend plots as inline SVG: one arm, cell and metric over the nights,
one line per host.

Each host's nightly p50 is a line with its interval as a band, its p95 a dotted line;
a flagged change point is a dashed red vertical line at its night. The quantity axis
starts at 0 (as in report.html), so night-to-night noise is not drawn as a trend.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

from matplotlib.axes import Axes

from evidence.history.across_nights import Series
from evidence.views.html.plots import _figure, _svg, styled

DRIFT_COLOUR = "#cf222e"
EPOCH = date(1970, 1, 1)  # the x axis counts days from it
TICKS = 6


def trend_plot(series: Sequence[Series], label: str) -> str:
    """The series share arm, cell and metric; they differ by host."""
    fig = _figure(1, width=9.0, height=2.8)
    with styled():
        ax = fig.add_subplot()
        for one in series:
            _host_lines(ax, one)
        first = series[0]
        ax.set_ylim(bottom=0)
        ax.set_ylabel(label)
        ax.set_title(
            f"{first.arm} · {first.cell} · {label}: nightly p50 (band: interval), p95 dotted"
        )
        _date_ticks(ax, [night for one in series for night in one.nights])
        ax.legend(fontsize=7, ncols=min(4, len(series)))
        fig.autofmt_xdate()
    return _svg(fig)


def _host_lines(ax: Axes, one: Series) -> None:
    nights = [_x(night) for night in one.nights]
    (line,) = ax.plot(nights, one.p50, linewidth=1, label=one.host)
    banded = [
        (x, low, high)
        for x, low, high in zip(nights, one.p50_low, one.p50_high, strict=True)
        if low is not None and high is not None
    ]
    ax.fill_between(
        [x for x, _, _ in banded],
        [low for _, low, _ in banded],
        [high for _, _, high in banded],
        color=line.get_color(),
        alpha=0.2,
        linewidth=0,
    )
    ax.plot(nights, one.p95, ":", color=line.get_color(), linewidth=1)
    for flag in one.drift:
        ax.axvline(_x(flag.night), color=DRIFT_COLOUR, linestyle="--", linewidth=1.2)
        ax.annotate(
            f"drift {flag.relative:+.0%} ({one.host})",
            (_x(flag.night), flag.after),
            color=DRIFT_COLOUR,
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )


def _x(night: date) -> float:
    return float((night - EPOCH).days)


def _date_ticks(ax: Axes, nights: Sequence[date]) -> None:
    """About six dated ticks across the nights shown."""
    first, last = min(nights), max(nights)
    step = max(1, (last - first).days // TICKS)
    ticks = [first + timedelta(days=step * k) for k in range((last - first).days // step + 1)]
    ax.set_xticks([_x(t) for t in ticks], [f"{t:%Y-%m-%d}" for t in ticks])
