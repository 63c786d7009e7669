"""The live terminal view of ``faceoff run``: read from the ledger and the campaign's files.

It watches what the flow writes instead of being told, so it needs no hook in the flow: the
running attempt row, its plan, journal and sample files (``flows.cli.views.progress``), the
lane folders and the restoration row (``flows.cli.views.phase``), and the frozen matrix's
plan and deadlines (``flows.cli.views.eta``). The median shown is for watching only; the
bundle's statistics come from ``evidence``. The view starts before Prefect does, so the
first seconds say so instead of nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import SQLAlchemyError

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase as RequestPhase
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import Disposition, disposition_label
from flows.cli.views.durations import clock
from flows.cli.views.eta import Eta, eta
from flows.cli.views.phase import RunPhase, boot_line, lane_up, restoration_phase
from flows.cli.views.progress import AttemptProgress, Health
from ledger.campaigns import cell_runs, find_campaign
from ledger.db import session_scope, utc
from ledger.restoration import find_restoration
from ledger.tables import CellRunRow
from matrix.campaign_plan import CellRunKey, plan

REFRESH_S = 0.5
RECENT = 4
WARMUP_DIR = "warmup"  # flows.campaign.arm.WARMUP_DIR; not imported: that module loads Prefect
STARTING = RunPhase("starting", "Prefect and the campaign's ledger rows")

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Running:
    cell_id: str
    arm: str
    attempt: int
    done: int
    total: int | None
    ttft_p50_s: float | None
    health: list[Health] = field(default_factory=list)

    @property
    def share_done(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def phase(self) -> RunPhase:
        total = "?" if self.total is None else str(self.total)
        p50 = "" if self.ttft_p50_s is None else f", TTFT p50 {self.ttft_p50_s * 1000:.1f} ms"
        telemetry = ", ".join(f"{h.source} {h.ok}/{h.samples} ok" for h in self.health)
        detail = (
            f"{self.cell_id} on {self.arm}, attempt {self.attempt}: requests {self.done}/{total}"
            f"{p50}; telemetry {telemetry or 'starting'}"
        )
        return RunPhase("cell", detail)


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
    planned: int  # cell runs of the plan
    finished: int  # of them, those with a final disposition
    counts: dict[str, int]
    phase: RunPhase
    elapsed_s: float
    eta: Eta
    running: Running | None = None
    recent: list[Finished] = field(default_factory=list)  # last finished attempts, newest last

    @property
    def head(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(self.counts.items()) if k != "pending")
        done = f"{self.finished}/{self.planned} cell runs" + (f" ({counts})" if counts else "")
        return f"{self.campaign} — {done} — elapsed {clock(self.elapsed_s)} — {self.eta.line}"


class Watch:
    """The campaign as the view sees it; the files of what runs are followed, not reread."""

    def __init__(self, engine: Engine, frozen: FrozenMatrix, now: Clock) -> None:
        self.engine = engine
        self.frozen = frozen
        self.campaign = frozen.matrix.campaign.name
        self.now = now
        self.since = now()
        self._progress: AttemptProgress | None = None

    def snapshot(self) -> Snapshot:
        """What the campaign is doing now (``starting`` until the flow has opened it)."""
        with session_scope(self.engine) as session:
            row = find_campaign(session, self.campaign)
            runs = cell_runs(session, row) if row is not None else []
            restoration = find_restoration(session, row) if row is not None else None
        latest = _latest(runs)
        finished = {CellRunKey(r.cell_id, r.arm) for r in latest if r.disposition != "pending"}
        counts: dict[str, int] = {}
        for run in latest:
            counts[run.disposition] = counts.get(run.disposition, 0) + 1
        here = [r for r in runs if r.ended_at is not None and utc(r.ended_at) >= self.since]
        elapsed = (self.now() - self.since).total_seconds()
        campaign_dir = Path(row.evidence_dir) if row is not None else None
        running = self._running(runs, campaign_dir)
        return Snapshot(
            campaign=self.campaign,
            status=row.status if row is not None else "starting",
            planned=len(plan(self.frozen.matrix).cell_runs),
            finished=len(finished),
            counts=counts,
            phase=self._phase(campaign_dir, running, restoration),
            elapsed_s=elapsed,
            eta=eta(
                self.frozen.matrix,
                finished,
                elapsed_s=elapsed,
                finished_here=len(here),
                running_done=running.share_done if running else 0.0,
            ),
            running=running,
            recent=recent_of(runs),
        )

    def _phase(
        self, campaign_dir: Path | None, running: Running | None, restoration: Any
    ) -> RunPhase:
        if campaign_dir is None:
            return STARTING
        if running is not None:
            return running.phase
        later = restoration_phase(campaign_dir, restoration, self.since)
        return later if later is not None else self._lane_phase(campaign_dir)

    def _lane_phase(self, campaign_dir: Path) -> RunPhase:
        lane = lane_up(campaign_dir)
        if lane is None:
            return STARTING
        if not lane.identified:
            return RunPhase(
                "lane boot", f"{lane.arm} ({lane.run_dir.name}) {boot_line(lane.run_dir)}"
            )
        warmups = self._follow(lane.run_dir / WARMUP_DIR, RequestPhase.WARMUP)
        if warmups.total is not None and warmups.done < warmups.total:
            return RunPhase("warmups", f"{lane.arm}: {warmups.done}/{warmups.total} served")
        return RunPhase("cell", f"the next cell on {lane.arm}")

    def _running(self, runs: list[CellRunRow], campaign_dir: Path | None) -> Running | None:
        current = next((r for r in reversed(runs) if _in_progress(r)), None)
        if current is None or campaign_dir is None:
            return None
        progress = self._follow(campaign_dir / (current.artifacts_dir or ""), RequestPhase.SCORED)
        return Running(
            cell_id=current.cell_id,
            arm=current.arm,
            attempt=current.attempt,
            done=progress.done,
            total=progress.total,
            ttft_p50_s=progress.ttft_p50_s,
            health=progress.health(),
        )

    def _follow(self, folder: Path, phase: RequestPhase) -> AttemptProgress:
        if self._progress is None or self._progress.folder != folder:
            self._progress = AttemptProgress(folder, phase)
        return self._progress.catch_up()


def recent_of(runs: list[CellRunRow]) -> list[Finished]:
    ended = [r for r in runs if r.ended_at is not None]
    return [
        Finished(
            r.cell_id, r.arm, r.attempt, disposition_label(r.disposition, r.interrupted), _reason(r)
        )
        for r in sorted(ended, key=attrgetter("ended_at"))[-RECENT:]
    ]


def _reason(run: CellRunRow) -> str:
    """Why, when it says more than the disposition does (an accepted run needs no reason)."""
    if run.disposition == "accepted":
        return ""
    words = [w for w in (run.reason_code, run.reason) if w and w != run.disposition]
    return ": ".join(dict.fromkeys(words))


def _latest(runs: list[CellRunRow]) -> list[CellRunRow]:
    return list({(r.cell_id, r.arm): r for r in runs}.values())


def _in_progress(run: CellRunRow) -> bool:
    return run.disposition == Disposition.PENDING and not run.interrupted and run.ended_at is None


def render(snap: Snapshot) -> Any:
    lines: list[Any] = [Text(snap.head), Text(f"phase {snap.phase.line}")]
    if snap.recent:
        lines += _recent_lines(snap.recent)
    return Group(*lines)


def _recent_lines(recent: list[Finished]) -> list[Text]:
    """One line per finished run; arm and cell stay whole, a long reason is cut at the edge."""
    arm_w = max(len(f.arm) for f in recent)
    cell_w = max(len(f.cell_id) for f in recent)
    lines = []
    for f in recent:
        said = f"{f.disposition}: {f.reason}" if f.reason else f.disposition
        line = f"  {f.arm:<{arm_w}}  {f.cell_id:<{cell_w}}  attempt {f.attempt}  {said}"
        lines.append(Text(line, no_wrap=True, overflow="ellipsis"))
    return lines


class LiveView:
    """A rich Live panel refreshed from the ledger every half second, in its own thread.

    Transient: once the run ends, the end summary takes its place."""

    def __init__(
        self,
        console: Console,
        db_url: str,
        frozen: FrozenMatrix,
        now: Clock = lambda: datetime.now(UTC),
    ) -> None:
        self.console = console
        self.db_url = db_url
        self.frozen = frozen
        self.now = now
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
        # Read-only: the flow creates the ledger's tables; until then the view says starting.
        engine = create_engine(self.db_url)
        watch = Watch(engine, self.frozen, self.now)
        with Live(console=self.console, refresh_per_second=4, transient=True) as live:
            while True:
                live.update(self._frame(watch))
                if self._stop.wait(REFRESH_S):
                    break
        engine.dispose()

    def _frame(self, watch: Watch) -> Any:
        try:
            return render(watch.snapshot())
        except SQLAlchemyError:  # no tables yet: the flow has not opened the ledger
            elapsed = (self.now() - watch.since).total_seconds()
            idle = eta(self.frozen.matrix, (), elapsed_s=elapsed, finished_here=0)
            planned = len(plan(self.frozen.matrix).cell_runs)
            snap = Snapshot(watch.campaign, "starting", planned, 0, {}, STARTING, elapsed, idle)
            return render(snap)
        except (FaceoffError, OSError) as exc:
            return Text(f"(live view: {exc})")
