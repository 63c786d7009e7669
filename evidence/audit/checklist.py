"""``faceoff audit``'s answer as a checklist: each check, how many things it covered, its
result, and the findings under it. Output shaping only: ``evidence.audit.reverify`` verifies.

``--json`` prints ``AuditOutput``. Format history of ``AuditOutput.schema_version``:
  1 — first release; later in 1, the check ``carried`` (a successor's carried-over cells),
      and ``sealed`` (the campaign, matrix id, seal number and time the seal names).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from evidence.audit.reverify import (
    CARRIED,
    CHECKS,
    DIAGNOSTICS,
    FROZEN,
    HASHES,
    MANIFEST,
    REBUILT,
    RECEIPT,
    REVIEWS,
    SIGNATURES,
    SUMMARIES,
    TELEMETRY,
    TICKETS,
    VERDICTS,
    AuditReport,
)
from evidence.folder.layout import FROZEN_FILE, REPORT_FILE, RESULT_FILE, SUMS_FILE
from faceoff.artifact import Artifact, Spec
from faceoff.bounded import read_lines
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.summary import SUMMARY_FILE
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE
from faceoff.formats.attempt.verdict import VERDICT_FILE
from faceoff.formats.bundle.comparison import COMPARISON_FILE
from faceoff.formats.bundle.reviews import REVIEWS_FILE
from faceoff.formats.diagnostic import DIAGNOSTIC_FILE
from faceoff.formats.frozen_matrix import read_frozen
from faceoff.formats.receipt import RECEIPT_FILE, Receipt, protected_problems
from faceoff.trust import SignatureCheck, SignatureState

PROTECTED = "protected operator files declared and unchanged"

Result = Literal["ok", "failed", "warning", "not checked"]
IDS = {
    HASHES: "hashes",
    FROZEN: "frozen_matrix",
    CARRIED: "carried",
    RECEIPT: "receipt",
    SUMMARIES: "summaries",
    TELEMETRY: "telemetry",
    VERDICTS: "verdicts",
    DIAGNOSTICS: "diagnostics",
    REVIEWS: "reviews",
    REBUILT: "rebuilt",
    MANIFEST: "manifest",
    TICKETS: "tickets",
    SIGNATURES: "signatures",
    PROTECTED: "protected_files",
}


class AuditFinding(Spec):
    file: str = Field(description="Relative to the bundle.")
    field: str = Field(description="Path inside it, elements named by id; '' for the file.")
    problem: str


class Check(Spec):
    id: str = Field(description="Stable name of the check, for scripts.")
    check: str = Field(description="What was verified.")
    count: int = Field(description="How many files or records it covered.")
    result: Result
    note: str = Field(default="", description="Why a check warns or was not run.")
    findings: list[AuditFinding] = Field(default_factory=list)


class SealedFacts(Spec):
    campaign: str = Field(description="The campaign the seal names.")
    matrix_id: str = Field(description="The frozen matrix id it names.")
    sequence: int | None = Field(description="Its number in the campaign's chain of seals.")
    sealed_at: datetime | None = Field(description="When it was sealed (UTC).")
    verified: bool = Field(description="Its signature verified with the keys trusted.")


class AuditOutput(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Audit output format version.")
    bundle: str = Field(description="The bundle folder audited.")
    ok: bool = Field(description="No finding: faceoff audit exits 0.")
    checks: list[Check]
    notes: list[str] = Field(description="What was not checked, and why.")
    sealed: SealedFacts | None = Field(
        default=None, description="What the seal names; None without a key's seal."
    )


def checklist(report: AuditReport) -> AuditOutput:
    counts = _counts(report)
    checks = [_check(report, name, counts.get(name, 0)) for name in CHECKS]
    checks.append(_signatures(report))
    checks.append(_protected(report))
    return AuditOutput(bundle=str(report.root), ok=report.ok, checks=checks, notes=report.notes,
                       sealed=_sealed(report))  # fmt: skip


def _sealed(report: AuditReport) -> SealedFacts | None:
    said = report.sealed
    if said is None:
        return None
    verified = report.seal is not None and report.seal.verified
    return SealedFacts(campaign=said.campaign, matrix_id=said.matrix_id, sequence=said.sequence,
                       sealed_at=said.sealed_at, verified=verified)  # fmt: skip


def lines(output: AuditOutput) -> list[str]:
    """The checklist as the terminal shows it: one line per check, its findings under it,
    and the verdict last, where a log's tail shows it."""
    marks = {"ok": "ok  ", "failed": "FAIL", "warning": "WARN", "not checked": "skip"}
    shown = _sealed_line(output.sealed)
    for check in output.checks:
        note = f" — {check.note}" if check.note else ""
        shown.append(f"  [{marks[check.result]}] {check.check} ({check.count}){note}")
        for finding in check.findings:
            where = f"{finding.file}: {finding.field}" if finding.field else finding.file
            shown.append(f"         {where}: {finding.problem}")
    notes = [f"note: {n}" for n in output.notes if not n.startswith(UNCHECKED)]
    return [*shown, *notes, f"{output.bundle}: {verdict(output)}"]


