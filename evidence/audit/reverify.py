"""``faceoff audit BUNDLE``: re-verify a bundle from its native artifacts.

Every file against ``SHA256SUMS``, the frozen matrix, a successor's carried cells, the
receipt and the native files it binds, each attempt's summary, telemetry and verdict (and
each paired diagnostic) recomputed, the review chain, the views rebuilt and compared, and,
given the operator's key, the signatures; each finding names the file and field.
Recomputation and the receipt's bindings do not trust ``SHA256SUMS``: a file deleted or
edited together with its hash line is still found. The checks in full: docs/evidence.md,
"Audit".
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from collectors.aliases import vllm_aliases
from collectors.telemetry import summarize_folder
from evidence.attempt.diagnostics import recompute as recompute_diagnostic
from evidence.attempt.diagnostics import run_folders
from evidence.attempt.summary import cell_slo, summarize_attempt
from evidence.audit.carried import check_carried
from evidence.audit.diff import differences
from evidence.audit.passes import passes_problems
from evidence.bundle.write import comparison_of
from evidence.comparison.build import CellEntries, cells_with_attempts
from evidence.comparison.fidelity.entries import partial_scoring
from evidence.comparison.read import CampaignInputs, load_campaign
from evidence.folder.layout import (
    ENVELOPE_FILE,
    REPORT_FILE,
    RESULT_FILE,
    SUMS_FILE,
    AttemptDir,
    CampaignFolder,
)
from evidence.folder.seal import seal_check
from evidence.folder.sums import verify_sums
from evidence.views.card.render import render_card
from evidence.views.html.report_figures import Figures, undrawn
from faceoff.bounded import RECORD_CAP, TEXT_CAP, read_bytes, read_text
from faceoff.canonical import file_sha256
from faceoff.credentials import NOBODY, Credentials
from faceoff.cycles import cycle_collection_paused
from faceoff.digests import FileDigests
from faceoff.errors import FaceoffError
from faceoff.forked import forked_map, usable_cpus, workers
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME
from faceoff.formats.attempt.summary import SUMMARY_FILE, RequestSummary
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.formats.attempt.verdict import VERDICT_FILE, Verdict
from faceoff.formats.bundle.comparison import COMPARISON_FILE, CellEntry, Comparison, TicketRef
from faceoff.formats.bundle.manifest import MANIFEST_FILE, Manifest, manifest
from faceoff.formats.bundle.reviews import REVIEWS_FILE, read_reviews
from faceoff.formats.carried import CARRIED_FILE
from faceoff.formats.diagnostic import DIAGNOSTIC_FILE, Diagnostic
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from faceoff.formats.lane import LANE_FILE, LaneRecord
from faceoff.formats.receipt import RECEIPT_FILE, Receipt, bindable_files, verify_receipt
from faceoff.formats.seal_statement import SealPredicate
from faceoff.formats.ticket_index import INDEX_FILE, TICKETS_DIR, TicketIndex
from faceoff.record_signature import RecordSignature, check_record
from faceoff.seal_envelope import sealed_predicate
from faceoff.trust import SignatureCheck, Trust
from faceoff.trust import SignatureState as State
from guards.judge import judge_cell
from workload.journal import read_journal

Mark = Literal["warning", "not checked"]


@dataclass(frozen=True)
class Finding:
    file: str  # relative to the bundle
    field: str  # dotted path inside it, or "" for the whole file
    problem: str
    check: str = ""  # the check that found it (``CHECKS``)

    @property
    def line(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.problem}"


# The checks, in the order they run; each finding names the one that found it.
HASHES = "files match SHA256SUMS"
FROZEN = "frozen matrix id matches its content"
CARRIED = "carried-over cells match the source bundle and their content keys"
RECEIPT = "restoration receipt verifies, binds this campaign and its native files"
SUMMARIES = "request summaries recomputed from journals"
TELEMETRY = "telemetry recomputed from sample files"
VERDICTS = "guard verdicts recomputed"
DIAGNOSTICS = "paired diagnostics recomputed from their native files"
REVIEWS = "review chain verifies"
REBUILT = "comparison.json, RESULT.md, report.html rebuilt and compared"
# given a key to trust, a signature it cannot check proves nothing to the auditor
UNVERIFIABLE = "not verifiable with the trust given"
MANIFEST = "MANIFEST.json matches the rebuilt comparison"
TICKETS = "tickets/index.json matches the rebuilt comparison"
SIGNATURES = "signatures of the bundle, the receipt and the reviews"
CHECKS = (HASHES, FROZEN, CARRIED, RECEIPT, SUMMARIES, TELEMETRY, VERDICTS, DIAGNOSTICS,
          REVIEWS, REBUILT, MANIFEST, TICKETS)  # fmt: skip


@dataclass
class AuditReport:
    root: Path
    checked: list[str] = field(default_factory=list)  # what was verified, in order
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was not checked, and why
    marks: dict[str, tuple[Mark, str]] = field(default_factory=dict)  # check -> not ok, why
    counts: dict[str, int] = field(default_factory=dict)  # check -> what it covered
    step: str = HASHES  # the check running now
    seal: SignatureCheck | None = None  # what the bundle's signature proves
    sealed: SealPredicate | None = None  # what the seal says it seals (verified when ``seal`` is)

    def find(self, file: str, key: str, problem: str, check: str | None = None) -> None:
        self.findings.append(Finding(file, key, problem, check or self.step))

    @property
    def ok(self) -> bool:
        return not self.findings


@cycle_collection_paused()
def audit_bundle(
    path: Path,
    *,
    credentials: Credentials = NOBODY,
    redraw: bool = False,
    processes: int | None = 1,
) -> AuditReport:
    """Every check; ``credentials``: the keys (``--trust``) and secret to check signatures
    with; ``redraw``: draw report.html's figures again and compare the page byte for byte;
    ``processes``: how many may check cells (None: one per usable CPU; ``faceoff.forked``
    keeps to one while other threads run)."""
    folder = CampaignFolder.at(path)
    report = AuditReport(folder.root)
    trust = credentials.trust
    # SHA256SUMS and the receipt bind mostly the same files: each is read and hashed once
    digest_of = FileDigests()
    digest_of.prefetch(folder.files(), processes or usable_cpus())
    _sums(folder, report, digest_of)
    _seal(folder, report, credentials, digest_of)
    report.step = FROZEN
    frozen = _frozen(folder, report)
    if frozen is None:
        return report
    _sealed_campaign(folder, frozen, report)
    report.step = CARRIED
    judged_under = _carried(folder, frozen, report)
    report.step = RECEIPT
    _receipt(folder, frozen, report, trust, digest_of)
    cells = _cells(folder, frozen, report, judged_under=judged_under, digest_of=digest_of,
                   processes=processes)  # fmt: skip
    _diagnostics(folder, report)
    _derived(folder, report, trust, redraw, cells)
    return report


def _sums(folder: CampaignFolder, report: AuditReport, digest_of: Callable[[Path], str]) -> None:
    try:
        problems = verify_sums(folder, digest_of)
    except FaceoffError as exc:
        report.find(SUMS_FILE, "", exc.what)
        return
    for problem in problems:
        report.find(problem.path, "", problem.what)
    report.checked.append(SUMS_FILE)


def _seal(
    folder: CampaignFolder,
    report: AuditReport,
    credentials: Credentials,
    digest_of: Callable[[Path], str],
) -> None:
    """The bundle's signature: a finding when it does not verify, was stripped, or (given
    a key to trust) is missing or not one the trust given can check (a seal of a shared
    secret when only public keys are trusted); a note when nothing was given to check it
    with."""
    check = seal_check(folder, credentials, digest_of)
    report.seal = check
    for problem in check.problems:
        report.find(problem.file, "", problem.what, SIGNATURES)
    trusted = bool(credentials.trust.keys) or credentials.hmac is not None
    if check.state is State.UNSIGNED and trusted:
        report.find(SUMS_FILE, "", "the bundle is not signed, although a key to trust is given",
                    SIGNATURES)  # fmt: skip
    elif check.state is State.UNCHECKED and trusted:
        report.find(SUMS_FILE, "", f"{UNVERIFIABLE}: {check.sentence}", SIGNATURES)
    elif check.state in (State.UNCHECKED, State.UNSIGNED):
        report.notes.append(f"signatures were not checked: {check.sentence}")


def _sealed_campaign(folder: CampaignFolder, frozen: FrozenMatrix, report: AuditReport) -> None:
    """The campaign the seal names is this folder's: a validly signed bundle of another
    campaign, or under another folder name, is not this campaign's evidence."""
    sealed = report.sealed = sealed_predicate(folder.path(ENVELOPE_FILE))
    if sealed is None:
        return
    name = frozen.matrix.campaign.name
    for key, said, wanted, what in (
        ("campaign", sealed.campaign, name, "campaign"),
        ("matrix_id", sealed.matrix_id, frozen.matrix_id, "matrix id"),
        ("campaign", sealed.campaign, folder.root.name, "campaign (its folder's name)"),
    ):
        if said != wanted:
            problem = f"seals {what} {said!r}, but this bundle's is {wanted!r}"
            report.find(ENVELOPE_FILE, f"predicate.{key}", problem, SIGNATURES)


