"""What the preflight looks through: the host's ports, gathered once at the entry point.
The same concept at another layer: ``collectors.host``.

A test gives real local parts (the Docker daemon, loopback servers, files, a ledger) and,
for NVML alone, a fake named as such; the command line and the flow give the real ones.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from collectors.gpu.nvml import Nvml
from lanes.restoration import RestoreTools

HOST_ENV = "FACEOFF_HOST"


@dataclass(frozen=True)
class PreflightHost:
    workdir: Path
    db_url: str  # the ledger the run will use (--db, FACEOFF_DB_URL or the workdir's file)
    prefect_home: Path
    tools: RestoreTools  # the operator's environment, the clock, HTTP, the Docker factory
    nvml: Nvml
    zone: tzinfo  # the window's timezone: the schedule's, else the host's
    ahead: bool = False  # checked ahead of the night: the time budget starts at the window

    @property
    def name(self) -> str:
        return self.tools.environ.get(HOST_ENV) or socket.gethostname()

    def campaign_dir(self, campaign: str) -> Path:
        return self.workdir / campaign
