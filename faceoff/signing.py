"""Signatures the operator can check: HMAC-SHA256 under a key only the operator holds.

The key comes from the environment variable ``FACEOFF_SIGNING_KEY`` (its UTF-8
bytes) and is never written anywhere; what is written is the signature of a
record's own content hash. A self-hash alone proves a record is unchanged only
against someone who cannot recompute it; the signature holds against anyone
without the key. Whoever can check it can also sign, so an auditor must hold the
operator's secret: the public-key seal (``faceoff.seal_envelope``, Ed25519 keys in
``faceoff.keys``) needs none, and bundles signed this way stay readable beside it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

SIGNING_KEY_ENV = "FACEOFF_SIGNING_KEY"


def signing_key(environ: Mapping[str, str]) -> bytes | None:
    """The operator's key, or None when the variable is unset or empty."""
    value = environ.get(SIGNING_KEY_ENV, "")
    return value.encode("utf-8") if value else None


def sign(key: bytes, digest: str) -> str:
    """The hex HMAC-SHA256 of a record's content hash."""
    return hmac.new(key, digest.encode("ascii"), hashlib.sha256).hexdigest()


def signature_problem(key: bytes, digest: str, signature: str | None) -> str | None:
    """Why ``signature`` does not prove ``digest`` under ``key``; None when it does."""
    if signature is None:
        return f"not signed, although {SIGNING_KEY_ENV} is given"
    if not hmac.compare_digest(sign(key, digest), signature):
        return f"signature does not match under the given {SIGNING_KEY_ENV} (wrong key, or forged)"
    return None
