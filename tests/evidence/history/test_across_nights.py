"""`faceoff history` over a generated year of nights from 4 hosts, a real campaign's bundle
edited after its audit, and history.html opened in headless Chromium."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlparse

import pytest

from benchmarks.history_year import (
    DRIFT_HOST,
    FIRST_NIGHT,
    TAMPERED,
    Year,
    campaign_name,
    drift_night,
    host_name,
    write_year,
)
from evidence.audit.reverify import HASHES
from evidence.bundle.write import BundleIndex
from evidence.history.across_nights import HistoryReport, build_history
from evidence.history.night_read import NightSource, night_of, read_source
from faceoff.credentials import NOBODY
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import COMPARISON_FILE
from faceoff.formats.history_cache import AuditOutcome
from faceoff.formats.ticket import DRIFT_DIR
from flows.cli.history import real_auditor, sources
from ledger.campaigns import open_campaign
from ledger.cells import set_campaign_state
from ledger.db import open_ledger, resolve_url, session_scope
from tests.evidence.devtools import evaluate_in_page
from tests.evidence.views.html.test_report import chromium
from tests.foundation.cli import faceoff
from tickets.drift import read_drift_ticket

INCUMBENT, CANDIDATE = "incumbent-r11", "candidate-r2"
FIRST_CELL = "natural-192-c8-000"
PROBE = Path(__file__).with_name("history_probe.js")


@pytest.fixture(scope="module")
def year(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A year of nights from 4 hosts in one SQLite ledger, the drift planted on host 2."""
    workdir = tmp_path_factory.mktemp("year")
    write_year(workdir)
    return workdir


def history_json(workdir: Path, *args: str, db: str | None = None) -> HistoryReport:
    extra = ("--db", db) if db else ()
    done = faceoff("history", "--workdir", str(workdir), *extra, "--json", *args)
    assert done.returncode == 0, done.stderr
    return HistoryReport.model_validate_json(done.stdout)


def flagged(report: HistoryReport) -> set[tuple[str, str, str, str, date]]:
    return {(s.host, s.arm, s.cell, s.metric, d.night) for s in report.series for d in s.drift}


def test_the_planted_drift_is_flagged_on_its_host_arm_cell_and_night_and_nothing_else(
    year: Path,
) -> None:
    report = history_json(year)
    assert len(report.nights) == 365 * 4
    assert {n.host for n in report.nights} == {host_name(h) for h in range(4)}
    moved = {
        s.metric for s in report.series if s.arm == INCUMBENT and s.cell == FIRST_CELL
    }  # every headline metric of the slowed arm and cell
    assert len(moved) >= 4
    expected = {(host_name(DRIFT_HOST), INCUMBENT, FIRST_CELL, m, drift_night()) for m in moved}
    assert flagged(report) == expected
    drift = next(s for s in report.series if s.drift and s.metric == "ttft_s").drift[0]
    assert drift.relative == pytest.approx(0.25, abs=0.03)
    assert drift.campaign == campaign_name(DRIFT_HOST, (drift_night() - FIRST_NIGHT).days)
    assert all(not s.drift for s in report.series if s.role == "candidate")
    incumbent = [s for s in report.series if s.arm == INCUMBENT and s.metric == "ttft_s"]
    assert all(low is not None for s in incumbent for low in s.p50_low + s.p50_high)


def test_nights_whose_audit_failed_are_listed_and_left_out_of_the_trends(year: Path) -> None:
    report = history_json(year)
    failed = {n.campaign for n in report.nights if n.audit == "failed"}
    assert failed == {campaign_name(host, night) for host, night in TAMPERED}
    for night in report.nights:
        assert night.in_trends == (night.campaign not in failed)
        if night.campaign in failed:
            assert night.failed_checks == [HASHES] and "audit failed" in (night.problem or "")
    plotted = {campaign for s in report.series for campaign in s.campaigns}
    assert not plotted & failed
    assert len(plotted) == 365 * 4 - len(TAMPERED)


