"""What a running campaign is doing now, read from what the flow leaves behind.

The live view asks this twice a second. The phases, in the order they are looked for:

- ``cell``: an attempt row is open in the ledger (``flows.cli.views.live`` follows its requests);
- ``restoration``: the ledger's restoration row says ``restoring`` (the restore lane's
  boot log says how far it got);
- ``sealing``: the incumbent came back during this run and the bundle is being written;
- ``lane boot``: a campaign lane is up without its ``identity.json`` yet (its boot log's
  last line says what the engine is doing);
- ``warmups``: the lane answered its identity checks and its warmups are being served;
- ``starting``: none of these yet (Prefect starting, the campaign opening, a handoff).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from faceoff.formats.lane import BOOT_LOG_FILE, IDENTITY_FILE, LANE_FILE, LANES_DIR
from lanes.lane_context import live_run_dir
from ledger.db import utc
from ledger.restoration import RESTORED, RESTORING
from ledger.tables import RestorationRow

BOOT_LINE_CHARS = 100  # a boot log line is one terminal row, however long the engine's was
UP = ("created", "running")  # lane.json states of a lane that is up


@dataclass(frozen=True)
class RunPhase:
    name: str  # starting | lane boot | warmups | cell | restoration | sealing
    detail: str = ""

    @property
    def line(self) -> str:
        return f"{self.name}: {self.detail}" if self.detail else self.name


@dataclass(frozen=True)
class LaneUp:
    """The lane run a campaign has up now, as its folder shows it."""

    arm: str
    run_dir: Path
    identified: bool  # identity.json written: the boot is over


def restoration_phase(
    campaign_dir: Path, restoration: RestorationRow | None, since: datetime
) -> RunPhase | None:
    """``restoration`` while the ledger says restoring; ``sealing`` once it ended during
    this run (``since``: when the view started)."""
    if restoration is None:
        return None
    if restoration.state == RESTORING:
        run = newest_run(campaign_dir / LANES_DIR / restoration.incumbent_arm, "restore-")
        boot = boot_line(run) if run is not None else ""
        where = f"{restoration.incumbent_arm} ({run.name})" if run else restoration.incumbent_arm
        return RunPhase("restoration", f"{where} {boot}".strip())
    ended = restoration.completed_at
    if restoration.state == RESTORED and ended is not None and utc(ended) >= since:
        return RunPhase("sealing", "writing the evidence bundle and its sums")
    return None


def lane_up(campaign_dir: Path) -> LaneUp | None:
    """The newest campaign lane run whose ``lane.json`` says it is up."""
    found = [
        run for run in (campaign_dir / LANES_DIR).glob("*/campaign-*") if _lane_state(run) in UP
    ]
    if not found:
        return None
    run = max(found, key=lambda p: (p / LANE_FILE).stat().st_mtime)
    return LaneUp(run.parent.name, run, (run / IDENTITY_FILE).is_file())


def newest_run(arm_dir: Path, prefix: str) -> Path | None:
    runs = sorted(p for p in arm_dir.glob(f"{prefix}*") if p.is_dir())
    return runs[-1] if runs else None


def boot_line(run_dir: Path) -> str:
    """The last non-blank line of the lane's boot log: the live one of a host process lane
    while it boots, else the one written beside ``lane.json``."""
    for path in (_live_boot_log(run_dir), run_dir / BOOT_LOG_FILE):
        if path is not None and (line := last_line(path)):
            return _shortened(line)
    return ""


def last_line(path: Path, window: int = 4096) -> str:
    """The file's last non-blank line, reading only its end."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - window))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _lane_state(run_dir: Path) -> str | None:
    try:
        state = json.loads((run_dir / LANE_FILE).read_bytes()).get("state")
    except (OSError, ValueError, AttributeError):
        return None  # not written yet, or caught mid-write
    return state if isinstance(state, str) else None


def _live_boot_log(run_dir: Path) -> Path | None:
    try:
        return live_run_dir(run_dir) / BOOT_LOG_FILE
    except (IndexError, ValueError):
        return None


def _shortened(line: str) -> str:
    return line if len(line) <= BOOT_LINE_CHARS else line[: BOOT_LINE_CHARS - 1] + "…"
