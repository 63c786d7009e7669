"""``history.html``: the nights together, in report.html's style (decision first).

First the badges (drift flagged or not, nights whose audit failed, nights and hosts),
then each flagged drift with links to its night's report and its trend plot, then per
arm, cell and metric the trend plot (one line per host), and last every night with a
link to its campaign's report and its audit outcome, audit failures marked. It shows
what ``HistoryReport`` holds and computes nothing new; links are relative to the page's
folder, so the page and the bundles can move together.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import jinja2

from evidence.folder.layout import REPORT_FILE
from evidence.history.across_nights import HistoryReport, NightRow, Series
from evidence.views.html.report import TEMPLATES, Badge
from evidence.views.html.trend_plots import trend_plot
from faceoff.formats.bundle.comparison import COMPARISON_FILE, RATIO_LABELS

UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class DriftLine:
    anchor: str
    host: str
    arm: str
    cell: str
    metric: str
    night: str
    link: str | None
    change: str
    ticket: str | None


@dataclass(frozen=True)
class Trend:
    anchor: str
    title: str
    plot: str


@dataclass(frozen=True)
class NightLine:
    night: str
    host: str
    campaign: str
    link: str | None
    audit: str
    failed: bool
    in_trends: bool
    problem: str


def label(metric: str) -> str:
    unit = "s" if metric.endswith("_s") else "tok/s"
    return f"{RATIO_LABELS.get(metric, metric)} ({unit})"


def anchor(arm: str, cell: str, metric: str) -> str:
    return "trend-" + UNSAFE.sub("_", f"{arm}-{cell}-{metric}")


TicketKey = tuple[str, str, str, str, date]  # host, arm, cell, metric, night


def render_history(report: HistoryReport, *, page: Path, tickets: dict[TicketKey, Path]) -> str:
    """The page to be written at ``page``; ``tickets``: each drift's ticket file."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    folder = Path(page).resolve().parent
    links = {row.campaign: _report_link(row, folder) for row in report.nights}
    return env.get_template("history.html.j2").render(
        badges=badges(report),
        drift=_drift_lines(report, links, tickets, folder),
        trends=_trends(report),
        nights=[_night_line(row, links[row.campaign]) for row in report.nights],
        method=report.drift_method,
    )


def badges(report: HistoryReport) -> list[tuple[str, Badge]]:
    flags = sum(len(s.drift) for s in report.series)
    failed = sum(row.audit == "failed" for row in report.nights)
    hosts = {row.host for row in report.nights if row.host}
    drift = (
        Badge(f"Drift: {flags} change points flagged", "bad")
        if flags
        else Badge("No drift flagged", "good")
    )
    audits = (
        Badge(f"Audit failed: {failed} nights left out of the trends", "warn")
        if failed
        else (Badge("Every bundle read passed its audit", "good"))
    )
    nights = Badge(f"{len(report.nights)} nights from {len(hosts)} hosts", "plain")
    return [("drift-badge", drift), ("audit-badge", audits), ("nights-badge", nights)]


def _report_link(row: NightRow, folder: Path) -> str | None:
    """The night's report.html, else its comparison.json, relative to the page's folder."""
    for name in (REPORT_FILE, COMPARISON_FILE):
        target = Path(row.bundle) / name
        if target.is_file():
            return _relative(target, folder)
    return None


def _drift_lines(
    report: HistoryReport,
    links: dict[str, str | None],
    tickets: dict[TicketKey, Path],
    folder: Path,
) -> list[DriftLine]:
    lines = []
    for s in report.series:
        for flag in s.drift:
            ticket = tickets.get((s.host, s.arm, s.cell, s.metric, flag.night))
            lines.append(
                DriftLine(
                    anchor=anchor(s.arm, s.cell, s.metric),
                    host=s.host,
                    arm=s.arm,
                    cell=s.cell,
                    metric=RATIO_LABELS.get(s.metric, s.metric),
                    night=f"{flag.night:%Y-%m-%d}",
                    link=links.get(flag.campaign),
                    change=f"{flag.before:.4g} → {flag.after:.4g} ({flag.relative:+.1%}), "
                    f"beyond the typical interval width {flag.width:.3g}",
                    ticket=_relative(ticket, folder) if ticket else None,
                )
            )
    return lines


def _relative(target: Path, folder: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), folder)).as_posix()


def _trends(report: HistoryReport) -> list[Trend]:
    grouped: dict[tuple[str, str, str], list[Series]] = defaultdict(list)
    for s in sorted(report.series, key=lambda s: s.role != "incumbent"):  # the incumbent first
        grouped[(s.arm, s.cell, s.metric)].append(s)
    return [
        Trend(
            anchor(arm, cell, metric),
            f"{arm} · {cell} · {label(metric)}",
            trend_plot(group, label(metric)),
        )
        for (arm, cell, metric), group in grouped.items()
    ]


def _night_line(row: NightRow, link: str | None) -> NightLine:
    audit = {"ok": "ok", "failed": "FAILED", "not audited": "not audited"}[row.audit]
    return NightLine(
        night=f"{row.night:%Y-%m-%d}",
        host=row.host or "unknown",
        campaign=row.campaign,
        link=link,
        audit=audit if not row.failed_checks else f"{audit}: {'; '.join(row.failed_checks)}",
        failed=row.audit == "failed",
        in_trends=row.in_trends,
        problem=row.problem or "",
    )