def test_each_drift_becomes_one_ticket_that_a_second_run_keeps(year: Path) -> None:
    report = history_json(year)
    paths = sorted((year / DRIFT_DIR).glob("*.md"))
    tickets = [read_drift_ticket(p) for p in paths]
    assert {(t.host, t.arm, t.cell, t.metric, t.night) for t in tickets} == flagged(report)
    for ticket in tickets:
        assert ticket.kind == "drift" and ticket.status == "open"
        assert ticket.after / ticket.before - 1 == pytest.approx(ticket.relative)
        assert all(Path(e).is_dir() for e in ticket.evidence)
    first = {p.name: p.read_text(encoding="utf-8") for p in paths}
    history_json(year)
    again = {p.name: p.read_text(encoding="utf-8") for p in (year / DRIFT_DIR).glob("*.md")}
    assert again == first


def test_arm_cell_and_since_narrow_the_series_and_nights(year: Path) -> None:
    since = FIRST_NIGHT + timedelta(days=300)
    report = history_json(year, "--arm", CANDIDATE, "--cell", FIRST_CELL, "--since", str(since))
    assert {(s.arm, s.cell) for s in report.series} == {(CANDIDATE, FIRST_CELL)}
    assert {s.host for s in report.series} == {host_name(h) for h in range(4)}
    assert min(n.night for n in report.nights) == since
    assert all(len(s.p50) in (65, 64) for s in report.series)  # 65 nights, one tampered


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--arm", "nosuch"), "error: --arm: no night has 'nosuch' (known: candidate-r2, "),
        (("--cell", "nosuch"), "error: --cell: no night has 'nosuch'"),
        (("--since", "last tuesday"), "error: --since: 'last tuesday' is not a date"),
    ],
)
def test_an_unknown_arm_or_cell_or_a_bad_date_is_one_line_and_exit_2(
    year: Path, args: tuple[str, ...], message: str
) -> None:
    done = faceoff("history", "--workdir", str(year), *args)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


class CountingAuditor:
    """The real audit, counted: a cached outcome must not run it again."""

    def __init__(self) -> None:
        self.audited: list[Path] = []
        self.audit = real_auditor(NOBODY)

    def __call__(self, bundle: Path) -> AuditOutcome:
        self.audited.append(bundle)
        return self.audit(bundle)


def test_a_bundle_edited_after_its_audit_is_audited_again_and_left_out(
    bundle_copy: Callable[..., Path], tmp_path: Path
) -> None:
    bundle = bundle_copy("bundles")
    workdir = tmp_path / "runs"
    engine = open_ledger(resolve_url(None, workdir))
    opened = datetime(2026, 11, 20, 1, 0, tzinfo=UTC)
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name=bundle.name, matrix_id="m", evidence_dir=bundle, now=lambda: opened
        )
        set_campaign_state(session, row, status="closed_partial", now=lambda: opened)
    auditor = CountingAuditor()

    def night() -> tuple[Any, ...]:
        found = sources(engine, workdir, since=None, credentials=NOBODY, auditor=auditor)
        report = build_history(found, arm=None, cell=None, since=None)
        return report.nights[0].audit, report.nights[0].in_trends, len(report.series)

    assert night()[:2] == ("ok", True) and night()[2] > 0
    assert len(auditor.audited) == 1  # the second read used the cached outcome
    comparison = bundle / COMPARISON_FILE
    data = json.loads(comparison.read_text(encoding="utf-8"))
    data["cells"][0]["arms"][0]["metrics"]["ttft_s"]["p50"] *= 0.5  # a nicer figure
    comparison.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    assert night() == ("failed", False, 0)  # SHA256SUMS is as it was; the state is not
    assert len(auditor.audited) == 2
    assert night() == ("failed", False, 0) and len(auditor.audited) == 2


@pytest.fixture
def pg_url(scratch_pg: Callable[[], str]) -> str:
    """A database of this test's own inside the test server, dropped afterwards."""
    return scratch_pg()


