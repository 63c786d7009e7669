"""``faceoff history``: the ledger's closed campaigns, each bundle's audit and night from
the history cache (audited and read again only where the bundle changed), the series and
their drift, the drift tickets, and the views: a table, ``--json``, ``--html``.
The same concept at another layer: ``ledger.history``.

It imports only what a cached history needs: the audit, the comparison's models and the
page's plots load when a bundle changed or ``--html`` asks for the page."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import typer
from sqlalchemy import Engine

from evidence.history.across_nights import HistoryReport, LedgerNight, build_history
from evidence.history.drift_tickets import drift_tickets
from evidence.history.refresh import Auditor, refresh
from faceoff.credentials import Credentials, credentials
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.formats.history_cache import (
    CACHE_FILE,
    AuditOutcome,
    CacheEntry,
    HistoryCache,
    bundle_state,
    load_cache,
    save_cache,
)
from faceoff.formats.ticket import DriftTicket
from faceoff.ports import Clock
from flows.cli.ledger_open import existing_ledger, required_ledger
from flows.cli.output_file import fresh_file
from flows.cli.views.console import make_console
from flows.cli.views.plain_table import PlainTable
from ledger.history import closed_campaigns
from tickets.drift import write_drift_tickets


def real_auditor(credentials: Credentials) -> Auditor:
    def audit(bundle: Path) -> AuditOutcome:
        from evidence.audit.reverify import audit_bundle  # noqa: PLC0415  (only on a cache miss)

        try:
            report = audit_bundle(bundle, credentials=credentials)
        except FaceoffError as exc:  # not even a campaign folder: a bad night, not a crash
            return AuditOutcome(ok=False, failed=["a campaign folder"], first=exc.message)
        failed = list(dict.fromkeys(f.check for f in report.findings))
        first = report.findings[0].line if report.findings else None
        return AuditOutcome(ok=report.ok, failed=failed, first=first)

    return audit


def history(
    workdir: Path,
    db: str | None,
    *,
    arm: str | None,
    cell: str | None,
    since: str | None,
    as_json: bool,
    html: Path | None,
    trust: Sequence[Path] = (),
) -> None:
    """``trust``: public keys (or trust files) each bundle's signature is checked with."""
    since_date = parse_since(since)
    if html is not None:
        fresh_file(html)
    engine = required_ledger(existing_ledger(db, workdir), db, workdir)
    trusted = credentials(os.environ, trust=trust)
    auditor = real_auditor(trusted)
    found = sources(engine, workdir, since=since_date, credentials=trusted, auditor=auditor)
    report = build(found, arm=arm, cell=cell, since=since_date)
    tickets = tickets_for(report, found, workdir, lambda: datetime.now(UTC))
    if html is not None:
        write_page(report, html, tickets)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    out = make_console()
    for line in night_lines(report):
        out.print(line)
    out.print(history_table(report))
    for _, path in tickets:
        out.print(f"drift ticket: {path}")
    if html is not None:
        out.print(f"page: {html}")


def write_page(
    report: HistoryReport, html: Path, tickets: Sequence[tuple[DriftTicket, Path]]
) -> None:
    from evidence.views.html.history_page import render_history  # noqa: PLC0415  (matplotlib)

    keyed = {(t.host, t.arm, t.cell, t.metric, t.night): path for t, path in tickets}
    write_text_atomic(html, render_history(report, page=html, tickets=keyed), replace=True)


