"""``receipt.json``: the restoration receipt, what was observed when the incumbent was brought
back (written by ``lanes.restoration``), with the probes and router calls it quotes.

The receipt carries the sha256 of its own canonical content, so an edited receipt no longer
verifies; with the operator's key it is also signed (Ed25519, or the HMAC of older
bundles), so a recomputed hash does not make a forged one pass. It binds the sha256 of
every native file of the campaign folder as they were when it was written
(``bound_files``): a native file edited or deleted afterwards, its ``SHA256SUMS`` line with
it, no longer matches the receipt.

Format history of ``Receipt.schema_version``:
  1 — first release.
  2 — ``json_smoke_off_reason``: the incumbent's JSON smoke was declared off, and why.
  3 — ``bound_files`` (native files' sha256) and ``signature`` (HMAC, or None).
  4 — ``signature`` may be an Ed25519 signature ``{keyid, sig}`` of receipt_sha256.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.bounded import regular_files
from faceoff.canonical import content_sha256, file_sha256
from faceoff.credentials import Credentials
from faceoff.errors import FaceoffError
from faceoff.formats.lane import LANES_DIR
from faceoff.formats.protected import ProtectedCheck
from faceoff.record_signature import RecordSignature
from faceoff.signing import SIGNING_KEY_ENV
from matrix.arm import LaneKind

RECEIPT_FILE = "receipt.json"
# What the campaign wrote before restoration ended; everything else of the bundle
# is written after the receipt (tickets, views, reviews) and checked otherwise.
BOUND_ROOTS = (LANES_DIR, "cells", "diagnostics", "handoffs", "matrix.frozen.json",
               "protected.before.json", "preflight", "pilot")  # fmt: skip
# Written by the bundle writer after the receipt, recomputed by the audit.
UNBOUND_NAMES = frozenset({"summary.json"})

Outcome = Literal["restored", "restored_with_changes", "failed"]
ProbeKind = Literal["smoke", "json_smoke"]


class ProbeResult(Spec):
    index: int = Field(description="0-based probe number.")
    ok: bool = Field(description="Whether this probe passed.")
    status: int | None = Field(description="HTTP status; None when no answer came.")
    elapsed_s: float = Field(description="Seconds from send to the full reply.")
    detail: str = Field(description="What passed or failed, in a sentence.")
    excerpt: str = Field(default="", description="Start of the returned text.")


class ProbeSummary(Spec):
    kind: ProbeKind = Field(description="smoke | json_smoke.")
    via: Literal["lane", "router"] = Field(description="Sent to the lane or through the router.")
    url: str = Field(description="Endpoint the probes were sent to.")
    model: str = Field(description="Model name sent.")
    passed: int = Field(description="Probes that passed.")
    total: int = Field(description="Probes sent.")
    results: list[ProbeResult] = Field(description="Each probe.")

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def line(self) -> str:
        return f"{self.via} {self.kind.replace('_', ' ')} {self.passed}/{self.total}"


RouterActionName = Literal["drain", "readmit"]


class RouterAction(Spec):
    action: RouterActionName = Field(description="drain | readmit.")
    via: Literal["http", "command", "none"] = Field(description="How it was done.")
    ok: bool = Field(description="The router (or command) accepted it.")
    at: datetime = Field(description="When it completed (UTC).")
    detail: str = Field(description="Status, exit code or output, token redacted.")


class CandidateAbsence(Spec):
    arm: str = Field(description="Candidate arm.")
    absent: bool = Field(description="No container, process or listener of it remains.")
    removed: list[str] = Field(
        default_factory=list, description="Containers/pids removed by restoration."
    )
    detail: str = Field(description="How absence was established, or what remains.")


class RouterOutcome(Spec):
    readmit: RouterAction | None = Field(
        default=None, description="The readmit call; None when it was not attempted."
    )
    readmitted_after_identity: bool = Field(
        description="Readmitted, and only after identity readiness and smoke passed."
    )
    smoke: ProbeSummary | None = Field(default=None, description="Authenticated smoke, N/N.")
    json_smoke: ProbeSummary | None = Field(
        default=None, description="Authenticated JSON smoke, N/N."
    )
    detail: str | None = Field(
        default=None, description="Why readmission was not attempted, when it was not."
    )


class Receipt(Artifact):
    schema_version: Literal[3, 4] = Field(default=4, description="Receipt format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id the recipe came from.")
    attempt: int = Field(description="Restoration attempt number (the ledger's count).")
    incumbent_arm: str = Field(description="The incumbent arm.")
    lane_kind: LaneKind = Field(description="docker, or a host process (process | simulator).")
    lane_run: str = Field(description="lanes/<arm>/<run> folder of the restored lane.")
    image: str | None = Field(description="Pinned incumbent image, repo@sha256:….")
    running_image: str | None = Field(
        description="Digest the running container was verified to run."
    )
    container_id: str | None = Field(description="Running container id (Docker lanes).")
    pid: int | None = Field(
        description="Running pid (host lanes; the container's init for Docker)."
    )
    identity_ok: bool = Field(description="Readiness and identity passed.")
    identity_reason: str | None = Field(description="Why identity failed, when it did.")
    identity_ready_at: datetime | None = Field(description="When identity readiness was reached.")
    candidates: list[CandidateAbsence] = Field(description="Each candidate arm's absence.")
    smoke: ProbeSummary | None = Field(description="Direct smoke, N/N; None if not reached.")
    json_smoke: ProbeSummary | None = Field(
        description="Direct JSON smoke, N/N; None if not reached or declared off."
    )
    json_smoke_off_reason: str | None = Field(
        default=None,
        description="Why the JSON smoke was not run (the arm declared it off), direct and routed.",
    )
    router: RouterOutcome | None = Field(description="Router readmission; None without a router.")
    protected_files: list[ProtectedCheck] = Field(description="path → sha256 before/after.")
    protected_unchanged: bool = Field(
        default=False, description="Every protected file is provably unchanged."
    )
    started_at: datetime = Field(description="When this restoration attempt began (UTC).")
    completed_at: datetime = Field(description="When the receipt was written (UTC).")
    outcome: Outcome = Field(
        default="failed", description="restored | restored_with_changes | failed."
    )
    problems: list[str] = Field(
        default_factory=list, description="A sentence for each failed or changed item."
    )
    bound_files: dict[str, str] = Field(
        default_factory=dict,
        description="Path (relative to the campaign folder) → sha256 of every native file "
        f"under {', '.join(BOUND_ROOTS)} when the receipt was written.",
    )
    receipt_sha256: str = Field(
        default="", description="sha256 of the canonical content without it and the signature."
    )
    signature: RecordSignature | str | None = Field(
        default=None,
        description="The operator's signature of receipt_sha256: Ed25519 {keyid, sig}, or the "
        f"hex HMAC-SHA256 under {SIGNING_KEY_ENV} of older receipts; None without a key.",
    )

    def content_hash(self) -> str:
        content = self.model_dump(mode="json")
        content.pop("receipt_sha256")
        content.pop("signature")
        return content_sha256(content)

    def judged(self) -> Receipt:
        """The receipt with outcome and problems derived from its own observations."""
        blocking = restoration_problems(self)
        changes = protected_problems(self.protected_files)
        if blocking:
            outcome: Outcome = "failed"
        else:
            outcome = "restored_with_changes" if changes else "restored"
        return self.model_copy(
            update={
                "outcome": outcome,
                "problems": blocking + changes,
                "protected_unchanged": not changes,
            }
        )

    def sealed(self) -> Receipt:
        return self.model_copy(update={"receipt_sha256": self.content_hash()})

    def signed(self, credentials: Credentials) -> Receipt:
        """The sealed receipt signed with ``credentials`` (unsigned without a key)."""
        return self.model_copy(update={"signature": credentials.sign_record(self.receipt_sha256)})

    def summary(self) -> list[str]:
        """The receipt in a few lines, for terminals and logs."""
        if self.container_id:
            lane = f"{self.image} (container {self.container_id[:12]})"
        else:
            lane = f"{self.lane_kind.value} lane, host process pid {self.pid}"
        lines = [f"incumbent {self.incumbent_arm}: {lane}"]
        lines.append(
            "candidates absent" if all(c.absent for c in self.candidates) else "candidate present"
        )
        lines += [p.line for p in (self.smoke, self.json_smoke) if p is not None]
        if self.json_smoke_off_reason is not None:
            lines.append(f"JSON smoke not run: {self.json_smoke_off_reason}")
        if self.router is not None:
            lines.append(
                f"router readmitted after identity: {self.router.readmitted_after_identity}"
            )
            lines += [p.line for p in (self.router.smoke, self.router.json_smoke) if p is not None]
        changed = [c.path for c in self.protected_files if not c.unchanged]
        lines.append(
            f"protected files changed: {', '.join(changed)}"
            if changed
            else "protected files unchanged"
        )
        return lines


def restoration_problems(receipt: Receipt) -> list[str]:
    """Sentences for everything that keeps the incumbent from counting as restored."""
    problems = []
    if not receipt.identity_ok:
        problems.append(receipt.identity_reason or "the incumbent's identity was not established")
    problems += [
        f"candidate {c.arm} is not absent: {c.detail}" for c in receipt.candidates if not c.absent
    ]
    problems += _probe_problems([receipt.smoke, receipt.json_smoke])
    router = receipt.router
    if router is not None:
        if not router.readmitted_after_identity:
            why = router.detail or (router.readmit.detail if router.readmit else "not attempted")
            problems.append(f"the router did not readmit the incumbent after identity: {why}")
        problems += _probe_problems([router.smoke, router.json_smoke])
    return problems


def protected_problems(checks: list[ProtectedCheck]) -> list[str]:
    return [_protected_sentence(c) for c in checks if not c.unchanged]


def _probe_problems(summaries: list[ProbeSummary | None]) -> list[str]:
    problems = []
    for summary in summaries:
        if summary is not None and not summary.ok:
            first = next(r for r in summary.results if not r.ok)
            problems.append(f"{summary.line}: probe {first.index} failed: {first.detail}")
    return problems


def _protected_sentence(check: ProtectedCheck) -> str:
    if check.change == "modified":
        return (
            f"protected file {check.path} was modified "
            f"(sha256 {check.before.sha256} before, {check.after.sha256} after)"
        )
    if check.change == "unreadable":
        why = check.before.detail or check.after.detail
        return (
            f"protected file {check.path} could not be read, so it is not proven unchanged ({why})"
        )
    return f"protected file {check.path} was {check.change} during the campaign"


def bound_files(campaign_dir: Path) -> dict[str, str]:
    """sha256 of every file the receipt binds, by its path relative to ``campaign_dir``."""
    root = Path(campaign_dir)
    return {path.relative_to(root).as_posix(): file_sha256(path) for path in bindable_files(root)}


def bindable_files(campaign_dir: Path) -> list[Path]:
    """The files under ``BOUND_ROOTS`` a receipt binds, dot-files too (recomputed ones aside)."""
    found = []
    for name in BOUND_ROOTS:
        top = Path(campaign_dir) / name
        found += [top] if top.is_file() else regular_files(top) if top.is_dir() else []
    return sorted(p for p in found if p.name not in UNBOUND_NAMES)


def verify_receipt(path: Path) -> Receipt:
    """Read a receipt and prove its content still hashes to the sha256 it carries."""
    receipt = Receipt.read(path)
    actual = receipt.content_hash()
    if actual != receipt.receipt_sha256:
        raise FaceoffError(
            f"receipt content hashes to {actual[:12]} but claims {receipt.receipt_sha256[:12]}",
            where=str(path),
            fix="the receipt was edited after it was written; use the copy in the evidence bundle",
        )
    if receipt.judged().sealed() != receipt:
        raise FaceoffError(
            "the receipt's outcome or problems do not follow from its observations",
            where=str(path),
            fix="the receipt was written by a different faceoff version or forged",
        )
    return receipt