@pytest.mark.postgres
def test_history_reads_nights_of_several_hosts_from_a_postgresql_ledger(
    pg_url: str, tmp_path: Path
) -> None:
    write_year(tmp_path, pg_url, Year(nights=20, hosts=2))
    report = history_json(tmp_path, db=pg_url)
    assert len(report.nights) == 40
    assert {s.host for s in report.series} == {host_name(0), host_name(1)}
    assert all(len(s.p50) == 20 for s in report.series)


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 390])
def test_chromium_shows_the_drift_first_every_link_resolves_and_nothing_overflows(
    year: Path, tmp_path: Path, width: int
) -> None:
    page = year / "history.html"
    if not page.exists():
        done = faceoff("history", "--workdir", str(year), "--html", str(page))
        assert done.returncode == 0, done.stderr
    found = cast(
        dict[str, Any],
        evaluate_in_page(
            chromium(),
            page.as_uri(),
            PROBE.read_text(encoding="utf-8"),
            width=width,
            profile=tmp_path / "profile",
            env={"HOME": str(tmp_path)},
        ),
    )
    assert found["innerWidth"] == width
    assert found["scrollWidth"] <= found["innerWidth"], "the document scrolls sideways"
    drift = found["drift"]
    assert drift["text"].startswith("Drift: ") and "change points flagged" in drift["text"]
    assert drift["top"] < 400 and "bad" in drift["className"]
    assert found["audit"]["text"] == f"Audit failed: {len(TAMPERED)} nights left out of the trends"
    rows = found["driftRows"]
    changed = f"{drift_night():%Y-%m-%d}"
    assert rows and all(host_name(DRIFT_HOST) in r and changed in r for r in rows)
    assert found["failedRows"] == len(TAMPERED)
    assert found["plots"] == found["trendHeadings"] > 0
    for link in found["links"]:
        if link["href"].startswith("#"):
            assert link["anchored"], link["href"]
            continue
        target = Path(unquote(urlparse(link["url"]).path))
        assert target.is_file(), link["href"]
        assert target.resolve().is_relative_to(year.resolve()), link["href"]
    assert found["tables"] and all(t["overflowX"] == "auto" for t in found["tables"])


def test_an_arms_interval_is_its_half_of_the_pairs_ratio_interval(built: BundleIndex) -> None:
    night = night_of(NightSource.of(built.comparison), host="gpu-a", fallback=date(2026, 1, 1))
    cell = next(c for c in built.comparison.cells if c.ratios)
    ratio = next(r for r in cell.ratios if r.metric == "ttft_s")
    share = 1 / math.sqrt(2)
    for arm, stats in ((a.arm, a.metrics["ttft_s"]) for a in cell.arms):
        shown = next(
            m for m in night.metrics if (m.cell, m.arm, m.metric) == (cell.id, arm, "ttft_s")
        )
        assert shown.p50 == stats.p50 and shown.n == stats.n
        assert shown.p50_interval is not None and stats.p50 is not None
        low, high = (ratio.low / ratio.ratio) ** share, (ratio.high / ratio.ratio) ** share
        assert shown.p50_interval.low == pytest.approx(stats.p50 * low)
        assert shown.p50_interval.high == pytest.approx(stats.p50 * high)
        assert shown.p95_interval is None  # no rule asked for p95 ratios
    runs = [(c.id, a) for c in built.comparison.cells for a in c.arms]
    failed = {(cell_id, a.arm) for cell_id, a in runs if a.disposition != "accepted"}
    assert failed and not failed & {(m.cell, m.arm) for m in night.metrics}
    started = built.comparison.observed_from
    assert night.host == "gpu-a" and started is not None and night.night == started.date()


def test_a_night_of_an_older_comparison_format_is_read_the_same(
    built: BundleIndex, tmp_path: Path
) -> None:
    current = built.comparison.model_dump(mode="json")
    older = json.loads(json.dumps(current))
    older["schema_version"] = 5  # before tail_ratios, goodput, ruling, carried cells
    for key in ("ruling", "goodput_method", "carried"):
        older.pop(key, None)
    for cell in older["cells"]:
        cell.pop("tail_ratios", None)
        for arm in cell["arms"]:
            arm.pop("goodput", None)
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    fallback = date(2026, 1, 1)
    then = night_of(read_source(path), host="gpu-a", fallback=fallback)
    now = night_of(NightSource.of(built.comparison), host="gpu-a", fallback=fallback)
    assert then.metrics and [m.p50_interval for m in then.metrics] == [
        m.p50_interval for m in now.metrics
    ]
    assert [(m.cell, m.arm, m.metric, m.p50, m.p95) for m in then.metrics] == [
        (m.cell, m.arm, m.metric, m.p50, m.p95) for m in now.metrics
    ]
    path.write_text(json.dumps({"schema_version": 5, "campaign": "x"}), encoding="utf-8")
    with pytest.raises(FaceoffError, match="not a readable comparison"):
        read_source(path)
