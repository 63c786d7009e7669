"""A year of nightly campaigns from 4 hosts in one ledger, with a planted drift.

    .venv/bin/python -m benchmarks.history_year WORKDIR [--nights 365] [--hosts 4] [--db URL]

First one small synthetic campaign (``benchmarks.synthetic_campaign``: 2 cells × 2 arms)
is bundled by ``write_bundle``: its ``comparison.json`` and ``MANIFEST.json`` are the
template of every night. Then, per host and night, a campaign ``nightly-<host>-<date>``:
its ledger rows (``open_campaign`` on that host, one accepted attempt per cell run, closed
``complete``) and a minimal bundle folder holding the template's comparison (campaign,
night and each arm's p50/p95 and ratio intervals set) and manifest (campaign and host
name set), sealed by ``write_sums``. The figures: each host has its own level (hosts
differ), every night a seeded 2 % lognormal noise, ratio intervals as wide as that noise
gives; and on ``DRIFT_HOST`` the incumbent's first cell gets 25 % slower (times up,
rates down) from night ``DRIFT_NIGHT`` on.

These folders are not whole campaigns (no journals, receipt or views), so a real audit
would fail every one: the audit outcome of each night is planted in the history cache
(``faceoff.formats.history_cache.audit_entry``) as its nightly run would have recorded it: ok,
except on the nights of ``TAMPERED``, whose ``comparison.json`` is edited after the seal
and recorded as failing the hash check.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlmodel import Session

from benchmarks.synthetic_campaign import Shape, generate
from collectors.inventory import PynvmlInventory, collect_host, collect_source
from evidence.audit.reverify import HASHES
from evidence.bundle.write import write_bundle
from evidence.comparison.cells import ratio_verdict
from evidence.folder.layout import CampaignFolder
from evidence.folder.sums import write_sums
from faceoff.credentials import NOBODY
from faceoff.formats.bundle.comparison import COMPARISON_FILE, ArmCell, CellEntry, Comparison, Ratio
from faceoff.formats.bundle.manifest import MANIFEST_FILE, Manifest
from faceoff.formats.history_cache import (
    CACHE_FILE,
    AuditOutcome,
    HistoryCache,
    audit_entry,
    save_cache,
)
from faceoff.ports import Clock
from ledger.campaigns import open_campaign
from ledger.cells import begin_attempt, finish_attempt, set_campaign_state
from ledger.db import open_ledger, resolve_url, session_scope
from workload.metrics import higher_is_better

REPO = Path(__file__).resolve().parents[1]
FIRST_NIGHT = date(2025, 12, 1)
DRIFT_HOST = 1  # gpu-host-2
DRIFT_NIGHT = 240
SLOWDOWN = 1.25
NOISE = 0.02  # relative sd of a night's p50 around its level
TAMPERED = frozenset({(2, 100), (3, 300)})  # (host, night) whose bundles fail their audit
TEMPLATE_SHAPE = Shape(requests=256, cells=2, concurrency=8, input_tokens=192, output_tokens=16)


@dataclass(frozen=True)
class Year:
    nights: int = 365
    hosts: int = 4
    seed: int = 20251201


def host_name(index: int) -> str:
    return f"gpu-host-{index + 1}"


def campaign_name(host: int, night: int) -> str:
    return f"nightly-{host_name(host)}-{FIRST_NIGHT + timedelta(days=night):%Y%m%d}"


def drift_night() -> date:
    return FIRST_NIGHT + timedelta(days=DRIFT_NIGHT)


def template(out: Path) -> tuple[Comparison, Manifest]:
    """A real small campaign's comparison and manifest, bundled by ``write_bundle``."""
    folder = generate(out, TEMPLATE_SHAPE)

    def no_docker() -> object:
        raise ConnectionError("the generator asks Docker nothing")

    host = collect_host(PynvmlInventory(), no_docker)
    built = write_bundle(
        folder, now=lambda: datetime.now(UTC), host=host, source=collect_source(REPO)
    )
    return built.comparison, Manifest.read(folder / MANIFEST_FILE)


def write_year(workdir: Path, db: str | None = None, year: Year = Year()) -> list[Path]:
    """Every night's bundle folder under ``workdir``, its ledger rows and planted audits."""
    workdir.mkdir(parents=True, exist_ok=True)
    comparison, manifest = template(workdir / ".template")
    engine = open_ledger(resolve_url(db, workdir))
    rng = random.Random(year.seed)
    folders, entries = [], {}
    for night in range(year.nights):
        for host in range(year.hosts):
            folder = workdir / campaign_name(host, night)
            night_comparison = _night(comparison, host, night, rng)
            _bundle(folder, night_comparison, manifest, host)
            with session_scope(engine) as session:
                _ledger_rows(session, night_comparison, folder, host_name(host))
            tampered = (host, night) in TAMPERED
            if tampered:  # an edit after the seal: the hash check finds it
                (folder / COMPARISON_FILE).write_text("{}\n", encoding="utf-8")
            found, entry = audit_entry(folder, _planted_audit(tampered), NOBODY)
            entries[found] = entry
            folders.append(folder)
    save_cache(workdir / CACHE_FILE, HistoryCache(entries=entries))
    engine.dispose()
    return folders


