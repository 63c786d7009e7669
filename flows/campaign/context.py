"""What every step of a campaign run needs: the frozen matrix, its folder, the ledger, tools.

Built once at the start of a run and passed down; nothing here is global. The
tools are the ones restoration uses (operator environment, wall clock, HTTP,
Docker-client factory, the Python that runs simulator lanes and the client), and
the span log that times each cell run when the environment asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine

from evidence.folder.layout import ATTEMPT, CELLS_DIR, attempt_name
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.ports import DockerClient
from flows.campaign.spans import SpanLog
from lanes.restoration import RestoreTools


@dataclass(frozen=True)
class CampaignContext:
    frozen: FrozenMatrix
    campaign_dir: Path
    workdir: Path
    engine: Engine
    tools: RestoreTools
    docker: DockerClient | None  # None when no arm is a docker lane
    spans: SpanLog = field(
        default_factory=SpanLog
    )  # times cell runs when asked (flows.campaign.spans)

    @property
    def name(self) -> str:
        return self.frozen.matrix.campaign.name

    def now(self) -> datetime:
        return self.tools.now()

    def cell_dir(self, cell_id: str, arm: str) -> Path:
        return self.campaign_dir / CELLS_DIR / cell_id / arm

    def attempt_dir(self, cell_id: str, arm: str, attempt: int) -> Path:
        return self.cell_dir(cell_id, arm) / attempt_name(attempt)

    def attempt_numbers(self, cell_id: str, arm: str) -> list[int]:
        """Numbers of the cell run's ``attempt-<n>`` folders, highest first."""
        folder = self.cell_dir(cell_id, arm)
        names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
        return sorted((int(m[1]) for n in names if (m := ATTEMPT.match(n))), reverse=True)

    def attempt_dirs(self, cell_id: str, arm: str) -> list[Path]:
        """The cell run's ``attempt-<n>`` folders, highest number first."""
        return [self.attempt_dir(cell_id, arm, n) for n in self.attempt_numbers(cell_id, arm)]

    def relative(self, path: Path) -> str:
        return Path(path).relative_to(self.campaign_dir).as_posix()
