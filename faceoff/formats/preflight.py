"""``preflight/preflight-<NNN>.json``: what ``faceoff preflight`` found on the campaign host
before a run touched any lane, one file per run of the campaign (a resume checks again).
The same concept at another layer: ``flows.cli.preflight``.

Each check is ``ok``, ``WARN`` or ``FAIL`` with what it found and, unless ok, the fix. A
FAIL stops the run before the take-over unless the operator waived that check
(``--waive CHECK --reason "…"``): the waiver and its reason are kept here, in
``MANIFEST.json`` and on the card. The flow writes the file; ``faceoff preflight --json``
prints the same model.

Format history of ``PreflightReport.schema_version``:
  1 — first release.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

PREFLIGHT_DIR = "preflight"
REPORT = re.compile(r"^preflight-(\d{3,})\.json$")


class CheckStatus(StrEnum):
    OK = "ok"
    WARN = "WARN"  # the night can go on, but something is likely to cost it
    FAIL = "FAIL"  # the night would be lost, or the incumbent put at risk: the run stops


class CheckResult(Spec):
    check: str = Field(description="The check's name, as --waive takes it (e.g. ports).")
    subject: str = Field(description="What it looked at: an arm, a cell, a file, the host.")
    status: CheckStatus = Field(description="ok, WARN or FAIL.")
    finding: str = Field(description="What it found, with the values.")
    fix: str | None = Field(description="What to do; None when ok.")
    waived: str | None = Field(
        default=None, description="The operator's reason, when this FAIL was waived."
    )

    @property
    def line(self) -> str:
        """The checklist's line: status, check, subject, finding, fix."""
        status = "FAIL (waived)" if self.waived else self.status.value
        fix = f" — fix: {self.fix}" if self.fix else ""
        waived = f" — waived: {self.waived}" if self.waived else ""
        return f"{status:<13} {self.check:<15} {self.subject}: {self.finding}{fix}{waived}"


class Waiver(Spec):
    check: str = Field(description="The check whose FAILs the run goes on despite.")
    reason: str = Field(description="Why, in the operator's words.")


class PreflightReport(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Preflight report format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id.")
    host: str = Field(description="The host it ran on (FACEOFF_HOST or its name).")
    at: datetime = Field(description="When it ran (UTC).")
    took_s: float = Field(ge=0, description="Seconds it took.")
    checks: list[CheckResult] = Field(description="Every result, in the catalog's order.")
    waivers: list[Waiver] = Field(description="The waivers the run was given.")

    @property
    def failures(self) -> list[CheckResult]:
        """FAILs nobody waived: any one stops the run."""
        return [c for c in self.checks if c.status is CheckStatus.FAIL and not c.waived]

    @property
    def warnings(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status is CheckStatus.WARN]

    @property
    def waived(self) -> list[CheckResult]:
        return [c for c in self.checks if c.waived]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def sentence(self) -> str:
        counts = {s: sum(c.status is s for c in self.checks) for s in CheckStatus}
        said = f"{counts[CheckStatus.OK]} ok, {counts[CheckStatus.WARN]} WARN, "
        said += f"{counts[CheckStatus.FAIL]} FAIL"
        if self.waived:
            said += f" ({len(self.waived)} waived)"
        return f"preflight of {self.campaign} on {self.host}: {said} in {self.took_s:.1f} s"


def report_paths(root: Path) -> list[Path]:
    """The campaign folder's preflight reports, oldest first."""
    folder = Path(root) / PREFLIGHT_DIR
    found = [p for p in folder.glob("preflight-*.json") if REPORT.match(p.name)]
    return sorted(found, key=lambda p: int(REPORT.match(p.name)[1]))  # type: ignore[index]


def read_reports(root: Path) -> list[PreflightReport]:
    return [PreflightReport.read(p) for p in report_paths(root)]


def write_report(root: Path, report: PreflightReport) -> Path:
    """The next ``preflight-<NNN>.json`` of the campaign folder."""
    paths = report_paths(root)
    number = int(REPORT.match(paths[-1].name)[1]) + 1 if paths else 1  # type: ignore[index]
    path = Path(root) / PREFLIGHT_DIR / f"preflight-{number:03d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return report.write(path)
