"""A bundle signed with the operator's Ed25519 key: an auditor verifies it with the public key
alone, and nothing faceoff does ever signs a forgery or removes a signature.

A test of sealing across packages (the bundle, its audit, reviews, reruns), kept beside
the seal's envelope: the Ed25519 statement an auditor checks is what it mainly asserts.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Engine

from evidence.audit.checklist import checklist, lines
from evidence.audit.reverify import UNVERIFIABLE, audit_bundle
from evidence.bundle.write import reopen_bundle, write_bundle
from evidence.folder.layout import ENVELOPE_FILE, SEAL_FILE, CampaignFolder
from evidence.folder.seal import lift_seal
from evidence.folder.sums import write_sums
from evidence.reviews.recording import ReviewRequest
from faceoff.canonical import file_sha256
from faceoff.credentials import NOBODY, Credentials
from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from faceoff.formats.bundle.reviews import Decision
from faceoff.formats.host_facts import HostFacts, SourceFacts
from faceoff.formats.receipt import Receipt
from faceoff.keys import PublicKey, SigningKey
from faceoff.seal_envelope import seal_ref, sealed_predicate
from faceoff.signing import sign
from faceoff.trust import HMAC_SIGNER
from flows.cli.review import record_review
from ledger.campaigns import find_campaign
from ledger.db import session_scope
from tests.flows.cli.test_review import ledger_for, utc_now
from tests.foundation.cli import faceoff

JOURNAL = "cells/natural-8192-c1/nvfp4-r2/attempt-1/journal.jsonl"


@dataclass(frozen=True)
class Signed:
    root: Path
    engine: Engine
    operator: Credentials  # holds the private key
    auditor: Credentials  # holds the public key only

    def audit(self, credentials: Credentials | None = None) -> list[str]:
        found = audit_bundle(self.root, credentials=credentials or self.auditor).findings
        return [f.line for f in found]


def a_key() -> SigningKey:
    private = Ed25519PrivateKey.generate()
    return SigningKey(private, PublicKey.of(private.public_key()))


@pytest.fixture
def signed(
    bundle_copy: Callable[[], Path], host_facts: HostFacts, source_facts: SourceFacts
) -> Signed:
    """The session's bundle, closed as an operator with a key file closes it."""
    root = bundle_copy()
    lift_seal(CampaignFolder(root))
    key = a_key()
    operator = Credentials(key=key)
    receipt = root / "receipt.json"  # the restoration signs it, as the flow does with a key
    Receipt.read(receipt).signed(operator).write(receipt, replace=True)
    write_bundle(root, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts,
                 credentials=operator)  # fmt: skip
    return Signed(root, ledger_for(root, "complete"), operator, Credentials(trusted=(key.public,)))


def review(signed: Signed, credentials: Credentials) -> None:
    request = ReviewRequest("alice", Decision.NO_PROMOTION, "controlled failed")
    record_review(signed.engine, "glm53-sim", request, now=utc_now, credentials=credentials)


def test_an_auditor_verifies_the_bundle_with_the_public_key_and_no_secret(signed: Signed) -> None:
    assert (signed.root / ENVELOPE_FILE).is_file()
    manifest = json.loads((signed.root / "MANIFEST.json").read_text())
    assert manifest["signer"] == signed.operator.signer
    report = audit_bundle(signed.root, credentials=signed.auditor)
    assert [f.line for f in report.findings] == []
    assert report.seal is not None and report.seal.verified
    shown = "\n".join(lines(checklist(report)))
    line = "[ok  ] signatures of the bundle, the receipt and the reviews (1) — signed by"
    assert f"{line} {signed.operator.signer}" in shown
    unkeyed = audit_bundle(signed.root)
    assert unkeyed.ok and unkeyed.seal is not None and unkeyed.seal.state == "unchecked"
    stranger = Credentials(trusted=(a_key().public,))
    assert any("no trusted key verifies it" in f for f in signed.audit(stranger))