def _frozen(folder: CampaignFolder, report: AuditReport) -> FrozenMatrix | None:
    try:
        frozen = read_frozen(folder.frozen)
    except FaceoffError as exc:
        report.find(folder.frozen.name, "matrix_id", exc.message)
        return None
    report.checked.append(folder.frozen.name)
    return frozen


def _carried(
    folder: CampaignFolder, frozen: FrozenMatrix, report: AuditReport
) -> dict[str, FrozenMatrix]:
    """The carried-over cells' check; returns the frozen matrices, by id, that carried
    attempts were judged under."""
    check = check_carried(folder.root, frozen)
    for file, key, problem in check.problems:
        report.find(file, key, problem)
    report.counts[CARRIED] = check.files
    if check.record is None and not check.problems:
        report.marks[CARRIED] = ("not checked", "not a successor campaign")
    elif check.record is not None and not check.source_found:
        where = check.record.source_bundle
        note = f"source bundle not found at {where}: copies checked against {CARRIED_FILE} only"
        report.marks[CARRIED] = ("warning", note)
    return check.frozen


def _receipt(
    folder: CampaignFolder,
    frozen: FrozenMatrix,
    report: AuditReport,
    trust: Trust,
    digest_of: Callable[[Path], str],
) -> None:
    name = folder.receipt.name
    if not folder.receipt.is_file():
        report.find(name, "", "missing: restoration is not proven")
        return
    try:
        receipt = verify_receipt(folder.receipt)
    except FaceoffError as exc:
        report.find(name, "receipt_sha256", exc.what)
        return
    for field_name, problem in receipt_bindings(folder, frozen, receipt):
        report.find(name, field_name, problem)
    _signature(report, trust, (name, "signature"), receipt.receipt_sha256, receipt.signature)
    for file, problem in bound_file_problems(folder, receipt, digest_of):
        report.find(file, "", problem)
    report.checked.append(name)