def _planted_audit(tampered: bool) -> AuditOutcome:
    if not tampered:
        return AuditOutcome(ok=True, failed=[], first=None)
    first = f"{COMPARISON_FILE}: sha256 differs from SHA256SUMS"
    return AuditOutcome(ok=False, failed=[HASHES], first=first)


def _bundle(folder: Path, comparison: Comparison, manifest: Manifest, host: int) -> None:
    facts = manifest.host.model_copy(update={"hostname": host_name(host)})
    comparison.write(folder / COMPARISON_FILE, replace=True)
    night_manifest = manifest.model_copy(update={"campaign": comparison.campaign, "host": facts})
    night_manifest.write(folder / MANIFEST_FILE, replace=True)
    write_sums(CampaignFolder(folder))


def _ledger_rows(session: Session, comparison: Comparison, folder: Path, host: str) -> None:
    assert comparison.observed_from is not None
    start = comparison.observed_from
    row, _ = open_campaign(
        session,
        name=comparison.campaign,
        matrix_id=comparison.matrix_id,
        evidence_dir=folder.resolve(),
        now=_clock(start),
        host=host,
    )
    for n, (cell, arm) in enumerate((c.id, a.arm) for c in comparison.cells for a in c.arms):
        at = start + timedelta(minutes=10 * n)
        run = begin_attempt(
            session, row, cell_id=cell, arm=arm, attempt=1, artifacts_dir="", now=_clock(at)
        )
        finish_attempt(
            session,
            run,
            disposition="accepted",
            reason_code=None,
            reason=None,
            verdict_sha256=None,
            now=_clock(at + timedelta(minutes=9)),
        )
    end = start + timedelta(hours=2)
    counts = {"accepted": sum(len(c.arms) for c in comparison.cells)}
    set_campaign_state(session, row, status="complete", counts=counts, now=_clock(end))


def _clock(moment: datetime) -> Clock:
    return lambda: moment


def _night(comparison: Comparison, host: int, night: int, rng: random.Random) -> Comparison:
    start = datetime.combine(FIRST_NIGHT + timedelta(days=night), datetime.min.time(), UTC)
    start += timedelta(hours=1, minutes=15 * host)
    roles = {a.name: a.role for a in comparison.arms}
    cells = []
    for index, cell in enumerate(comparison.cells):
        factors = {
            (entry.arm, metric): _factor(host, night, index, roles[entry.arm], rng)
            for entry in cell.arms
            for metric in entry.metrics
        }
        cells.append(_cell(cell, factors, incumbent=comparison.arms[0].name))
    return comparison.model_copy(
        update={
            "campaign": campaign_name(host, night),
            "observed_from": start,
            "observed_to": start + timedelta(hours=2),
            "cells": cells,
        }
    )


def _factor(host: int, night: int, cell: int, role: str, rng: random.Random) -> float:
    """How much slower than the template this arm runs tonight (times × it, rates ÷ it)."""
    level = 1 + 0.1 * host
    if host == DRIFT_HOST and cell == 0 and role == "incumbent" and night >= DRIFT_NIGHT:
        level *= SLOWDOWN
    return level * rng.lognormvariate(0, NOISE)


def _cell(cell: CellEntry, factors: dict[tuple[str, str], float], *, incumbent: str) -> CellEntry:
    arms = [_arm(entry, factors) for entry in cell.arms]
    p50 = {(a.arm, m): s.p50 for a in arms for m, s in a.metrics.items()}
    ratios = [
        _ratio(r, p50[(r.candidate, r.metric)], p50[(incumbent, r.metric)]) for r in cell.ratios
    ]
    return cell.model_copy(update={"arms": arms, "ratios": ratios})


def _arm(entry: ArmCell, factors: dict[tuple[str, str], float]) -> ArmCell:
    metrics = {}
    for metric, stats in entry.metrics.items():
        f = factors[(entry.arm, metric)]
        scale = 1 / f if higher_is_better(metric) else f
        values = {k: getattr(stats, k) for k in ("mean", "min", "max", "p50", "p95")}
        metrics[metric] = stats.model_copy(
            update={k: None if v is None else v * scale for k, v in values.items()}
        )
    return entry.model_copy(update={"metrics": metrics})


def _ratio(ratio: Ratio, candidate: float | None, incumbent: float | None) -> Ratio:
    """The night's point ratio, with the interval its 2 % nightly noise on both arms gives."""
    if candidate is None or not incumbent:
        return ratio
    point = candidate / incumbent
    spread = math.exp(1.96 * math.sqrt(2) * NOISE)
    low, high = point / spread, point * spread
    verdict = ratio_verdict(low, high, higher_is_better=ratio.higher_is_better)
    return ratio.model_copy(update={"ratio": point, "low": low, "high": high, "verdict": verdict})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--nights", type=int, default=Year.nights)
    parser.add_argument("--hosts", type=int, default=Year.hosts)
    parser.add_argument("--db", default=None, help="ledger URL (default: WORKDIR/faceoff.db)")
    args = parser.parse_args()
    folders = write_year(args.workdir, args.db, Year(nights=args.nights, hosts=args.hosts))
    print(f"{len(folders)} nightly campaigns under {args.workdir}")


if __name__ == "__main__":
    main()
