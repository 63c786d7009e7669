"""DSSE envelopes (Dead Simple Signing Envelope, v1), signed with Ed25519.

An envelope is ``{"payload": base64, "payloadType": …, "signatures": [{"keyid", "sig"}]}``;
each signature is over the pre-authentication encoding of the type and the payload bytes,

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

with LEN the byte length in ASCII decimal, so that neither can be swapped for another that
serializes alike. ``keyid`` is a hint (here the signer's fingerprint), not trusted: a
signature counts only when a trusted key verifies it. The envelope is DSSE's own format,
versioned by its spec (the ``DSSEv1`` of the PAE), so it carries no ``schema_version``;
in-toto and securesystemslib read it as written.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from pydantic import ConfigDict, Field

from faceoff.artifact import Spec
from faceoff.keys import PublicKey, SigningKey


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding: exactly the bytes that are signed."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


class EnvelopeSignature(Spec):
    keyid: str = Field(description="The signer's fingerprint (a hint; not trusted).")
    sig: str = Field(description="Base64 Ed25519 signature of PAE(payloadType, payload).")


class Envelope(Spec):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    payload: str = Field(description="The signed bytes, base64.")
    payload_type: str = Field(
        alias="payloadType", description="What the payload is (a media type)."
    )
    signatures: list[EnvelopeSignature] = Field(description="One or more signatures.")

    def payload_bytes(self) -> bytes:
        """The payload decoded (standard or URL-safe base64, as DSSE allows)."""
        return _b64decode(self.payload)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"


def sign_payload(key: SigningKey, payload_type: str, payload: bytes) -> EnvelopeSignature:
    """A DSSE signature of ``payload``: what an envelope carries, or a record beside its hash."""
    signature = key.sign(pae(payload_type, payload))
    return EnvelopeSignature(keyid=key.fingerprint, sig=_b64encode(signature))


def sign_envelope(key: SigningKey, payload_type: str, payload: bytes) -> Envelope:
    return Envelope(
        payload=_b64encode(payload),
        payload_type=payload_type,
        signatures=[sign_payload(key, payload_type, payload)],
    )


def verifying_keys(envelope: Envelope, trusted: list[PublicKey]) -> list[PublicKey]:
    """The trusted keys that a signature of ``envelope`` verifies under, keyid hint or not."""
    try:
        payload = envelope.payload_bytes()
    except ValueError:
        return []
    return keys_verifying(envelope.signatures, envelope.payload_type, payload, trusted)


def keys_verifying(
    signatures: list[EnvelopeSignature], payload_type: str, payload: bytes, trusted: list[PublicKey]
) -> list[PublicKey]:
    """The trusted keys under which one of ``signatures`` verifies ``payload``."""
    message = pae(payload_type, payload)
    return [key for key in trusted if any(_verifies(key, s, message) for s in signatures)]


def _verifies(key: PublicKey, signature: EnvelopeSignature, message: bytes) -> bool:
    try:
        key.key.verify(_b64decode(signature.sig), message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(text: str) -> bytes:
    """Standard or URL-safe base64, padded or not; ValueError when it is neither."""
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64: {exc}") from exc