def _signature(
    report: AuditReport,
    trust: Trust,
    where: tuple[str, str],
    digest: str,
    signature: RecordSignature | str | None,
) -> None:
    """A finding when the record's signature does not verify with ``trust``, or when a
    trusted key is given and the record is not signed."""
    check = check_record(digest, signature, trust, where[0])
    trusted = bool(trust.keys) or trust.hmac_key is not None
    if check.state is State.INVALID:
        for problem in check.problems:
            report.find(where[0], where[1], problem.what, SIGNATURES)
    elif check.state is State.UNSIGNED and trusted:
        report.find(*where, "not signed, although a key to trust is given", SIGNATURES)
    elif check.state is State.UNCHECKED and trusted:
        report.find(*where, f"{UNVERIFIABLE}: {check.sentence}", SIGNATURES)


def bound_file_problems(
    folder: CampaignFolder, receipt: Receipt, digest_of: Callable[[Path], str] = file_sha256
) -> list[tuple[str, str]]:
    """Native files that differ from, are missing from, or were added to the receipt's."""
    problems = []
    for name, digest in receipt.bound_files.items():
        path = folder.root / name
        if not path.is_file():
            problems.append((name, f"missing; {RECEIPT_FILE} bound it (sha256 {digest[:12]}…)"))
        elif (actual := digest_of(path)) != digest:
            problems.append(
                (name, f"sha256 is {actual[:12]}…, {RECEIPT_FILE} bound {digest[:12]}…")
            )
    for path in bindable_files(folder.root):
        name = path.relative_to(folder.root).as_posix()
        if name not in receipt.bound_files:
            problems.append((name, f"not bound by {RECEIPT_FILE}: added after restoration"))
    return problems


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