def test_a_keyed_review_of_a_stripped_seal_is_refused_and_writes_nothing(signed: Signed) -> None:
    manifest = json.loads((signed.root / "MANIFEST.json").read_text())
    manifest["host"]["hostname"] = "forged-host"
    (signed.root / "MANIFEST.json").write_text(json.dumps(manifest))
    write_sums(CampaignFolder(signed.root))  # re-hashed
    (signed.root / ENVELOPE_FILE).unlink()  # and the seal stripped
    sums = (signed.root / "SHA256SUMS").read_bytes()
    with pytest.raises(
        FaceoffError, match=r"does not verify \(stripped\).*SEAL\.dsse\.json: missing"
    ):
        review(signed, signed.operator)
    assert not (signed.root / "reviews.jsonl").exists()
    assert (signed.root / "SHA256SUMS").read_bytes() == sums
    assert not (signed.root / ENVELOPE_FILE).exists()
    assert any("SEAL.dsse.json: missing, although" in f for f in signed.audit(NOBODY))


@pytest.mark.parametrize(
    ("name", "plant"),
    [
        ("APPROVED-promote-r2-by-CTO/", lambda root: (root / "APPROVED-promote-r2-by-CTO").mkdir()),
        (".run.lock", lambda root: (root / ".run.lock").write_text("promote approved by CTO\n")),
        (SEAL_FILE, lambda root: (root / SEAL_FILE).write_text("0" * 64 + "\n")),
    ],
)
def test_a_keyed_review_refuses_to_seal_again_around_unlisted_content(
    signed: Signed, name: str, plant: Callable[[Path], object]
) -> None:
    plant(signed.root)
    envelope = (signed.root / ENVELOPE_FILE).read_bytes()
    with pytest.raises(FaceoffError, match=rf"{name}: present but not in the signed statement"):
        review(signed, signed.operator)
    assert (signed.root / ENVELOPE_FILE).read_bytes() == envelope
    assert f"{name}: present but not in the signed statement" in signed.audit()


def test_a_review_without_the_key_never_removes_a_signature(signed: Signed) -> None:
    envelope = (signed.root / ENVELOPE_FILE).read_bytes()
    with pytest.raises(FaceoffError, match=r"does not verify \(unchecked\)"):
        review(signed, NOBODY)
    assert (signed.root / ENVELOPE_FILE).read_bytes() == envelope
    assert signed.audit() == []


def test_a_keyed_review_of_an_intact_bundle_is_signed_and_sealed_again(signed: Signed) -> None:
    review(signed, signed.operator)
    record = json.loads((signed.root / "reviews.jsonl").read_text().splitlines()[0])
    assert record["signature"]["keyid"] == signed.operator.signer
    assert signed.audit() == []


def test_a_forged_journal_is_never_sealed_again_by_a_rerun_or_a_restoration(
    signed: Signed,
) -> None:
    journal = signed.root / JOURNAL
    lines_ = journal.read_text().splitlines()
    first = json.loads(lines_[0])
    first["first_content_ns"] -= 20_000_000  # 20 ms off a candidate's TTFT
    journal.write_text("\n".join([json.dumps(first), *lines_[1:]]) + "\n")
    write_sums(CampaignFolder(signed.root))
    envelope = (signed.root / ENVELOPE_FILE).read_bytes()
    for credentials in (signed.operator, NOBODY):
        with pytest.raises(FaceoffError, match=rf"{JOURNAL}: sha256 is"):
            reopen_bundle(signed.root, credentials, sealed=True)
    assert (signed.root / ENVELOPE_FILE).read_bytes() == envelope
    assert any(f.startswith(f"{JOURNAL}: sha256 is") for f in signed.audit())


def test_an_added_file_with_re_hashed_sums_is_refused_by_a_rerun_and_caught_without_a_key(
    signed: Signed,
) -> None:
    (signed.root / "APPROVAL.txt").write_text("approved\n")
    write_sums(CampaignFolder(signed.root))
    with pytest.raises(FaceoffError, match=r"APPROVAL\.txt: present but not in the signed"):
        reopen_bundle(signed.root, signed.operator, sealed=True)
    assert "APPROVAL.txt: present but not in the signed statement" in signed.audit(NOBODY)


def test_a_dot_file_is_in_the_sums_the_receipt_and_the_audit(signed: Signed) -> None:
    hidden = signed.root / "cells/natural-8192-c1/nvfp4-r2/attempt-1/.hidden"
    hidden.write_text("x")
    found = signed.audit(NOBODY)
    name = "cells/natural-8192-c1/nvfp4-r2/attempt-1/.hidden"
    assert f"{name}: present but not listed in SHA256SUMS" in found
    assert f"{name}: present but not in the signed statement" in found
    assert any(f.startswith(name) and "receipt" in f for f in found), found