def parse_since(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise FaceoffError(
            f"{text!r} is not a date", where="--since", fix="pass it as YYYY-MM-DD"
        ) from None


def sources(
    engine: Engine,
    workdir: Path,
    *,
    since: date | None,
    credentials: Credentials,
    auditor: Auditor,
) -> list[LedgerNight]:
    """Every closed campaign with its bundle's entry, refreshed where the bundle changed;
    the cache is saved when anything was."""
    cache = load_cache(workdir / CACHE_FILE)
    entries = dict(cache.entries)
    with engine.connect() as conn:
        rows = [(r.name, r.created_at, Path(r.evidence_dir)) for r in closed_campaigns(conn, since)]
    found, changed = [], bool(cache.poisoned)  # saved without them: audited afresh next run
    for name, started, bundle in rows:
        if not bundle.is_dir():
            found.append(LedgerNight(name, started, str(bundle), None))
            continue
        folder = str(bundle.resolve())
        if folder in cache.poisoned:
            found.append(LedgerNight(name, started, str(bundle), poisoned_entry(workdir)))
            continue
        try:
            state = bundle_state(bundle, credentials)
            entry = refresh(
                bundle, entries.get(folder), state=state, auditor=auditor, fallback=started.date()
            )
        except (OSError, FaceoffError) as exc:  # this night is bad; the others still show
            entry = unreadable_entry(exc)
        changed |= entry is not entries.get(folder)
        entries[folder] = entry
        found.append(LedgerNight(name, started, str(bundle), entry))
    if changed:
        save_cache(workdir / CACHE_FILE, HistoryCache(entries=entries))
    return found


def poisoned_entry(workdir: Path) -> CacheEntry:
    """A night whose cache entry does not verify: someone wrote the cache. Its figures are
    never shown; the next run audits the bundle afresh."""
    what = (
        f"its entry in {workdir / CACHE_FILE} was altered (its MAC does not verify), so it is "
        "not shown; the next faceoff history audits the bundle again"
    )
    audit = AuditOutcome(ok=False, failed=["the history cache entry verifies"], first=what)
    return CacheEntry(state="", audit=audit, night=None, problem=what)


def unreadable_entry(exc: Exception) -> CacheEntry:
    """The entry of a bundle whose files could not even be listed: a failed audit."""
    what = exc.message if isinstance(exc, FaceoffError) else f"cannot be read: {exc}"
    audit = AuditOutcome(ok=False, failed=["the bundle's files can be listed"], first=what)
    return CacheEntry(state="", audit=audit, night=None, problem=what)


def check_filters(found: Sequence[LedgerNight], arm: str | None, cell: str | None) -> None:
    """An --arm or --cell no night has is a typo, not an empty history."""
    nights = [s.entry.night for s in found if s.entry and s.entry.night]
    for flag, wanted, known in (
        ("--arm", arm, {a for night in nights for a in night.arm}),
        ("--cell", cell, {c for night in nights for c in night.cell}),
    ):
        if wanted is not None and wanted not in known:
            raise FaceoffError(
                f"no night has {wanted!r} (known: {', '.join(sorted(known)) or 'none'})",
                where=flag,
                fix=f"pass one of the known names, or drop {flag}",
            )


def tickets_for(
    report: HistoryReport, found: Sequence[LedgerNight], workdir: Path, now: Clock
) -> list[tuple[DriftTicket, Path]]:
    bundles = {s.campaign: s.bundle for s in found}
    made = drift_tickets(report, bundles=bundles, now=now)
    return list(zip(made, write_drift_tickets(workdir, made), strict=True))


def build(
    found: Sequence[LedgerNight], *, arm: str | None, cell: str | None, since: date | None
) -> HistoryReport:
    check_filters(found, arm, cell)
    return build_history(found, arm=arm, cell=cell, since=since)


def history_table(report: HistoryReport) -> PlainTable:
    table = PlainTable(
        "history: incumbent and candidate nightly p50 per host",
        ("arm", "cell", "host", "metric", "nights", "last p50 [interval]", "drift"),
        title_justify="left",
    )
    for s in report.series:
        low, high = s.p50_low[-1], s.p50_high[-1]
        interval = f" [{low:.4g}, {high:.4g}]" if low is not None and high is not None else ""
        shown = f"{s.p50[-1]:.4g}{interval}"
        drift = "; ".join(f"{d.night:%Y-%m-%d} {d.relative:+.1%}" for d in s.drift)
        table.add_row(s.arm, s.cell, s.host, s.metric, str(len(s.p50)), shown, drift or "—")
    return table


def night_lines(report: HistoryReport) -> list[str]:
    hosts = {n.host for n in report.nights if n.host}
    used = sum(n.in_trends for n in report.nights)
    lines = [f"{len(report.nights)} closed campaigns from {len(hosts)} hosts, {used} in the trends"]
    lines += [
        f"left out: {n.campaign} ({n.night:%Y-%m-%d}): {n.problem}"
        for n in report.nights
        if not n.in_trends
    ]
    return lines