@dataclass(frozen=True)
class _Rebuilt:
    """The comparison's inputs and cell entries, or why they could not be rebuilt."""

    inputs: CampaignInputs | None
    cells: list[CellEntry]
    problem: str | None


def _cells(
    folder: CampaignFolder,
    frozen: FrozenMatrix,
    report: AuditReport,
    *,
    judged_under: dict[str, FrozenMatrix],
    digest_of: Callable[[Path], str],
    processes: int | None,
) -> _Rebuilt:
    """Cell by cell: its attempts checked, then its comparison entry rebuilt, while the
    cell's journals and plans are the ones last read (``faceoff.recent``): each is read
    once for both, which at a million requests is most of the audit. Cells are checked
    in ``processes`` forked workers (``faceoff.forked``), their findings kept in order."""
    inputs, entries, problem = None, None, None
    try:
        inputs = load_campaign(folder)
        entries = CellEntries(inputs)
    except FaceoffError as exc:
        problem = exc.message
    planned = entries.cell_ids if entries is not None else [c.id for c in frozen.matrix.cells]
    walk = list(cells_with_attempts(planned, folder.attempts()))
    job = _CellJob(folder, frozen, judged_under, digest_of, entries, walk)
    built: list[CellEntry] = []
    for done in forked_map(job.check, len(walk), workers(len(walk), processes)):
        report.findings.extend(done.findings)
        report.checked.extend(done.checked)
        problem = problem or done.problem
        if done.entry is not None:
            built.append(done.entry)
    return _Rebuilt(inputs, built, problem)


@dataclass(frozen=True)
class _CellChecked:
    """What checking one cell found (it crosses back from a worker process)."""

    findings: list[Finding]
    checked: list[str]
    entry: CellEntry | None
    problem: str | None  # why its comparison entry could not be rebuilt


@dataclass(frozen=True)
class _CellJob:
    folder: CampaignFolder
    frozen: FrozenMatrix
    judged_under: dict[str, FrozenMatrix]
    digest_of: Callable[[Path], str]
    entries: CellEntries | None  # None: the campaign's inputs could not be loaded
    walk: list[tuple[str | None, list[AttemptDir]]]  # ``cells_with_attempts``

    def check(self, index: int) -> _CellChecked:
        cell_id, attempts = self.walk[index]
        report = AuditReport(self.folder.root)
        for attempt in attempts:
            _attempt(self.folder, attempt, self.frozen, report, judged_under=self.judged_under,
                     digest_of=self.digest_of)  # fmt: skip
        if cell_id is None or self.entries is None:
            return _CellChecked(report.findings, report.checked, None, None)
        try:
            entry = self.entries.of(cell_id)
        except FaceoffError as exc:
            return _CellChecked(report.findings, report.checked, None, exc.message)
        return _CellChecked(report.findings, report.checked, entry, None)


