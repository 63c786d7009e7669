"""A bundle's seal (DSSE over an in-toto Statement) and a record's signature, checked with a
trust set and no secret: each state named, each tampered file named."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.keys import SigningKey, init_key_pair, read_signing_key
from faceoff.record_signature import check_record, claim_of, sign_record
from faceoff.seal_envelope import SealLayout, SignerClaim, seal_bundle, verify_bundle_seal
from faceoff.signing import sign
from faceoff.trust import (
    HMAC_SIGNER,
    SignatureCheck,
    SignatureState,
    Trust,
    read_trust,
    refuse_unless_verified,
)

ENVELOPE, HMAC_FILE, SUMS = "seal.intoto.json", "SHA256SUMS.hmac", "SHA256SUMS"
LOCK = ".run.lock"
LAYOUT = SealLayout(envelope=ENVELOPE, hmac=HMAC_FILE, sums=SUMS, apart=(LOCK,))
SECRET = b"operator-shared-secret"


@pytest.fixture
def operator(tmp_path: Path) -> tuple[SigningKey, Trust]:
    pair = init_key_pair(tmp_path / "keys")
    return read_signing_key(pair.private), read_trust([pair.public])


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    for name, text in {
        "MANIFEST.json": '{"campaign": "c"}\n',
        "receipt.json": '{"outcome": "restored"}\n',
        "cells/a/inc/attempt-1/journal.jsonl": '{"i": 1}\n',
        SUMS: "sums\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def seal(root: Path, key: SigningKey) -> None:
    seal_bundle(root, LAYOUT, key, campaign="c", matrix_id="m1", sealed="bundle at close")


def check(root: Path, trust: Trust, claims: tuple[SignerClaim, ...] = ()) -> SignatureCheck:
    return verify_bundle_seal(root, LAYOUT, trust, claims)


def test_a_sealed_bundle_verifies_with_the_public_key_alone(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, trust = operator
    seal(bundle, key)

    result = check(bundle, trust)
    assert result.state is SignatureState.VERIFIED and result.verified
    assert result.signer == key.fingerprint
    assert result.sentence == f"signed by {key.fingerprint} (ed25519-dsse), verified"
    assert trust.hmac_key is None  # nothing secret was needed
    refuse_unless_verified(result, bundle, doing="re-signed")


TAMPERING = {  # what is done to the sealed bundle -> the file named, and what is said of it
    "edit": ("MANIFEST.json", "the signed statement says"),
    "delete": ("receipt.json", "in the signed statement but missing"),
    "add": ("APPROVAL.txt", "present but not in the signed statement"),
    "add a dot-file": ("cells/a/inc/attempt-1/.hidden", "present but not in the signed statement"),
    "add a FIFO": ("cells/a/inc/attempt-1/pipe", "present but not in the signed statement"),
    "replace by a link": ("receipt.json", "a link or special file now"),
}


def tamper(root: Path, how: str) -> None:
    target = root / TAMPERING[how][0]
    if how == "delete":
        target.unlink()
    elif how == "add a FIFO":
        os.mkfifo(target)  # opening it would hang the check: it must never be read
    elif how == "replace by a link":
        target.unlink()
        target.symlink_to(root / "MANIFEST.json")
    else:
        target.write_text('{"campaign": "x"}\n')


@pytest.mark.parametrize("how", TAMPERING)
def test_a_file_changed_removed_or_added_after_the_seal_is_named(
    bundle: Path, operator: tuple[SigningKey, Trust], how: str
) -> None:
    key, trust = operator
    seal(bundle, key)
    tamper(bundle, how)
    named, what = TAMPERING[how]

    for given in (trust, Trust()):  # without trust the files are still compared
        result = check(bundle, given)
        assert result.state is SignatureState.INVALID
        assert [(p.file, what in p.what) for p in result.problems] == [(named, True)]
    with pytest.raises(FaceoffError, match=f"not re-signed: invalid: {named}"):
        refuse_unless_verified(result, bundle, doing="re-signed")


def test_a_statement_rewritten_to_match_the_edit_no_longer_verifies(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, trust = operator
    seal(bundle, key)
    (bundle / "MANIFEST.json").write_text('{"campaign": "forged"}\n')
    envelope = json.loads((bundle / ENVELOPE).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    for subject in statement["subject"]:
        if subject["name"] == "MANIFEST.json":
            subject["digest"]["sha256"] = file_sha256(bundle / "MANIFEST.json")
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (bundle / ENVELOPE).write_text(json.dumps(envelope))

    result = check(bundle, trust)
    assert result.state is SignatureState.INVALID
    assert [p.file for p in result.problems] == [ENVELOPE]
    assert "no trusted key verifies it" in result.problems[0].what


def test_a_seal_by_a_key_outside_the_trust_set_is_invalid(
    bundle: Path, operator: tuple[SigningKey, Trust], tmp_path: Path
) -> None:
    _, trust = operator
    forger = read_signing_key(init_key_pair(tmp_path / "forger").private)
    seal(bundle, forger)

    result = check(bundle, trust)
    assert result.state is SignatureState.INVALID
    assert f"no trusted key verifies it (it names {forger.fingerprint})" in result.sentence
    untrusted = check(bundle, Trust())
    assert untrusted.state is SignatureState.UNCHECKED
    assert (
        untrusted.sentence
        == f"claims to be signed by {forger.fingerprint} (not checked: pass --trust)"
    )


def test_an_envelope_that_is_not_a_seal_is_invalid(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    _, trust = operator
    (bundle / ENVELOPE).write_text(
        '{"payload": "e30=", "payloadType": "text/plain", "signatures": []}'
    )
    result = check(bundle, trust)
    assert result.state is SignatureState.INVALID
    assert "payloadType is 'text/plain'" in result.problems[0].what
    (bundle / ENVELOPE).write_text("{not json")
    assert "not a DSSE envelope" in check(bundle, trust).problems[0].what


def test_a_seal_that_is_gone_is_stripped_when_the_bundle_records_a_signer(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, trust = operator
    seal(bundle, key)
    (bundle / ENVELOPE).unlink()

    assert check(bundle, trust).state is SignatureState.UNSIGNED
    claims = (SignerClaim("receipt.json: signature", key.fingerprint),)
    result = check(bundle, trust, claims)
    assert result.state is SignatureState.STRIPPED
    assert result.sentence == (
        f"stripped: {ENVELOPE}: missing, although receipt.json: signature records a "
        f"signature by {key.fingerprint}"
    )
    hmac_claim = claim_of("reviews.jsonl: line 1.signature", sign(SECRET, "ab" * 32))
    assert hmac_claim == SignerClaim("reviews.jsonl: line 1.signature", HMAC_SIGNER)
    assert check(bundle, trust, (hmac_claim,)).problems[0].file == HMAC_FILE
    assert claim_of("receipt.json: signature", None) is None


def test_an_hmac_sealed_bundle_stays_readable_and_says_it_needs_the_secret(bundle: Path) -> None:
    (bundle / HMAC_FILE).write_text(sign(SECRET, file_sha256(bundle / SUMS)) + "\n")

    unchecked = check(bundle, Trust())
    assert unchecked.state is SignatureState.UNCHECKED
    assert unchecked.sentence.startswith("HMAC-signed (shared secret): verifiable only with")
    assert check(bundle, Trust(hmac_key=SECRET)).state is SignatureState.VERIFIED
    wrong = check(bundle, Trust(hmac_key=b"another"))
    assert wrong.state is SignatureState.INVALID
    assert wrong.problems[0].file == HMAC_FILE


def test_a_key_seal_swapped_for_an_hmac_one_is_stripped_not_unchecked(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    """Was: the envelope deleted and an HMAC of the sums under a forger's secret put in its
    place read as "HMAC-signed, unchecked", and a keyed audit passed."""
    key, trust = operator
    seal(bundle, key)
    (bundle / ENVELOPE).unlink()
    (bundle / HMAC_FILE).write_text(sign(b"forger", file_sha256(bundle / SUMS)) + "\n")
    claims = (SignerClaim("receipt.json: signature", key.fingerprint),
              SignerClaim("reviews.jsonl line 1: signature", HMAC_SIGNER))  # fmt: skip

    result = check(bundle, trust, claims)

    assert result.state is SignatureState.STRIPPED
    assert [p.line for p in result.problems] == [
        f"{ENVELOPE}: missing, although receipt.json: signature records a signature by "
        f"{key.fingerprint}"
    ]
    assert check(bundle, trust, claims[1:]).state is SignatureState.UNCHECKED  # an old bundle


def test_a_record_signature_verifies_with_the_public_key_and_an_hmac_one_with_the_secret(
    operator: tuple[SigningKey, Trust], tmp_path: Path
) -> None:
    key, trust = operator
    digest = "ab" * 32
    signature = sign_record(key, digest)
    assert claim_of("receipt.json", signature) == SignerClaim("receipt.json", key.fingerprint)

    assert check_record(digest, signature, trust, "receipt.json").verified
    edited = check_record("cd" * 32, signature, trust, "receipt.json")
    assert edited.state is SignatureState.INVALID
    assert edited.problems[0].line.startswith("receipt.json: no trusted key verifies")
    other = read_trust([init_key_pair(tmp_path / "other").public])
    assert check_record(digest, signature, other, "r").state is SignatureState.INVALID
    assert check_record(digest, signature, Trust(), "r").state is SignatureState.UNCHECKED
    assert check_record(digest, None, trust, "r").state is SignatureState.UNSIGNED

    hmac = sign(SECRET, digest)
    assert check_record(digest, hmac, Trust(), "r").state is SignatureState.UNCHECKED
    assert check_record(digest, hmac, Trust(hmac_key=SECRET), "r").verified
    assert check_record(digest, hmac, Trust(hmac_key=b"x"), "r").state is SignatureState.INVALID


def test_a_signer_trusts_its_own_key(operator: tuple[SigningKey, Trust]) -> None:
    key, trust = operator
    assert Trust().with_key(key).fingerprints == {key.fingerprint}
    assert trust.with_key(key) is trust


def test_an_envelope_with_no_signatures_is_invalid_even_without_trust(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, _ = operator
    seal(bundle, key)
    envelope = json.loads((bundle / ENVELOPE).read_text())
    envelope["signatures"] = []
    (bundle / ENVELOPE).write_text(json.dumps(envelope))
    result = check(bundle, Trust())
    assert result.state is SignatureState.INVALID
    assert "its list of signatures is empty" in result.sentence
    assert "claims to be signed" not in result.sentence


def test_an_empty_folder_is_sealed_by_name_and_one_added_after_is_found(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, trust = operator
    (bundle / "tickets").mkdir()
    seal(bundle, key)
    assert check(bundle, trust).verified
    (bundle / "APPROVED-promote-by-CTO").mkdir()
    result = check(bundle, trust)
    assert [p.line for p in result.problems] == [
        "APPROVED-promote-by-CTO/: present but not in the signed statement"
    ]
    (bundle / "APPROVED-promote-by-CTO").rmdir()
    (bundle / "tickets").rmdir()
    assert [p.line for p in check(bundle, trust).problems] == [
        "tickets/: in the signed statement but missing"
    ]


def test_a_run_lock_holds_a_pid_or_nothing_and_anything_else_is_found(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, trust = operator
    (bundle / LOCK).write_text("4242\n")
    seal(bundle, key)
    assert check(bundle, trust).verified
    (bundle / LOCK).write_text("")
    assert check(bundle, trust).verified
    (bundle / LOCK).write_text("APPROVED by the CTO\n")
    assert [p.line for p in check(bundle, trust).problems] == [
        f"{LOCK}: present but not in the signed statement"
    ]


def test_a_second_seal_beside_the_envelope_is_found(
    bundle: Path, operator: tuple[SigningKey, Trust]
) -> None:
    key, trust = operator
    seal(bundle, key)
    (bundle / HMAC_FILE).write_text(sign(SECRET, file_sha256(bundle / SUMS)) + "\n")
    assert [p.line for p in check(bundle, trust).problems] == [
        f"{HMAC_FILE}: present but not in the signed statement"
    ]
