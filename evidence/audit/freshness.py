"""Freshness: the bundle audited by name against what the ledger says is current, so that
an older, validly signed bundle of the same campaign put in its place (a rollback of the
bundle, or of a review) is a finding. What is adopted from TUF and transparency logs, and
what is left to the operator: docs/evidence.md, "Freshness"."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evidence.audit.reverify import REVIEWS, SIGNATURES, Finding
from evidence.folder.layout import ENVELOPE_FILE
from faceoff.bounded import read_lines
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.reviews import REVIEWS_FILE
from faceoff.seal_envelope import seal_ref


@dataclass(frozen=True)
class LedgerSeal:
    """What the ledger keeps of a campaign's bundle."""

    sha256: str | None  # its current seal's; None: never sealed with a key, or before 0003
    sequence: int | None
    reviews: int  # review rows recorded


def freshness_findings(root: Path, ledger: LedgerSeal) -> list[Finding]:
    """The bundle's seal and reviews against the ledger's."""
    found = []
    ref = seal_ref(Path(root) / ENVELOPE_FILE)
    if ledger.sha256 is not None and (ref is None or ref.sha256 != ledger.sha256):
        have = "no seal" if ref is None else f"seal {ref.sequence} (sha256 {ref.sha256[:12]}…)"
        problem = (
            f"the ledger's current seal is seal {ledger.sequence} (sha256 {ledger.sha256[:12]}…), "
            f"this bundle has {have}: an older bundle put back, or the current one replaced"
        )
        found.append(Finding(ENVELOPE_FILE, "", problem, SIGNATURES))
    held = _review_lines(Path(root) / REVIEWS_FILE)
    if held < ledger.reviews:
        problem = (
            f"the ledger records {ledger.reviews} review(s), the bundle holds {held}: "
            "a review rolled back"
        )
        found.append(Finding(REVIEWS_FILE, "", problem, REVIEWS))
    return found


def _review_lines(path: Path) -> int:
    try:
        return sum(1 for _, line in read_lines(path) if line.strip())
    except (OSError, FaceoffError):  # missing, or unreadable: the audit says which
        return 0