def _attempt(
    folder: CampaignFolder,
    attempt: AttemptDir,
    frozen: FrozenMatrix,
    report: AuditReport,
    *,
    judged_under: dict[str, FrozenMatrix],
    digest_of: Callable[[Path], str],
) -> None:
    base = attempt.path
    journal = functools.cache(lambda: read_journal(base / JOURNAL_NAME))  # summary and verdict
    if (base / PLAN_NAME).is_file() and (base / JOURNAL_NAME).is_file():
        report.step = SUMMARIES
        arm, number = attempt.arm, attempt.attempt
        slo = cell_slo(frozen.matrix, attempt.cell_id)

        def summary() -> RequestSummary:
            return summarize_attempt(base, arm=arm, attempt=number, slo=slo, journal=journal())

        _compare(folder, base / SUMMARY_FILE, RequestSummary, report, summary)
    record = CellRecord.read(base / CELL_FILE) if (base / CELL_FILE).is_file() else None
    if record is not None and record.window is not None:
        report.step = TELEMETRY
        window, settings = record.window, record.collector_settings
        _compare(folder, base / TELEMETRY_FILE, TelemetrySummary, report,
                 lambda: summarize_folder(base, window, settings, vllm_aliases()))  # fmt: skip
    if record is not None and (base / VERDICT_FILE).is_file():
        report.step = VERDICTS
        under = judged_under.get(record.matrix_id, frozen)  # a carried attempt: its source's

        def verdict() -> Verdict:
            return judge_cell(base, under, journal=journal(), digest_of=digest_of)

        _compare(folder, base / VERDICT_FILE, Verdict, report, verdict)


def _diagnostics(folder: CampaignFolder, report: AuditReport) -> None:
    report.step = DIAGNOSTICS
    runs = run_folders(folder.root)
    if not runs:
        report.marks[DIAGNOSTICS] = ("not checked", "no paired diagnostics were run")
    for run in runs:
        path = run / DIAGNOSTIC_FILE

        def fresh(run: Path = run, path: Path = path) -> Diagnostic:
            return recompute_diagnostic(run, Diagnostic.read(path))

        _compare(folder, path, Diagnostic, report, fresh)


def _compare(
    folder: CampaignFolder,
    path: Path,
    model: type[BaseModel],
    report: AuditReport,
    recompute: Callable[[], BaseModel],
) -> None:
    name = path.relative_to(folder.root).as_posix()
    if not path.is_file():
        report.find(name, "", "missing; it can be recomputed")
        return
    try:
        stored: Any = model.model_validate_json(read_bytes(path, RECORD_CAP))
        fresh = recompute()
    except (FaceoffError, ValueError) as exc:
        report.find(name, "", f"cannot be read or recomputed: {exc}")
        return
    for key, was, now in differences(stored.model_dump(mode="json"), fresh.model_dump(mode="json")):
        report.find(name, key, f"file says {was!r}, recomputed from native files: {now!r}")
    report.checked.append(name)


