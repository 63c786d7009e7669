"""What a verifier trusts, and what a signature check found.

A ``Trust`` is a set of Ed25519 public keys by fingerprint (``--trust`` files); it holds no
secret, so an auditor verifies without being able to sign. The HMAC key of older bundles
(``FACEOFF_SIGNING_KEY``) can ride along: an HMAC signature is verifiable only with it.

Every check, of a bundle's seal or of one record's signature, answers a ``SignatureCheck``:
one ``SignatureState`` and, when it is not verified, the problems as (file, what) pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.keys import PublicKey, SigningKey, read_public_keys
from faceoff.signing import SIGNING_KEY_ENV

ED25519 = "ed25519-dsse"
HMAC = "hmac-sha256"
HMAC_SIGNER = "the shared HMAC secret"  # how a record names an HMAC signer: it has no fingerprint
SHOWN = 10  # problems named in a refusal


@dataclass(frozen=True)
class Trust:
    """Public keys a verifier accepts signatures from, and the HMAC secret if it has one."""

    keys: tuple[PublicKey, ...] = ()
    hmac_key: bytes | None = field(default=None, repr=False)

    @property
    def fingerprints(self) -> frozenset[str]:
        return frozenset(k.fingerprint for k in self.keys)

    def with_key(self, key: PublicKey | SigningKey | None) -> Trust:
        """This trust and ``key`` (a signer trusts its own public key)."""
        public = key.public if isinstance(key, SigningKey) else key
        if public is None or public.fingerprint in self.fingerprints:
            return self
        return Trust((*self.keys, public), self.hmac_key)


def read_trust(paths: Iterable[Path], hmac_key: bytes | None = None) -> Trust:
    """The keys of every ``--trust`` file (public keys or trust files), deduplicated."""
    found: dict[str, PublicKey] = {}
    for path in paths:
        found |= {k.fingerprint: k for k in read_public_keys(path)}
    return Trust(tuple(found.values()), hmac_key)


class SignatureState(StrEnum):
    VERIFIED = "verified"  # a trusted key (or the given HMAC secret) proves it, files included
    UNCHECKED = "unchecked"  # signed, but nothing given to check it with
    INVALID = "invalid"  # a signature or a signed file does not verify
    UNSIGNED = "unsigned"  # no signature, and nothing says there was one
    STRIPPED = "stripped"  # no signature, but the bundle records that it was signed


@dataclass(frozen=True)
class Problem:
    file: str  # relative to the bundle
    what: str

    @property
    def line(self) -> str:
        return f"{self.file}: {self.what}"


@dataclass(frozen=True)
class SignatureCheck:
    state: SignatureState
    scheme: str | None = None  # ED25519, HMAC, or None when unsigned
    signer: str | None = None  # the verified or claimed fingerprint (HMAC_SIGNER for HMAC)
    problems: tuple[Problem, ...] = ()

    @property
    def verified(self) -> bool:
        return self.state is SignatureState.VERIFIED

    @property
    def sentence(self) -> str:
        """One line for a checklist or an error."""
        if self.state is SignatureState.VERIFIED:
            return f"signed by {self.signer} ({self.scheme}), verified"
        if self.state is SignatureState.UNCHECKED and self.scheme == HMAC:
            return f"HMAC-signed (shared secret): verifiable only with {SIGNING_KEY_ENV}"
        if self.state is SignatureState.UNCHECKED:
            return f"claims to be signed by {self.signer} (not checked: pass --trust)"
        if self.state is SignatureState.UNSIGNED:
            return "not signed"
        shown = "; ".join(p.line for p in self.problems[:SHOWN])
        more = f"; and {len(self.problems) - SHOWN} more" if len(self.problems) > SHOWN else ""
        return f"{self.state.value}: {shown}{more}"


def refuse_unless_verified(check: SignatureCheck, where: Path, *, doing: str) -> None:
    """Raise, naming the files, unless ``check`` is verified: what a command that would sign
    again calls first, so nothing that does not verify is ever re-signed."""
    if check.verified:
        return
    raise FaceoffError(
        f"the bundle's signature does not verify, so it is not {doing}: {check.sentence}",
        where=str(where),
        fix="audit it with --trust naming the signer's public key (faceoff audit lists every "
        "finding); restore the bundle from a signed copy; nothing was written",
    )
