"""A record's own signature (a receipt, a review): a DSSE signature of its content hash.

A record carries the sha256 of its canonical content. Signed with the operator's Ed25519
key, it carries ``{"keyid": <fingerprint>, "sig": <base64>}``, the signature of DSSE's
``PAE(RECORD_PAYLOAD_TYPE, <the 64 hex digits of that sha256>)``: ``openssl pkeyutl -verify``
over those bytes checks it without faceoff. A record signed before carries the hex HMAC of
the same hash (a string) instead, verifiable only with the shared secret; it stays readable.
"""

from __future__ import annotations

from faceoff.dsse import EnvelopeSignature, keys_verifying, sign_payload
from faceoff.keys import SigningKey
from faceoff.seal_envelope import SignerClaim
from faceoff.signing import signature_problem
from faceoff.trust import ED25519, HMAC, HMAC_SIGNER, Problem, SignatureCheck, Trust
from faceoff.trust import SignatureState as State

RECORD_PAYLOAD_TYPE = "application/vnd.faceoff.record-sha256"

RecordSignature = EnvelopeSignature  # the same {keyid, sig}, detached from an envelope


def sign_record(key: SigningKey, digest: str) -> RecordSignature:
    """The Ed25519 signature of a record's content hash."""
    return sign_payload(key, RECORD_PAYLOAD_TYPE, digest.encode("ascii"))


def check_record(
    digest: str, signature: RecordSignature | str | None, trust: Trust, where: str
) -> SignatureCheck:
    """What ``signature`` proves of a record whose content hashes to ``digest``.

    ``where``: the file (and line or field) a problem names."""
    if signature is None:
        return SignatureCheck(State.UNSIGNED)
    if isinstance(signature, str):
        return _check_hmac(digest, signature, trust.hmac_key, where)
    if not trust.keys:
        return SignatureCheck(State.UNCHECKED, ED25519, signature.keyid)
    keys = keys_verifying(
        [signature], RECORD_PAYLOAD_TYPE, digest.encode("ascii"), list(trust.keys)
    )
    if not keys:
        problem = Problem(
            where, f"no trusted key verifies its signature (it names {signature.keyid})"
        )
        return SignatureCheck(State.INVALID, ED25519, signature.keyid, (problem,))
    return SignatureCheck(State.VERIFIED, ED25519, keys[0].fingerprint)


def claim_of(source: str, signature: RecordSignature | str | None) -> SignerClaim | None:
    """What a signed record says of the bundle it is in: that it was signed, and by whom
    (``check_seal`` calls a bundle without a seal but with such a record stripped)."""
    if signature is None:
        return None
    return SignerClaim(source, HMAC_SIGNER if isinstance(signature, str) else signature.keyid)


def _check_hmac(digest: str, signature: str, key: bytes | None, where: str) -> SignatureCheck:
    if key is None:
        return SignatureCheck(State.UNCHECKED, HMAC, HMAC_SIGNER)
    problem = signature_problem(key, digest, signature)
    if problem is not None:
        return SignatureCheck(State.INVALID, HMAC, HMAC_SIGNER, (Problem(where, problem),))
    return SignatureCheck(State.VERIFIED, HMAC, HMAC_SIGNER)
