"""``faceoff audit BUNDLE``: re-verify a bundle from its native artifacts.

Checks, each reported as findings naming the file and field:

- every file against ``SHA256SUMS`` (changed, missing, or not listed);
- the frozen matrix's id against its content;
- the receipt's own hash and judged outcome, and its bindings to the campaign
  (campaign, matrix id, incumbent arm and image, lane run, protected paths);
- per attempt, ``summary.json`` recomputed from the journal and plan,
  ``telemetry.json`` recomputed from the sample files over ``cell.json``'s window
  and settings, and ``verdict.json`` recomputed by the guards;
- the review chain; ``comparison.json`` and ``RESULT.md`` rebuilt from all of it.

Recomputation does not trust SHA256SUMS: a tampered file whose hash line was
rewritten still differs from what its native inputs give.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from collectors.aliases import vllm_aliases
from collectors.summary import TELEMETRY_FILE, TelemetrySummary, summarize_folder
from evidence.audit_diff import differences
from evidence.bundle import comparison_of
from evidence.card import render_card
from evidence.comparison import Comparison
from evidence.inputs import load_campaign
from evidence.layout import COMPARISON_FILE, RESULT_FILE, AttemptDir, CampaignFolder
from evidence.reviews import read_reviews
from evidence.summary import SUMMARY_FILE, RequestSummary, summarize_attempt
from evidence.sums import verify_sums
from faceoff.errors import FaceoffError
from guards.judge import judge_cell
from guards.record import CELL_FILE, CellRecord
from guards.verdict import VERDICT_FILE, Verdict
from lanes.receipt import Receipt, verify_receipt
from lanes.records import LANE_FILE, LaneRecord
from matrix.freeze import FrozenMatrix, read_frozen
from workload.journal import JOURNAL_NAME
from workload.plan import PLAN_NAME


@dataclass(frozen=True)
class Finding:
    file: str  # relative to the bundle
    field: str  # dotted path inside it, or "" for the whole file
    problem: str

    @property
    def line(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.problem}"


@dataclass
class AuditReport:
    root: Path
    checked: list[str] = field(default_factory=list)  # what was verified, in order
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def audit_bundle(path: Path) -> AuditReport:
    folder = CampaignFolder.at(path)
    report = AuditReport(folder.root)
    for problem in verify_sums(folder):
        report.findings.append(Finding(problem.path, "", problem.what))
    report.checked.append("SHA256SUMS")
    frozen = _frozen(folder, report)
    if frozen is None:
        return report
    _receipt(folder, frozen, report)
    for attempt in folder.attempts():
        _attempt(folder, attempt, frozen, report)
    _derived(folder, report)
    return report


def _frozen(folder: CampaignFolder, report: AuditReport) -> FrozenMatrix | None:
    try:
        frozen = read_frozen(folder.frozen)
    except FaceoffError as exc:
        report.findings.append(Finding(folder.frozen.name, "matrix_id", exc.message))
        return None
    report.checked.append(folder.frozen.name)
    return frozen


def _receipt(folder: CampaignFolder, frozen: FrozenMatrix, report: AuditReport) -> None:
    name = folder.receipt.name
    if not folder.receipt.is_file():
        report.findings.append(Finding(name, "", "missing: restoration is not proven"))
        return
    try:
        receipt = verify_receipt(folder.receipt)
    except FaceoffError as exc:
        report.findings.append(Finding(name, "receipt_sha256", exc.what))
        return
    for key, problem in receipt_bindings(folder, frozen, receipt):
        report.findings.append(Finding(name, key, problem))
    report.checked.append(name)


def receipt_bindings(
    folder: CampaignFolder, frozen: FrozenMatrix, receipt: Receipt
) -> list[tuple[str, str]]:
    """Fields of a self-consistent receipt that do not bind it to this campaign."""
    matrix = frozen.matrix
    expected = {
        "campaign": matrix.campaign.name,
        "matrix_id": frozen.matrix_id,
        "incumbent_arm": matrix.incumbent.name,
        "image": matrix.incumbent.image,
        "protected_files": sorted(matrix.protected_files),
    }
    found = receipt.model_dump(mode="json")
    found["protected_files"] = sorted(c.path for c in receipt.protected_files)
    problems = [
        (key, f"says {found[key]!r}, the frozen matrix says {value!r}")
        for key, value in expected.items()
        if found[key] != value
    ]
    return problems + _lane_binding(folder, receipt)


def _lane_binding(folder: CampaignFolder, receipt: Receipt) -> list[tuple[str, str]]:
    record_path = folder.root / receipt.lane_run / LANE_FILE
    if not record_path.is_file():
        return [("lane_run", f"names {receipt.lane_run!r}, which has no {LANE_FILE}")]
    record = LaneRecord.read(record_path)
    return [
        (key, f"says {getattr(receipt, key)!r}, {receipt.lane_run}/{LANE_FILE} says {value!r}")
        for key, value in (("container_id", record.container_id), ("pid", record.pid))
        if getattr(receipt, key) != value
    ]


def _attempt(
    folder: CampaignFolder, attempt: AttemptDir, frozen: FrozenMatrix, report: AuditReport
) -> None:
    base = attempt.path
    if (base / PLAN_NAME).is_file() and (base / JOURNAL_NAME).is_file():
        arm, number = attempt.arm, attempt.attempt
        _compare(folder, base / SUMMARY_FILE, RequestSummary, report,
                 lambda: summarize_attempt(base, arm=arm, attempt=number))  # fmt: skip
    record = CellRecord.read(base / CELL_FILE) if (base / CELL_FILE).is_file() else None
    if record is not None and record.window is not None:
        window, settings = record.window, record.collector_settings
        _compare(folder, base / TELEMETRY_FILE, TelemetrySummary, report,
                 lambda: summarize_folder(base, window, settings, vllm_aliases()))  # fmt: skip
    if record is not None and (base / VERDICT_FILE).is_file():
        _compare(folder, base / VERDICT_FILE, Verdict, report, lambda: judge_cell(base, frozen))


def _compare(
    folder: CampaignFolder,
    path: Path,
    model: type[BaseModel],
    report: AuditReport,
    recompute: Callable[[], BaseModel],
) -> None:
    name = path.relative_to(folder.root).as_posix()
    if not path.is_file():
        report.findings.append(Finding(name, "", "missing; it can be recomputed"))
        return
    try:
        stored: Any = model.model_validate_json(path.read_bytes())
        fresh = recompute()
    except (FaceoffError, ValueError) as exc:
        report.findings.append(Finding(name, "", f"cannot be read or recomputed: {exc}"))
        return
    for key, was, now in differences(stored.model_dump(mode="json"), fresh.model_dump(mode="json")):
        report.findings.append(
            Finding(name, key, f"file says {was!r}, recomputed from native files: {now!r}")
        )
    report.checked.append(name)


def _derived(folder: CampaignFolder, report: AuditReport) -> None:
    """The review chain, then comparison.json and RESULT.md rebuilt from the folder."""
    try:
        read_reviews(folder.root)
    except FaceoffError as exc:
        report.findings.append(Finding("reviews.jsonl", "record_sha256", exc.message))
        return
    try:
        fresh = comparison_of(load_campaign(folder))
    except FaceoffError as exc:
        report.findings.append(Finding(COMPARISON_FILE, "", f"cannot be rebuilt: {exc.message}"))
        return
    _compare(folder, folder.path(COMPARISON_FILE), Comparison, report, lambda: fresh)
    card = folder.path(RESULT_FILE)
    if card.is_file() and card.read_text(encoding="utf-8") != render_card(fresh):
        problem = (
            "differs from the card this faceoff renders from comparison.json (edited, or "
            "written by another faceoff version: MANIFEST.json names it)"
        )
        report.findings.append(Finding(RESULT_FILE, "", problem))
    report.checked.append(RESULT_FILE)