def verdict(output: AuditOutput) -> str:
    """OK, saying what an OK proves when no trusted key verified a signature; else the
    count of problems."""
    if not output.ok:
        return f"{sum(len(c.findings) for c in output.checks)} problem(s)"
    signatures = next(c for c in output.checks if c.id == IDS[SIGNATURES])
    if signatures.result == "ok":
        return "OK (signature verified)" if signatures.note else "OK"
    if signatures.note == SignatureCheck(SignatureState.UNSIGNED).sentence:
        return "OK (unsigned: integrity only)"
    return f"OK — {signatures.note}"


def _sealed_line(sealed: SealedFacts | None) -> list[str]:
    if sealed is None:
        return []
    number = f"seal {sealed.sequence} of its chain" if sealed.sequence else "seal of no chain"
    when = f", sealed {sealed.sealed_at:%Y-%m-%d %H:%M:%S} UTC" if sealed.sealed_at else ""
    how = "verified" if sealed.verified else "claimed, not checked: pass --trust"
    return [f"  {how}: campaign {sealed.campaign}, matrix {sealed.matrix_id[:19]}…, "
            f"{number}{when}"]  # fmt: skip


UNCHECKED = "signatures were not checked"  # the signatures line says so already


def _signatures(report: AuditReport) -> Check:
    """The bundle's signature and its records': failed with findings, else said as checked."""
    seal = report.seal
    failed = _check(report, SIGNATURES, 1)
    if failed.findings or seal is None:
        return failed
    if seal.verified:
        return _made(SIGNATURES, 1, "ok", seal.sentence)
    return _made(SIGNATURES, 0, "not checked", seal.sentence)


def _check(report: AuditReport, name: str, count: int) -> Check:
    found = [
        AuditFinding(file=f.file, field=f.field, problem=f.problem)
        for f in report.findings
        if f.check == name
    ]
    if found:
        return _made(name, count=count, result="failed", findings=found)
    if name in report.marks:  # a check that could not say ok: it warns, or did not apply
        mark, note = report.marks[name]
        return _made(name, count=count, result=mark, note=note)
    return _made(name, count=count, result="ok")


def _made(
    name: str,
    count: int,
    result: Result,
    note: str = "",
    findings: list[AuditFinding] | None = None,
) -> Check:
    return Check(id=IDS[name], check=name, count=count, result=result, note=note,
                 findings=findings or [])  # fmt: skip


def _counts(report: AuditReport) -> dict[str, int]:
    root = report.root
    checked = report.checked
    named = {SUMMARIES: SUMMARY_FILE, TELEMETRY: TELEMETRY_FILE, VERDICTS: VERDICT_FILE,
             DIAGNOSTICS: DIAGNOSTIC_FILE}  # fmt: skip
    counts = {
        name: sum(1 for c in checked if c.endswith(f"/{file}")) for name, file in named.items()
    }
    counts[REBUILT] = sum(1 for c in checked if c in (COMPARISON_FILE, RESULT_FILE, REPORT_FILE))
    counts[HASHES] = _lines(root / SUMS_FILE)
    counts[REVIEWS] = _lines(root / REVIEWS_FILE)
    counts |= report.counts
    counts[RECEIPT] = _bound(root / RECEIPT_FILE)
    for name in CHECKS:
        counts.setdefault(name, 1 if _ran(report, name) else 0)
    return counts


def _ran(report: AuditReport, name: str) -> bool:
    """Whether the audit got as far as the check (it stops at an unreadable frozen matrix)."""
    return CHECKS.index(name) <= CHECKS.index(report.step)


def _protected(report: AuditReport) -> Check:
    try:
        declared = len(read_frozen(report.root / FROZEN_FILE).matrix.protected_files)
    except FaceoffError:
        return _made(PROTECTED, count=0, result="not checked", note="no frozen matrix")
    if declared == 0:
        note = (
            "none declared: nothing shows the operator's files were left alone; "
            "list them in the matrix's protected_files"
        )
        return _made(PROTECTED, count=0, result="warning", note=note)
    try:
        changed = protected_problems(Receipt.read(report.root / RECEIPT_FILE).protected_files)
    except FaceoffError:
        return _made(PROTECTED, count=declared, result="not checked", note="no receipt")
    if changed:  # the receipt says so truthfully: a warning for the reader, not a finding
        return _made(PROTECTED, count=declared, result="warning", note="; ".join(changed))
    return _made(PROTECTED, count=declared, result="ok")


def _lines(path: Path) -> int:
    try:
        return sum(1 for _, line in read_lines(path) if line.strip())
    except (OSError, FaceoffError):  # the audit's own read of it found why
        return 0


def _bound(path: Path) -> int:
    """The receipt and every native file it binds."""
    try:
        return 1 + len(Receipt.read(path).bound_files)
    except FaceoffError:
        return 0
