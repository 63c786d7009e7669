"""The live terminal view of ``faceoff run``: read from the ledger and the attempt's files.

It watches what the flow writes instead of being told, so it needs no hook in
the flow: the running attempt row says which arm and cell; ``requests.json`` and
``journal.jsonl`` say how many requests are done and their TTFT so far; the
collectors' sample files say whether telemetry is healthy (``flows.progress``
follows those files as they grow). The median shown is for watching only; the
bundle's statistics come from ``evidence``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import SQLAlchemyError

from faceoff.errors import FaceoffError
from flows.closing import CampaignResult
from flows.console import disposition_label
from flows.progress import AttemptProgress, Health
from guards.reasons import Disposition
from ledger.campaigns import cell_runs, find_campaign
from ledger.db import session_scope
from ledger.tables import CellRunRow

REFRESH_S = 0.5
RECENT = 6


@dataclass(frozen=True)
class Running:
    cell_id: str
    arm: str
    attempt: int
    done: int
    total: int | None
    ttft_p50_s: float | None
    health: list[Health] = field(default_factory=list)


@dataclass(frozen=True)
class Finished:
    cell_id: str
    arm: str
    attempt: int
    disposition: str
    reason: str


@dataclass(frozen=True)
class Snapshot:
    campaign: str
    status: str
    counts: dict[str, int]
    running: Running | None
    recent: list[Finished] = field(default_factory=list)  # last finished attempts, newest last


class Watch:
    """The campaign as the view sees it; the running attempt's files are followed, not reread."""

    def __init__(self, engine: Engine, campaign: str) -> None:
        self.engine = engine
        self.campaign = campaign
        self._progress: AttemptProgress | None = None

    def snapshot(self) -> Snapshot | None:
        """What the campaign is doing now; None before the flow has opened it."""
        with session_scope(self.engine) as session:
            row = find_campaign(session, self.campaign)
            if row is None:
                return None
            runs = cell_runs(session, row)
        counts: dict[str, int] = {}
        for run in _latest(runs):
            counts[run.disposition] = counts.get(run.disposition, 0) + 1
        current = next((r for r in reversed(runs) if _in_progress(r)), None)
        running = None if current is None else self._running(current, Path(row.evidence_dir))
        return Snapshot(self.campaign, row.status, counts, running, recent_of(runs))

    def _running(self, run: CellRunRow, campaign_dir: Path) -> Running:
        folder = campaign_dir / (run.artifacts_dir or "")
        if self._progress is None or self._progress.folder != folder:
            self._progress = AttemptProgress(folder)
        progress = self._progress.catch_up()
        return Running(
            cell_id=run.cell_id,
            arm=run.arm,
            attempt=run.attempt,
            done=progress.done,
            total=progress.total,
            ttft_p50_s=progress.ttft_p50_s,
            health=progress.health(),
        )


def recent_of(runs: list[CellRunRow]) -> list[Finished]:
    ended = [r for r in runs if r.ended_at is not None]
    return [
        Finished(
            r.cell_id,
            r.arm,
            r.attempt,
            disposition_label(r),
            r.reason_code or r.reason or "",
        )
        for r in sorted(ended, key=attrgetter("ended_at"))[-RECENT:]
    ]


def _latest(runs: list[CellRunRow]) -> list[CellRunRow]:
    return list({(r.cell_id, r.arm): r for r in runs}.values())


def _in_progress(run: CellRunRow) -> bool:
    return run.disposition == Disposition.PENDING and not run.interrupted and run.ended_at is None


def render(snap: Snapshot | None, note: str) -> Any:
    if snap is None:
        return Text(note)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(snap.counts.items())) or "no cell runs yet"
    lines: list[Any] = [Text(f"{snap.campaign} — {snap.status} — {counts}")]
    if snap.recent:
        lines.append(_recent_table(snap.recent))
    if snap.running is not None:
        lines.append(_running_table(snap.running))
    return Group(*lines)


def _recent_table(recent: list[Finished]) -> Table:
    table = Table(show_header=False, box=None)
    for _ in range(4):
        table.add_column()
    for f in recent:
        table.add_row(f.arm, f.cell_id, f"attempt {f.attempt}", f"{f.disposition}: {f.reason}")
    return table


def _running_table(run: Running) -> Table:
    table = Table(show_header=True, box=None)
    for column in ("arm", "cell", "attempt", "requests", "TTFT p50", "telemetry"):
        table.add_column(column)
    total = "?" if run.total is None else str(run.total)
    p50 = "—" if run.ttft_p50_s is None else f"{run.ttft_p50_s * 1000:.1f} ms"
    telemetry = ", ".join(f"{h.source} {h.ok}/{h.samples} ok" for h in run.health) or "starting"
    table.add_row(run.arm, run.cell_id, str(run.attempt), f"{run.done}/{total}", p50, telemetry)
    return table


def card_view(card: str) -> Markdown:
    """RESULT.md as the terminal shows it."""
    return Markdown(card)


def closing_lines(result: CampaignResult) -> list[str]:
    lines = [f"{result.campaign}: {result.closure.sentence}"]
    for restoration in result.restorations:
        lines.append(restoration.message)
        lines += [f"  {detail}" for detail in restoration.details]
    lines.append(f"bundle: {result.bundle}")
    return lines


class LiveView:
    """A rich Live panel refreshed from the ledger every half second, in its own thread."""

    def __init__(self, console: Console, db_url: str, campaign: str) -> None:
        self.console = console
        self.db_url = db_url
        self.campaign = campaign
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="live-view", daemon=True)

    def __enter__(self) -> LiveView:
        if self.console.is_terminal:  # elsewhere (CI, systemd) the Prefect logs say it all
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        # Read-only: the flow creates the ledger's tables; until then there is nothing to show.
        engine = create_engine(self.db_url)
        watch = Watch(engine, self.campaign)
        waiting = Text(f"starting the campaign {self.campaign}…")
        with Live(waiting, console=self.console, refresh_per_second=4) as live:
            while not self._stop.wait(REFRESH_S):
                try:
                    live.update(render(watch.snapshot(), waiting.plain))
                except SQLAlchemyError:
                    live.update(waiting)
                except (FaceoffError, OSError) as exc:
                    live.update(Text(f"(live view: {exc})"))
        engine.dispose()
