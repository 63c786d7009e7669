"""Where things are in a campaign folder (docs/architecture.md, "Campaign folder").

The bundle grows in place: the native artifacts are already where the flow wrote
them; this module only finds them. File names of other packages are imported
from those packages, so a rename there cannot silently break the bundle.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from faceoff.bounded import Entry, regular_files, walk
from faceoff.errors import FaceoffError
from faceoff.formats.receipt import RECEIPT_FILE
from faceoff.seal_envelope import SealLayout
from lanes.lane_context import arm_lanes_dir

FROZEN_FILE = "matrix.frozen.json"
RESULT_FILE = "RESULT.md"
REPORT_FILE = "report.html"
SUMS_FILE = "SHA256SUMS"
ENVELOPE_FILE = "SEAL.dsse.json"  # the operator's Ed25519 seal of every file (DSSE, in-toto)
SEAL_FILE = "SHA256SUMS.hmac"  # the shared-secret seal of bundles sealed before the envelope
LIFTED_SEAL = ".SEAL.lifted"  # the lifted seal's sha256 and number, while a run reopens it
RUN_LOCK = ".run.lock"  # one run of a campaign at a time: in the folder, not in the bundle
SEAL_LAYOUT = SealLayout(envelope=ENVELOPE_FILE, hmac=SEAL_FILE, sums=SUMS_FILE, apart=(RUN_LOCK,))
CELLS_DIR = "cells"
ATTEMPT = re.compile(r"^attempt-(\d+)$")


def attempt_name(number: int) -> str:
    """The folder name of a cell run's attempt ``number``: what ``ATTEMPT`` reads back."""
    return f"attempt-{number}"


@dataclass(frozen=True)
class AttemptDir:
    """``cells/<cell>/<arm>/attempt-<n>/`` of one cell run."""

    cell_id: str
    arm: str
    attempt: int
    path: Path

    def relative(self, root: Path) -> str:
        return self.path.relative_to(root).as_posix()


@dataclass(frozen=True)
class CampaignFolder:
    root: Path

    @classmethod
    def at(cls, root: Path) -> CampaignFolder:
        root = Path(root)
        if not os.path.lexists(root / FROZEN_FILE):  # whatever is there, the audit reads it
            raise FaceoffError(
                f"no {FROZEN_FILE} here, so this is not a campaign folder",
                where=str(root),
                fix="pass the folder <workdir>/<campaign> that the campaign wrote",
            )
        return cls(root)

    @property
    def frozen(self) -> Path:
        return self.root / FROZEN_FILE

    @property
    def receipt(self) -> Path:
        return self.root / RECEIPT_FILE

    def path(self, name: str) -> Path:
        return self.root / name

    def attempts(self) -> list[AttemptDir]:
        """Every attempt folder, ordered by cell, arm and attempt number."""
        found = []
        for arm_dir in sorted(p for p in self.root.glob(f"{CELLS_DIR}/*/*") if p.is_dir()):
            for child in arm_dir.iterdir():
                match = ATTEMPT.match(child.name)
                if match and child.is_dir():
                    found.append(
                        AttemptDir(arm_dir.parent.name, arm_dir.name, int(match[1]), child)
                    )
        return sorted(found, key=lambda a: (a.cell_id, a.arm, a.attempt))

    def latest(self) -> dict[tuple[str, str], AttemptDir]:
        """(cell, arm) -> its highest-numbered attempt: the one whose verdict stands."""
        return {(a.cell_id, a.arm): a for a in self.attempts()}

    def lane_runs(self, arm: str) -> list[Path]:
        """``lanes/<arm>/<purpose>-<NNN>/`` folders, in name order."""
        return sorted(p for p in arm_lanes_dir(self.root, arm).glob("*") if p.is_dir())

    def files(self) -> list[Path]:
        """Every regular file of the bundle, dot-files too, except SHA256SUMS, its seals and
        the run lock, in path order."""
        apart = {self.root / n for n in (SUMS_FILE, SEAL_FILE, ENVELOPE_FILE, RUN_LOCK)}
        return [p for p in regular_files(self.root) if p not in apart]

    def strays(self) -> list[Entry]:
        """What the bundle holds that cannot be one of its files: links, special files,
        names over the caps, folders nested too deep (``faceoff.bounded``), by name."""
        found = (e for e in walk(self.root) if e.problem or e.kind not in ("file", "dir"))
        return sorted(found, key=lambda e: e.name)