def test_an_unsigned_bundle_is_never_signed_by_a_later_key(
    bundle_copy: Callable[[], Path], host_facts: HostFacts, source_facts: SourceFacts
) -> None:
    root = bundle_copy()  # closed without a key
    with pytest.raises(FaceoffError, match="never signed"):
        reopen_bundle(root, Credentials(key=a_key()), sealed=True)
    reopen_bundle(root, NOBODY, sealed=True)  # without a key it reopens as before
    assert not (root / "SHA256SUMS").exists()


def test_a_bundle_signed_again_with_a_shared_secret_is_a_finding_under_a_public_key(
    signed: Signed,
) -> None:
    """Was: a forger who swapped every Ed25519 signature for an HMAC under a secret of his own
    (seal, receipt, manifest's signer) passed `faceoff audit --trust PUBLIC_KEY`: a signature
    the trust given could not check was only a note."""
    secret = b"the forger's own secret"
    receipt = Receipt.read(signed.root / "receipt.json")
    forged = receipt.model_copy(update={"signature": sign(secret, receipt.receipt_sha256)})
    forged.write(signed.root / "receipt.json", replace=True)
    manifest = json.loads((signed.root / "MANIFEST.json").read_text())
    (signed.root / "MANIFEST.json").write_text(json.dumps(manifest | {"signer": HMAC_SIGNER}))
    (signed.root / ENVELOPE_FILE).unlink()
    sums = write_sums(CampaignFolder(signed.root))
    (signed.root / SEAL_FILE).write_text(sign(secret, file_sha256(sums)) + "\n")

    found = signed.audit()

    assert f"SHA256SUMS: {UNVERIFIABLE}: HMAC-signed (shared secret)" in "\n".join(found), found
    assert any(f.startswith(f"receipt.json: signature: {UNVERIFIABLE}") for f in found), found


def test_each_seal_names_the_one_it_supersedes_and_the_ledger_keeps_the_current(
    signed: Signed,
) -> None:
    first = seal_ref(signed.root / ENVELOPE_FILE)
    assert first is not None and first.sequence == 1
    review(signed, signed.operator)
    second = sealed_predicate(signed.root / ENVELOPE_FILE)
    assert second is not None and second.sequence == 2 and second.supersedes == first.sha256
    assert second.sealed_at is not None
    with session_scope(signed.engine) as session:
        row = find_campaign(session, "glm53-sim")
        assert row is not None and row.seal_sequence == 2
        assert row.seal_sha256 == file_sha256(signed.root / ENVELOPE_FILE)


def test_a_rolled_back_bundle_or_review_is_a_finding_when_audited_by_name(
    signed: Signed, tmp_path: Path
) -> None:
    before = tmp_path / "before-review"
    shutil.copytree(signed.root, before)
    review(signed, signed.operator)
    public = tmp_path / "operator.pub"
    public.write_text(signed.operator.trust.keys[0].pem())
    shutil.rmtree(signed.root)
    shutil.copytree(before, signed.root)  # the validly signed pre-review bundle put back
    by_folder = faceoff("audit", str(signed.root), "--trust", str(public))
    assert by_folder.returncode == 0, by_folder.stdout
    assert "verified: campaign glm53-sim, matrix " in by_folder.stdout
    assert "seal 1 of its chain, sealed " in by_folder.stdout
    workdir = str(signed.root.parent)
    by_name = faceoff("audit", "glm53-sim", "--workdir", workdir, "--trust", str(public))
    assert by_name.returncode == Exit.FINDINGS, by_name.stdout + by_name.stderr
    assert "the ledger's current seal is seal 2" in by_name.stdout
    assert "the ledger records 1 review(s), the bundle holds 0: a review rolled back" in (
        by_name.stdout
    )


def test_a_bundle_audited_under_another_folder_name_is_a_finding(
    signed: Signed, tmp_path: Path
) -> None:
    moved = tmp_path / "glm53-sim-approved"
    shutil.copytree(signed.root, moved)
    findings = [f.line for f in audit_bundle(moved, credentials=signed.auditor).findings]
    assert findings == [
        "SEAL.dsse.json: predicate.campaign: seals campaign (its folder's name) 'glm53-sim', "
        "but this bundle's is 'glm53-sim-approved'"
    ]