def _derived(
    folder: CampaignFolder, report: AuditReport, trust: Trust, redraw: bool, cells: _Rebuilt
) -> None:
    """The review chain; comparison.json, RESULT.md, report.html rebuilt; manifest, tickets."""
    report.step = REVIEWS
    try:
        reviews = read_reviews(folder.root)
    except FaceoffError as exc:
        report.find(REVIEWS_FILE, "record_sha256", exc.message)
        return
    for number, review in enumerate(reviews, start=1):
        where = (REVIEWS_FILE, f"line {number}.signature")
        _signature(report, trust, where, review.record_sha256, review.signature)
    report.step = REBUILT
    inputs, problem = cells.inputs, cells.problem
    if inputs is not None and problem is None:
        try:
            fresh = comparison_of(inputs, cells.cells)
        except FaceoffError as exc:
            problem = exc.message
    if inputs is None or problem is not None:
        report.find(COMPARISON_FILE, "", f"cannot be rebuilt: {problem}")
        return
    _compare(folder, folder.path(COMPARISON_FILE), Comparison, report, lambda: fresh)
    report.notes += partial_scoring(fresh.fidelity)
    if inputs.passes is not None:  # what the flow skipped as decided, decided again
        matrix = inputs.frozen.matrix
        for problem_of in passes_problems(inputs.passes, matrix, cells.cells, fresh.fidelity):
            report.find(*problem_of)
    card = render_card(fresh)
    _rendered(folder, RESULT_FILE, card, report)
    # The renderer loads matplotlib: only an audit that gets this far pays for it.
    from evidence.views.html.report import render_report  # noqa: PLC0415

    page = render_report(fresh, inputs.attempts, Figures(draw=redraw))
    _rendered(folder, REPORT_FILE, page, report, compare=None if redraw else undrawn)
    if not redraw:
        report.notes.append(
            f"{REPORT_FILE}'s figures were checked by the hash of the data each is drawn "
            "from; their drawings by SHA256SUMS only (faceoff audit --redraw draws them)"
        )
    report.step = MANIFEST
    _manifest(folder, fresh, report)
    report.step = TICKETS
    _tickets(folder, fresh, report)


def _rendered(
    folder: CampaignFolder,
    name: str,
    fresh: str,
    report: AuditReport,
    compare: Callable[[str], str] | None = None,
) -> None:
    """The file against ``fresh``, both seen through ``compare`` when one is given."""
    path = folder.path(name)
    if not path.is_file():
        report.find(name, "", "missing; it can be rebuilt from comparison.json")
        return
    try:
        stored = read_text(path, TEXT_CAP)
    except FaceoffError as exc:
        report.find(name, "", exc.what)
        return
    seen = compare or (lambda text: text)
    if seen(stored) != seen(fresh):
        problem = (
            "differs from what this faceoff renders from comparison.json (edited, or "
            "written by another faceoff version: MANIFEST.json names it)"
        )
        report.find(name, "", problem)
    report.checked.append(name)


def _manifest(folder: CampaignFolder, fresh: Comparison, report: AuditReport) -> None:
    """The manifest's campaign, matrix and arms against the rebuilt comparison's.

    Host and source facts cannot be recomputed; SHA256SUMS alone covers them.
    """
    path = folder.path(MANIFEST_FILE)
    if not path.is_file():
        report.find(MANIFEST_FILE, "", "missing; the bundle does not say who wrote it")
        return

    def recompute() -> Manifest:
        stored = Manifest.read(path)
        return manifest(
            campaign=fresh.campaign,
            matrix_id=fresh.matrix_id,
            arms=fresh.arms,
            host=stored.host,
            source=stored.source,
            written_at=stored.written_at,
            posture=fresh.posture,
            signer=stored.signer,  # a claim: the signature check holds it to the seal
            waived=fresh.waivers,
        ).model_copy(update={"version": stored.version, "schema_version": stored.schema_version})

    _compare(folder, path, Manifest, report, recompute)


def _tickets(folder: CampaignFolder, fresh: Comparison, report: AuditReport) -> None:
    """tickets/index.json lists exactly the open tickets the comparison implies."""
    name = f"{TICKETS_DIR}/{INDEX_FILE}"
    path = folder.path(name)
    if not path.is_file():
        report.find(name, "", "missing; the failed and blocked cell runs have no tickets")
        return
    try:
        index = TicketIndex.read(path)
    except FaceoffError as exc:
        report.find(name, "", exc.message)
        return
    listed = [
        TicketRef(id=t.id, reason_code=t.reason_code, cells=t.cells, path=t.path)
        for t in index.tickets
        if t.status == "open"
    ]
    wanted = {"tickets": [t.model_dump(mode="json") for t in fresh.tickets]}
    found = {"tickets": [t.model_dump(mode="json") for t in listed]}
    for key, was, now in differences(found, wanted):
        report.find(name, key, f"file says {was!r}, the rebuilt comparison implies {now!r}")
    report.checked.append(name)
